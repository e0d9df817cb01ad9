package partitions

import (
	"context"
	"fmt"
	"path"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Instance is a partition that exists on a chip. It is what the plugin
// records in its checkpoint (before it answers the kubelet) and what it
// needs to destroy the partition again.
type Instance struct {
	// Type is TypeVNPU or TypeSMLU.
	Type string `json:"type"`
	// Chip is the index of the parent chip (the N of /dev/davinciN,
	// /dev/cambricon_devN).
	Chip int `json:"chip"`
	// Template is the vendor's template or profile name.
	Template string `json:"template"`
	// ID is the vNPU id (npu-smi -v) or the sMLU instance id (the K of
	// cap_devN_miK).
	ID int `json:"id"`
	// DeviceNode is the partition's own device file on the host:
	// /dev/vdavinci<id> or /dev/cambricon-caps/cap_dev<N>_mi<K>.
	DeviceNode string `json:"deviceNode"`
	// UUID is the instance's UUID where the tool reports one (sMLU).
	UUID string `json:"uuid,omitempty"`
}

// String names an instance for logs and errors.
func (i Instance) String() string {
	return fmt.Sprintf("%s %d (%s) on chip %d", i.Type, i.ID, i.Template, i.Chip)
}

// Tool makes, lists and removes the partitions of a vendor's chips with
// the vendor's tool, through a discovery.CommandRunner (the real tool,
// recorded output in tests, or partitionsim.Fake in simulated mode).
type Tool interface {
	// Create makes a partition of template t on chip c.
	Create(ctx context.Context, c inventory.Chip, t Template) (Instance, error)
	// Destroy removes a partition; one that no longer exists is not an
	// error, so Unprepare can be retried.
	Destroy(ctx context.Context, c inventory.Chip, inst Instance) error
	// List returns the partitions that exist on chip c, whoever made them.
	List(ctx context.Context, c inventory.Chip) ([]Instance, error)
}

// NewTool returns the partition tool of a vendor, running the vendor's
// tool through runner.
func NewTool(v inventory.Vendor, runner discovery.CommandRunner) (Tool, error) {
	pv, ok := vendorOf(v)
	if !ok {
		return nil, fmt.Errorf("no partition tool for vendor %q", v)
	}
	return pv.NewPartitionTool(runner), nil
}

// LibraryVendor is a Vendor that can make its partitions through its
// management library (Ascend DCMI) instead of its tool.
type LibraryVendor interface {
	Vendor
	// NewLibraryPartitionTool returns the partition tool using the
	// library at library ("" the vendor's default paths under root,
	// vendors.LibraryNone the tool only), with runner for the tool where
	// the library is missing.
	NewLibraryPartitionTool(runner discovery.CommandRunner, root, library string) Tool
}

// NewNodeTool returns the partition tool of a vendor on a real node: the
// vendor's management library where it has one (LibraryVendor), else its
// tool through runner.
func NewNodeTool(v inventory.Vendor, runner discovery.CommandRunner, root, library string) (Tool, error) {
	pv, ok := vendorOf(v)
	if !ok {
		return nil, fmt.Errorf("no partition tool for vendor %q", v)
	}
	if lv, ok := pv.(LibraryVendor); ok {
		return lv.NewLibraryPartitionTool(runner, root, library), nil
	}
	return pv.NewPartitionTool(runner), nil
}

// DeviceNode is one device file a container gets: Path inside the
// container, HostPath on the node (both absolute, as seen from /).
type DeviceNode struct {
	Path     string
	HostPath string
}

// Edits are what a container needs to use a partition.
type Edits struct {
	// DeviceNodes replace the parent chip's own nodes.
	DeviceNodes []DeviceNode
	// VisibleID is the id the vendor's visible-devices variable lists for
	// the partition (ASCEND_VISIBLE_DEVICES, CAMBRICON_VISIBLE_DEVICES).
	VisibleID int
	// Virtual says the id is a virtual device (an Ascend vNPU): a claim of
	// only such partitions gets the vendor's vendors.CDIEdits.VirtualEnv.
	Virtual bool
}

// EditsOf returns the container edits of a partition of chip c: what
// the vendor's device plugin gives a container of such a partition (see
// the vendors' PartitionEdits).
func EditsOf(c inventory.Chip, inst Instance) (Edits, error) {
	if inst.DeviceNode == "" || !path.IsAbs(inst.DeviceNode) {
		return Edits{}, fmt.Errorf("%s has no absolute device node (%q)", inst, inst.DeviceNode)
	}
	v, ok := vendorOf(c.Vendor)
	if !ok {
		return Edits{}, fmt.Errorf("%s: chip vendor %q has no partitions", inst, c.Vendor)
	}
	return v.PartitionEdits(c, inst)
}

// Find returns the instance with id among insts: the vendor tools confirm
// a create and skip destroying what is already gone by listing the chip.
func Find(insts []Instance, id int) (Instance, bool) {
	for _, e := range insts {
		if e.ID == id {
			return e, true
		}
	}
	return Instance{}, false
}

// Created names a tool's partition kind in ConfirmCreated's errors: the
// tool (npu-smi), the partition kind (vNPU) and what the vendor calls a
// template (template, profile).
type Created struct {
	Tool, Kind, Template string
}

// ConfirmCreated lists the chip's partitions after the tool reported
// partition id created, and returns it if it exists with the template
// asked for.
func ConfirmCreated(ctx context.Context, tool Tool, c inventory.Chip, id int, template string, w Created) (Instance, error) {
	after, err := tool.List(ctx, c)
	if err != nil {
		return Instance{}, fmt.Errorf("checking the new %s %d on chip %d: %w", w.Kind, id, c.Index, err)
	}
	e, ok := Find(after, id)
	if !ok {
		return Instance{}, fmt.Errorf("%s reported %s %d on chip %d created, but does not list it", w.Tool, w.Kind, id, c.Index)
	}
	if e.Template != template {
		return Instance{}, fmt.Errorf("created %s %d on chip %d with %s %s, but %s lists it as %s", w.Kind, id, c.Index, w.Template, template, w.Tool, e.Template)
	}
	return e, nil
}

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
// recorded output in tests, or the Fake in simulated mode).
type Tool interface {
	// Create makes a partition of template t on chip c.
	Create(ctx context.Context, c inventory.Chip, t Template) (Instance, error)
	// Destroy removes a partition; one that no longer exists is not an
	// error, so Unprepare can be retried.
	Destroy(ctx context.Context, c inventory.Chip, inst Instance) error
	// List returns the partitions that exist on chip c, whoever made them.
	List(ctx context.Context, c inventory.Chip) ([]Instance, error)
}

// NewTool returns the partition tool of a vendor.
func NewTool(v inventory.Vendor, runner discovery.CommandRunner) (Tool, error) {
	switch v {
	case inventory.VendorHuawei:
		return &AscendTool{Runner: runner}, nil
	case inventory.VendorCambricon:
		return &CambriconTool{Runner: runner}, nil
	}
	return nil, fmt.Errorf("no partition tool for vendor %q", v)
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
	// Virtual says the id is a virtual device (Ascend: ASCEND_RUNTIME_OPTIONS=VIRTUAL).
	Virtual bool
}

// EditsOf returns the container edits of a partition of chip c.
//
//   - vNPU: only the virtual device, host /dev/vdavinci<id> at
//     /dev/davinci<id> in the container, and ASCEND_VISIBLE_DEVICES=<id>
//     with ASCEND_RUNTIME_OPTIONS=VIRTUAL: what Huawei's device plugin
//     gives a vNPU container (Ascend/ascend-device-plugin
//     pkg/server/plugin.go getDevPath: container /dev/davinci<id>, host
//     /dev/vdavinci<id> when ascendRuntimeOptions is "VIRTUAL";
//     pkg/common/common.go SetAscendRuntimeEnv). The parent's
//     /dev/davinciN is not given.
//   - sMLU: the chip's own nodes (/dev/cambricon_devN,
//     /dev/cambricon_ipcmN, …) plus the instance's capability node, at the
//     same paths, and CAMBRICON_VISIBLE_DEVICES=N: what Cambricon's device
//     plugin gives a MIM or dynamic-sMLU container
//     (Cambricon/cambricon-k8s-device-plugin device-plugin/pkg/mlu/server.go
//     PrepareResponse: "/dev/cambricon_dev0,/dev/cambricon_ipcm0,
//     /dev/cambricon-caps/cap_dev0_mi1").
func EditsOf(c inventory.Chip, inst Instance) (Edits, error) {
	if inst.DeviceNode == "" || !path.IsAbs(inst.DeviceNode) {
		return Edits{}, fmt.Errorf("%s has no absolute device node (%q)", inst, inst.DeviceNode)
	}
	switch inst.Type {
	case TypeVNPU:
		return Edits{
			DeviceNodes: []DeviceNode{{Path: fmt.Sprintf("/dev/davinci%d", inst.ID), HostPath: inst.DeviceNode}},
			VisibleID:   inst.ID,
			Virtual:     true,
		}, nil
	case TypeSMLU:
		var nodes []DeviceNode
		for _, n := range c.DeviceNodes {
			nodes = append(nodes, DeviceNode{Path: n, HostPath: n})
		}
		nodes = append(nodes, DeviceNode{Path: inst.DeviceNode, HostPath: inst.DeviceNode})
		return Edits{DeviceNodes: nodes, VisibleID: c.Index}, nil
	}
	return Edits{}, fmt.Errorf("%s: unknown partition type", inst)
}

// find returns the instance with id among insts: the vendor tools confirm
// a create and skip destroying what is already gone by listing the chip.
func find(insts []Instance, id int) (Instance, bool) {
	for _, e := range insts {
		if e.ID == id {
			return e, true
		}
	}
	return Instance{}, false
}

// created names a tool's partition kind in confirmCreated's errors.
type created struct {
	tool, kind, template string
}

// confirmCreated lists the chip's partitions after the tool reported
// partition id created, and returns it if it exists with the template
// asked for.
func confirmCreated(ctx context.Context, tool Tool, c inventory.Chip, id int, template string, w created) (Instance, error) {
	after, err := tool.List(ctx, c)
	if err != nil {
		return Instance{}, fmt.Errorf("checking the new %s %d on chip %d: %w", w.kind, id, c.Index, err)
	}
	e, ok := find(after, id)
	if !ok {
		return Instance{}, fmt.Errorf("%s reported %s %d on chip %d created, but does not list it", w.tool, w.kind, id, c.Index)
	}
	if e.Template != template {
		return Instance{}, fmt.Errorf("created %s %d on chip %d with %s %s, but %s lists it as %s", w.kind, id, c.Index, w.template, template, w.tool, e.Template)
	}
	return e, nil
}

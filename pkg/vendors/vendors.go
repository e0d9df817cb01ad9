// Copyright The accel-dra Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package vendors

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Vendor is everything accel-dra knows about one vendor's chips. The
// generic packages reach a vendor only through it (see the package doc).
type Vendor interface {
	// Names are the names users and the node see of the vendor.
	Names() Names
	// NewBackend returns the discovery backend reading the vendor's device
	// files, sysfs, management library and tool output as cfg says. On a
	// node without the vendor's device files it finds nothing and runs no
	// tool.
	NewBackend(cfg BackendConfig) discovery.Backend
	// CDI is what the vendor's container runtime or device plugin puts
	// into a container, which the CDI specs reproduce.
	CDI() CDIEdits
	// ProfileNode is how a node built from a hardware profile shows the
	// vendor's chips.
	ProfileNode() ProfileNode
	// Partitions is the vendor's partition knowledge, nil when its chips
	// have no partitions.
	Partitions() Partitions
	// Models lists the chip models the vendor knows without a node,
	// sorted by name, each with its partition shapes (catalogue.go).
	Models() []Model
	// NewTelemetry returns the reader of the chips' utilization, memory,
	// temperature and power through the vendor's management library or
	// tool as cfg says (telemetry.go); nil when the vendor has none.
	NewTelemetry(cfg BackendConfig) Telemetry
	// HostMounts are the node's paths the vendor's agent needs mounted on
	// real hardware besides /dev, /sys, its tool and the admin's driver
	// directories (hostmounts.go); none for most vendors.
	HostMounts() []HostMount
}

// BackendConfig says where a vendor's discovery backend reads the node.
type BackendConfig struct {
	// Root is the host root directory (real or a fixture tree): device
	// files, sysfs, driver files.
	Root string
	// Runner runs the vendor's tool (the real one, or recorded output).
	Runner discovery.CommandRunner
	// Library is the path of the vendor's management library (libdcmi.so,
	// libcndev.so), loaded at run time; empty means the vendor's default
	// paths, LibraryNone means the tool only.
	Library string
	// LibraryCallTimeout bounds each call into the library (zero:
	// DefaultLibraryCallTimeout). A library is loaded once per process:
	// the first backend to load it sets its deadline.
	LibraryCallTimeout time.Duration
	// Opened, when set, is the vendor's library as main holds it: the
	// backend, partition tool and telemetry load and use the library
	// through it, so they share one load and its hung calls show on the
	// liveness probe. Library still says where to load it from.
	Opened *Library
	// PartitionMode is the partition mode the cluster admin declares for
	// the node (PartitionModeAuto, PartitionModeOn, PartitionModeOff).
	// Inside a container the vendor's mode query may be refused, so a
	// declared mode wins and the query is only a cross-check where it
	// answers.
	PartitionMode string
}

// The partition modes an admin can declare for a node (BackendConfig.PartitionMode).
const (
	// PartitionModeAuto (or empty) reads the mode from the node.
	PartitionModeAuto = "auto"
	// PartitionModeOn declares the node in the vendor's partition mode
	// (Ascend vNPU docker mode, Cambricon sMLU mode).
	PartitionModeOn = "on"
	// PartitionModeOff never offers the node's chips as partitions.
	PartitionModeOff = "off"
)

// PartitionModes are the values BackendConfig.PartitionMode takes (empty
// is PartitionModeAuto).
var PartitionModes = []string{PartitionModeAuto, PartitionModeOn, PartitionModeOff}

// CheckPartitionMode checks a declared partition mode: the agent checks
// its flag with it, a backend the mode it is given.
func CheckPartitionMode(mode string) error {
	if mode == "" || slices.Contains(PartitionModes, mode) {
		return nil
	}
	return fmt.Errorf("partition mode %q is not one of %s", mode, strings.Join(PartitionModes, ", "))
}

// LibraryNone as BackendConfig.Library makes a backend use the vendor's
// tool only, never its management library.
const LibraryNone = "none"

// Names are one vendor's names, each the single source of that name.
type Names struct {
	// Vendor is the inventory key and the value of the shared
	// accel-dra.dev/vendor attribute (and of a profile's chips[].vendor):
	// "huawei".
	Vendor inventory.Vendor
	// Family is the value of the shared accel-dra.dev/family attribute:
	// "ascend".
	Family inventory.Family
	// Driver is the DRA driver name serving the vendor's chips:
	// "ascend.accel-dra.dev".
	Driver string
	// Option selects the vendor in --vendors: "ascend".
	Option string
	// CDIKind is the vendor/class of the vendor's CDI specs:
	// "accel-dra.dev/ascend".
	CDIKind string
	// DevicePrefix starts the DRA device names of the vendor's chips:
	// "npu" (npu-0, npu-1-vir04-0).
	DevicePrefix string
	// Tool is the vendor's command line tool discovery and partitions run
	// ("npu-smi"); discovery.ExecRunner maps it to a configured path. It
	// is also the name of the flag of the node agent that sets that path
	// (--npu-smi); ToolHelp is its usage text.
	Tool, ToolHelp string
	// ConfigKind is the kind of the driver's opaque device configuration
	// (a v1alpha1.DeviceConfig: "AscendConfig"), or ConfigKindNone for a
	// driver that takes none. The config decoder registers it
	// (Registry.ConfigDecoder); the API package names no kind itself.
	ConfigKind string
	// LibraryFlag is the flag of the node agent and `accel-dra discover`
	// that names the vendor's management library ("dcmi-library"), empty
	// for a vendor without one; LibraryHelp is its usage text.
	LibraryFlag, LibraryHelp string
}

// CDIEdits are what a vendor's own container runtime or device plugin
// puts into a container.
type CDIEdits struct {
	// VisibleEnv lists the claim's chip indices (ASCEND_VISIBLE_DEVICES).
	VisibleEnv string
	// Permissions are the cgroup device permissions of the device nodes.
	Permissions string
	// Mounts are host driver files, bind-mounted read-only at the same
	// path where they exist on the host.
	Mounts []string
	// MountedWith maps a mount the agent does not see (its DaemonSet does
	// not mount that host path, e.g. a file in the host's /etc) to a file it
	// sees that the same driver install writes: the mount is made where
	// that file exists.
	MountedWith map[string]string
	// VirtualEnv is set claim-wide in a claim whose devices are all
	// virtual partitions (cdi.Claim.Virtual).
	VirtualEnv map[string]string
	// Env is set in every claim's containers, as the vendor's runtime
	// sets it; a claim's own variables win. It replaces an image's value,
	// so library paths go in LibraryDirs instead.
	Env map[string]string
	// ChipEnv, when set, are the variables the vendor's device plugin sets
	// in a container of chip c (an Ascend 950's HCCL_TOPO_FILE_PATH),
	// claim-wide like Env; a claim's own variables win.
	ChipEnv func(c inventory.Chip) map[string]string
	// LibraryDirs are the directories (inside Mounts) of the driver's
	// user-space libraries. Where one exists, the claim's spec gets a
	// createContainer hook that adds them to the container's ld.so cache
	// (pkg/cdi ldcache.go), which leaves the image's LD_LIBRARY_PATH alone.
	LibraryDirs []string
	// Runtime, when set, is the vendor's container runtime, which acts on
	// VisibleEnv where it is installed.
	Runtime *Runtime
}

// Runtime is a vendor container runtime that injects devices by itself
// when a container carries the vendor's visible-devices variable.
type Runtime struct {
	// Name is the runtime's name, for logs: "ascend-docker-runtime".
	Name string
	// Markers are files whose presence on the node means the runtime is
	// installed, in the order they are checked.
	Markers []Marker
	// Neutral is the value of CDIEdits.VisibleEnv for which the runtime
	// injects nothing. Specs that do not list the chips set it instead of
	// leaving the variable out: a pod can set the variable itself, and the
	// runtime would inject the chips it names, claimed or not. For
	// ascend-docker-runtime it is the empty string.
	Neutral string
}

// Marker is a file that shows a runtime is installed.
type Marker struct {
	// Path is absolute, as seen on the node.
	Path string
	// Contains, if set, must occur in the file; otherwise the path must be
	// a regular file.
	Contains string
}

// File is one regular file or directory of a fake driver installation.
type File struct {
	// Path is absolute, as seen on the node.
	Path string
	// Mode has fs.ModeDir for a directory.
	Mode    fs.FileMode
	Content string
}

// Registry is the set of vendors a binary or test serves. main builds it
// (pkg/vendors/all) and passes it to the code that handles several vendors
// at once; code for one vendor gets that Vendor. A Registry is immutable.
type Registry struct {
	// vendors are ordered by their Option (the order discovery runs their
	// backends in).
	vendors []Vendor
}

// NewRegistry returns the registry of vs. It fails when a name of a vendor
// is empty or another vendor has it already.
func NewRegistry(vs ...Vendor) (Registry, error) {
	var r Registry
	for _, v := range vs {
		n := v.Names()
		if err := n.validate(); err != nil {
			return Registry{}, fmt.Errorf("registering vendor %q: %w", n.Vendor, err)
		}
		for _, o := range r.vendors {
			if err := n.clash(o.Names()); err != nil {
				return Registry{}, fmt.Errorf("registering vendor %q: %w", n.Vendor, err)
			}
		}
		r.vendors = append(r.vendors, v)
	}
	sort.Slice(r.vendors, func(i, j int) bool { return r.vendors[i].Names().Option < r.vendors[j].Names().Option })
	return r, nil
}

// MustRegistry is NewRegistry for a fixed list of vendors, as in main and
// tests: a clash there is a programming error, so it panics.
func MustRegistry(vs ...Vendor) Registry {
	r, err := NewRegistry(vs...)
	if err != nil {
		panic(err)
	}
	return r
}

// With returns a registry of r's vendors and vs (tests add a vendor of
// their own so).
func (r Registry) With(vs ...Vendor) (Registry, error) {
	return NewRegistry(append(r.All(), vs...)...)
}

func (n Names) validate() error {
	for field, val := range map[string]string{"vendor": string(n.Vendor), "family": string(n.Family), "driver": n.Driver,
		"option": n.Option, "CDI kind": n.CDIKind, "device prefix": n.DevicePrefix, "tool": n.Tool} {
		if val == "" {
			return fmt.Errorf("%s name is empty", field)
		}
	}
	// Said out loud, so a vendor without a config is a decision, not an
	// omission.
	if n.ConfigKind == "" {
		return fmt.Errorf("config kind name is empty: name the kind of the driver's opaque config, or %q (ConfigKindNone) if it takes none", ConfigKindNone)
	}
	return nil
}

// clash reports a name n shares with o.
func (n Names) clash(o Names) error {
	switch {
	case n.Vendor == o.Vendor:
		return fmt.Errorf("vendor %q is registered already", n.Vendor)
	case n.Driver == o.Driver:
		return fmt.Errorf("driver %q is vendor %q's", n.Driver, o.Vendor)
	case n.Option == o.Option:
		return fmt.Errorf("option %q is vendor %q's", n.Option, o.Vendor)
	case n.CDIKind == o.CDIKind:
		return fmt.Errorf("CDI kind %q is vendor %q's", n.CDIKind, o.Vendor)
	case n.DevicePrefix == o.DevicePrefix:
		return fmt.Errorf("device prefix %q is vendor %q's", n.DevicePrefix, o.Vendor)
	case n.Family == o.Family:
		return fmt.Errorf("family %q is vendor %q's", n.Family, o.Vendor)
	case n.Tool == o.Tool:
		return fmt.Errorf("tool %q is vendor %q's", n.Tool, o.Vendor)
	case n.ConfigKind == o.ConfigKind && n.ConfigKind != ConfigKindNone:
		return fmt.Errorf("config kind %q is vendor %q's", n.ConfigKind, o.Vendor)
	}
	return nil
}

// All returns the vendors, ordered by their Option (the order discovery
// runs their backends in). The caller may change the slice.
func (r Registry) All() []Vendor { return append([]Vendor(nil), r.vendors...) }

// find returns the first vendor whose names match.
func (r Registry) find(match func(Names) bool) (Vendor, bool) {
	for _, v := range r.vendors {
		if match(v.Names()) {
			return v, true
		}
	}
	return nil, false
}

// Lookup returns the vendor whose inventory value (accel-dra.dev/vendor)
// is v.
func (r Registry) Lookup(v inventory.Vendor) (Vendor, bool) {
	return r.find(func(n Names) bool { return n.Vendor == v })
}

// ByDriver returns the vendor a DRA driver name serves.
func (r Registry) ByDriver(driver string) (Vendor, bool) {
	return r.find(func(n Names) bool { return n.Driver == driver })
}

// ByOption returns the vendor a --vendors value selects.
func (r Registry) ByOption(option string) (Vendor, bool) {
	return r.find(func(n Names) bool { return n.Option == option })
}

// ByCDIKind returns the vendor whose CDI specs have kind.
func (r Registry) ByCDIKind(kind string) (Vendor, bool) {
	return r.find(func(n Names) bool { return n.CDIKind == kind })
}

// ChipDevice is the DRA device name of the vendor's chip with index:
// npu-3.
func (n Names) ChipDevice(index int) string { return fmt.Sprintf("%s-%d", n.DevicePrefix, index) }

// PartitionDevice is the DRA device name of partition slot s of the
// vendor's chip with index, a DNS label: npu-0-vir04-1,
// npu-3-vir05-1c-16g-0, mlu-2-smlu-25p-3.
func (n Names) PartitionDevice(index int, s Slot) string {
	return fmt.Sprintf("%s-%s-%d", n.ChipDevice(index), s.Template.Slug, s.K)
}

// ChipDeviceName is the DRA device name of chip c of a vendor of r
// (Names.ChipDevice); a chip of a vendor not in r still gets a distinct,
// readable name, its vendor value as the prefix.
func (r Registry) ChipDeviceName(c inventory.Chip) string {
	n := r.NamesOf(c.Vendor)
	if n.DevicePrefix == "" {
		n.DevicePrefix = string(c.Vendor)
	}
	return n.ChipDevice(c.Index)
}

// PartitionDeviceName is the DRA device name of partition slot s of chip c
// (Names.PartitionDevice).
func (r Registry) PartitionDeviceName(c inventory.Chip, s Slot) string {
	n := r.NamesOf(c.Vendor)
	if n.DevicePrefix == "" {
		n.DevicePrefix = string(c.Vendor)
	}
	return n.PartitionDevice(c.Index, s)
}

// NamesOf returns the names of vendor v, or zero Names if it is not in
// r.
func (r Registry) NamesOf(v inventory.Vendor) Names {
	if x, ok := r.Lookup(v); ok {
		return x.Names()
	}
	return Names{}
}

// DriverFor returns the DRA driver name serving vendor v's chips, "" for
// an unknown vendor.
func (r Registry) DriverFor(v inventory.Vendor) string { return r.NamesOf(v).Driver }

// VendorFor is the inverse of DriverFor.
func (r Registry) VendorFor(driver string) inventory.Vendor {
	if x, ok := r.ByDriver(driver); ok {
		return x.Names().Vendor
	}
	return ""
}

// Options lists the --vendors values of the vendors, sorted.
func (r Registry) Options() []string {
	var out []string
	for _, v := range r.vendors {
		out = append(out, v.Names().Option)
	}
	sort.Strings(out)
	return out
}

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

// Package inventory holds the vendor-neutral description of the accelerator
// chips found on one node. Discovery backends produce it; the ResourceSlice
// builder, the CLI and the kubelet plugin consume it.
package inventory

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Vendor is the value of the shared accel-dra.dev/vendor attribute. The
// values and everything else about a vendor are the vendor's own package's
// (pkg/vendors/<vendor>, registered with pkg/vendors).
type Vendor string

// Family is the value of the shared accel-dra.dev/family attribute, one
// per vendor (vendors.Names.Family).
type Family string

// LinkType is the value of the shared accel-dra.dev/linkType attribute.
type LinkType string

const (
	LinkHCCS    LinkType = "hccs"
	LinkMLULink LinkType = "mlulink"
	LinkPCIe    LinkType = "pcie"
)

// Chip is one whole accelerator chip, the unit that gets a device node
// (/dev/davinciN, /dev/cambricon_devN) and becomes one DRA device.
type Chip struct {
	Vendor Vendor
	// Model is the marketing model, e.g. Ascend910B3, MLU370-X8.
	Model string
	// Index is the N of the chip's device node.
	Index int
	// UUID is a stable serial number or UUID of the chip.
	UUID string
	// MemoryBytes is the device memory (HBM / DDR) in bytes.
	MemoryBytes int64
	// Cores is the number of AI cores (Ascend) or MLU cores (Cambricon).
	Cores int
	// LinkType and LinkGroup describe the high-speed interconnect. A chip
	// with no such link has LinkType pcie and a group of its own.
	LinkType  LinkType
	LinkGroup string
	// NUMANode is nil when the platform reports no NUMA affinity.
	NUMANode *int
	// PCIBusID is the extended BDF address, e.g. 0000:c1:00.0; empty if unknown.
	PCIBusID string
	// PCIeRoot is the PCIe root complex, e.g. pci0000:00; empty if unknown.
	PCIeRoot string
	// DriverVersion is the semver of the vendor driver.
	DriverVersion string
	// DeviceIP is the address of the chip's own RoCE port (Ascend training
	// chips: set with `hccn_tool -i N -ip -s address A netmask M`), as an
	// interface address in CIDR form, e.g. 192.168.100.101/24; empty if the
	// chip has none or discovery does not know it.
	DeviceIP string
	// SuperPod, SuperDeviceID and ServerIndex place the chip in its super
	// pod (Atlas A3 and later: the super pod id, SDID and server index of
	// DCMI's SPOD_INFO), published as accel-dra.dev/superPod,
	// superDeviceID and serverIndex and written into the claim status for
	// rank tables; "" and nil where the chip has none or it is unknown.
	SuperPod      string
	SuperDeviceID *int64
	ServerIndex   *int64
	// PartitionModeOff says why the vendor's partition mode is off for this
	// chip (Ascend: the node is not in vNPU docker mode; Cambricon: sMLU is
	// not enabled on the chip), as discovery detected it; empty when it is
	// on. A chip whose partition mode is off is published Whole even where
	// the admin asked for Partitioned: its vendor's tool would refuse to
	// make the partitions.
	PartitionModeOff string
	// Sources says which backend read each fact of the chip, by fact
	// ("memory", "cores", "health", "linkGroup", …) → reader ("libdcmi.so
	// dcmi_get_device_info", "npu-smi info -t topo", "sysfs"), for
	// `accel-dra discover`; nil where the backend does not say.
	Sources map[string]string
	Healthy bool
	// HealthReason says, machine-readably, why a chip is not Healthy (the
	// first of HealthReasons); HealthMessage says it for people. Both are
	// empty on a healthy chip.
	HealthReason  string
	HealthMessage string
	// HealthReasons are all the reasons found (Reason* values), each once,
	// in the order found: each becomes a device taint, under the key of
	// its cause (pkg/resourceslices Taints). Reasons returns them.
	HealthReasons []string
	// DeviceNodes are the chip's own device files, absolute paths as seen on
	// the host (e.g. /dev/davinci0, /dev/cambricon_ipcm0).
	DeviceNodes []string
	// Extra holds vendor-specific attributes, published unqualified in the
	// driver's own domain (e.g. chipName, logicId, mluLinkPorts).
	Extra map[string]Value
}

// Reasons a chip is unhealthy. Each is a valid label value, so it can be
// a device taint's value.
const (
	// ReasonHealthWarning is ReasonToolHealth("Warning"): the vendor grades
	// the chip degraded but usable (npu-smi/DCMI health 1, Warning). The
	// only warning-level reason (Warning).
	ReasonHealthWarning = "HealthWarning"
	// ReasonPCIDeviceMissing: the vendor tool lists the chip, but its PCI
	// function is gone from sysfs (fell off the bus, hot-removed).
	ReasonPCIDeviceMissing = "PCIDeviceMissing"
	// ReasonDeviceFileMissing: the vendor tool lists the chip, but its
	// device file (/dev/davinciN, /dev/cambricon_devN) is gone.
	ReasonDeviceFileMissing = "DeviceFileMissing"
	// ReasonDriverNotRunning: cnmon says the MLU driver is not running.
	ReasonDriverNotRunning = "DriverNotRunning"
	// ReasonLibraryError: a call into the vendor's management library (or
	// its tool) failed for this chip alone; the node's other chips publish.
	ReasonLibraryError = "LibraryError"
	// ReasonSuperPodLinkAbnormal: the super pod's fabric reports the chip
	// abnormal (Ascend DCMI's SPOD_NODE_STATUS).
	ReasonSuperPodLinkAbnormal = "SuperPodLinkAbnormal"
	// ReasonSimulated: a simulated profile lists the chip as unhealthy.
	ReasonSimulated = "SimulatedUnhealthy"
)

// ReasonToolHealth is the reason for a vendor tool's health value other
// than OK/Good: "Health" and the value's letters and digits, capitalized
// (npu-smi Alarm → HealthAlarm, UNKNOWN → HealthUnknown).
func ReasonToolHealth(value string) string {
	var b strings.Builder
	b.WriteString("Health")
	first := true
	for _, r := range value {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII {
			continue
		}
		if first {
			first = false
			r = unicode.ToUpper(r)
		} else {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MarkUnhealthy records that the chip is unhealthy for reason. Every
// reason is kept (HealthReasons, each once: a chip can have several causes,
// each its own taint); the first one found stays HealthReason and
// HealthMessage: discovery checks the most basic faults (PCI function,
// device file) before the tool's health fields.
func (c *Chip) MarkUnhealthy(reason, message string) {
	c.Healthy = false
	if c.HealthReason == "" {
		c.HealthReason, c.HealthMessage = reason, message
	}
	if !slices.Contains(c.HealthReasons, reason) {
		c.HealthReasons = append(c.HealthReasons, reason)
	}
}

// Reasons are the reasons the chip is unhealthy: HealthReasons, or
// HealthReason alone where only that was set, or "" for an unhealthy chip
// without a reason; none on a healthy chip.
func (c Chip) Reasons() []string {
	switch {
	case c.Healthy:
		return nil
	case len(c.HealthReasons) > 0:
		return c.HealthReasons
	}
	return []string{c.HealthReason}
}

// Warning says whether reason is a warning-level state: the vendor grades
// the chip degraded but still usable, so it is shown but does not keep
// claims off the chip.
func Warning(reason string) bool { return reason == ReasonHealthWarning }

// Value is a vendor-specific attribute value; exactly one field is set.
type Value struct {
	String *string
	Int    *int64
	Bool   *bool
}

// StringValue, IntValue and BoolValue build a Value.
func StringValue(s string) Value { return Value{String: &s} }
func IntValue(i int64) Value     { return Value{Int: &i} }
func BoolValue(b bool) Value     { return Value{Bool: &b} }

// Inventory is everything discovery found on one node.
type Inventory struct {
	Chips []Chip
	// SharedDeviceNodes are device files every container using a vendor's
	// chips needs (e.g. /dev/davinci_manager, /dev/cambricon_ctl), per vendor.
	SharedDeviceNodes map[Vendor][]string
}

// Merge adds the chips and shared nodes of other to inv.
func (inv *Inventory) Merge(other Inventory) {
	inv.Chips = append(inv.Chips, other.Chips...)
	for v, nodes := range other.SharedDeviceNodes {
		if inv.SharedDeviceNodes == nil {
			inv.SharedDeviceNodes = map[Vendor][]string{}
		}
		inv.SharedDeviceNodes[v] = append(inv.SharedDeviceNodes[v], nodes...)
	}
}

// Vendors returns the vendors that have at least one chip, sorted.
func (inv Inventory) Vendors() []Vendor {
	seen := map[Vendor]bool{}
	var out []Vendor
	for _, c := range inv.Chips {
		if !seen[c.Vendor] {
			seen[c.Vendor] = true
			out = append(out, c.Vendor)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ChipsOf returns the chips of one vendor ordered by index.
func (inv Inventory) ChipsOf(v Vendor) []Chip {
	var out []Chip
	for _, c := range inv.Chips {
		if c.Vendor == v {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Only is the inventory of one vendor: its chips, ordered by index, and
// its shared device nodes.
func (inv Inventory) Only(v Vendor) Inventory {
	return Inventory{Chips: inv.ChipsOf(v), SharedDeviceNodes: map[Vendor][]string{v: inv.SharedDeviceNodes[v]}}
}

// Validate checks the invariants the slice builder relies on: a vendor on
// every chip (whether it is one of the registry's, pkg/source checks),
// unique indices per vendor, and the fields every device must publish.
func (inv Inventory) Validate() error {
	seen := map[Vendor]map[int]bool{}
	for _, c := range inv.Chips {
		if c.Vendor == "" {
			return fmt.Errorf("chip %d: vendor is empty", c.Index)
		}
		if c.Index < 0 {
			return fmt.Errorf("%s chip: negative index %d", c.Vendor, c.Index)
		}
		if seen[c.Vendor] == nil {
			seen[c.Vendor] = map[int]bool{}
		}
		if seen[c.Vendor][c.Index] {
			return fmt.Errorf("%s chip %d: index appears twice", c.Vendor, c.Index)
		}
		seen[c.Vendor][c.Index] = true
		if c.Model == "" {
			return fmt.Errorf("%s chip %d: model is empty", c.Vendor, c.Index)
		}
		if c.LinkGroup == "" || c.LinkType == "" {
			return fmt.Errorf("%s chip %d: link group or link type is empty", c.Vendor, c.Index)
		}
		if c.DeviceIP != "" {
			if _, err := netip.ParsePrefix(c.DeviceIP); err != nil {
				return fmt.Errorf("%s chip %d: device IP %q is not an address with prefix length (e.g. 192.168.100.101/24): %w", c.Vendor, c.Index, c.DeviceIP, err)
			}
		}
	}
	return nil
}

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

// Package resourceslices turns a node's inventory into resource.k8s.io/v1
// devices and ResourceSlices. It is pure and deterministic: the node agent
// publishes its output through the kubeletplugin helper, and the CLI's
// simulate and discover commands show exactly the same objects.
//
// One pool per node and driver, named after the node. Each chip is
// published in its mode (partitions.Mode, from Options.Policy):
//
//   - Partitioned: device npu-N / mlu-N (accel-dra.dev/type "chip") and one
//     device per partition that fits on the empty chip, e.g.
//     npu-N-vir05-1c-16g-K (type "vnpu"), mlu-N-smlu-25p-K (type "smlu"),
//     with the chip's attributes plus parentDevice and partitionTemplate
//     (driver domain) and the partition's memory and cores as capacity.
//     The chip's counter set npu-N (counters cores, memory and, on Ascend,
//     aicpu) is consumed whole by the chip device and in part by each
//     partition device, so the scheduler never gives out a chip together
//     with a partition of it, nor more partitions than fit.
//   - Shared: the chip device with allowMultipleAllocations and request
//     policies on memory and cores (consumable capacity).
//   - Whole: the chip device only, as before partitions.
//
// API limits respected (resource.k8s.io/v1 in Kubernetes 1.37, validated
// in k8s.io/kubernetes pkg/apis/resource/validation): a slice holds either
// devices or sharedCounters, so counter sets go into slices of their own,
// at most ResourceSliceMaxCounterSets (8) per slice, first in the pool;
// devices follow, at most ResourceSliceMaxDevicesWithAdvancedFeatures (64)
// per slice once any of them consumes counters or has taints, else 128;
// devices refer to their counter set by name anywhere in the pool; one
// counter consumption per device (the API allows 2) and at most 3
// counters per set (32 allowed).
package resourceslices

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// device builds the DRA device of one whole chip, without counters or
// sharing (see chipDevices for those); it is named
// vendors.Registry.ChipDeviceName.
func device(reg vendors.Registry, c inventory.Chip) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		names.AttrVendor:    {StringValue: ptr.To(string(c.Vendor))},
		names.AttrFamily:    {StringValue: ptr.To(string(reg.NamesOf(c.Vendor).Family))},
		names.AttrModel:     {StringValue: ptr.To(c.Model)},
		names.AttrType:      {StringValue: ptr.To(names.TypeChip)},
		names.AttrIndex:     {IntValue: ptr.To(int64(c.Index))},
		names.AttrLinkGroup: {StringValue: ptr.To(c.LinkGroup)},
		names.AttrLinkType:  {StringValue: ptr.To(string(c.LinkType))},
		names.AttrHealthy:   {BoolValue: ptr.To(c.Healthy)},
	}
	if c.UUID != "" {
		attrs[names.AttrUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.UUID)}
	}
	if c.NUMANode != nil {
		attrs[names.AttrNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*c.NUMANode))}
		// The standard key (KEP-6072) lets one matchAttribute place a chip
		// with another driver's device (a dranet NIC) on one NUMA node. The
		// scalar form needs no feature gate; the helper refuses what it
		// must not publish (no affinity, a node beyond the kernel's limit).
		if a, err := deviceattribute.GetNUMANodeAttribute(*c.NUMANode, deviceattribute.ScalarAttribute); err == nil {
			attrs[a.Name] = a.Value
		}
	}
	if c.DriverVersion != "" {
		attrs[names.AttrDriverVersion] = resourceapi.DeviceAttribute{VersionValue: ptr.To(c.DriverVersion)}
	}
	if c.PCIBusID != "" {
		if name, ok := pciBusIDAttribute(c.PCIBusID); ok {
			attrs[name] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.PCIBusID)}
		}
	}
	if c.PCIeRoot != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.PCIeRoot)}
	}
	superPodAttributes(attrs, c)
	// Vendor extras are unqualified: they land in the driver's own domain.
	for k, v := range c.Extra {
		attrs[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{StringValue: v.String, IntValue: v.Int, BoolValue: v.Bool}
	}
	d := resourceapi.Device{
		Name:       reg.ChipDeviceName(c),
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			names.CapMemory: {Value: *resource.NewQuantity(c.MemoryBytes, resource.BinarySI)},
			names.CapCores:  {Value: *resource.NewQuantity(int64(c.Cores), resource.DecimalSI)},
		},
	}
	d.Taints = Taints(c, "")
	return d
}

// superPodAttributes publishes the chip's place in its super pod, for
// every vendor, from the chip's own fields: the same fields the claim
// status and rank tables read, so the two cannot disagree. Only what is
// known is published.
func superPodAttributes(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, c inventory.Chip) {
	if c.SuperPod != "" {
		attrs[names.AttrSuperPod] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.SuperPod)}
	}
	if c.SuperDeviceID != nil {
		attrs[names.AttrSuperDeviceID] = resourceapi.DeviceAttribute{IntValue: ptr.To(*c.SuperDeviceID)}
	}
	if c.ServerIndex != nil {
		attrs[names.AttrServerIndex] = resourceapi.DeviceAttribute{IntValue: ptr.To(*c.ServerIndex)}
	}
}

// pciBusIDs memoizes deviceattribute.GetPCIBusIDAttribute by bus ID: it
// compiles its format regexp on every call, which was a third of the CPU
// of building a chip's device (docs/benchmarks.md). Bus IDs are few: a
// node's chips, or the profiles of a simulated cluster.
var pciBusIDs sync.Map // bus ID -> resourceapi.QualifiedName, "" if invalid

// pciBusIDAttribute is the name of the standard PCI bus ID attribute if
// busID is a valid one.
func pciBusIDAttribute(busID string) (resourceapi.QualifiedName, bool) {
	if name, ok := pciBusIDs.Load(busID); ok {
		return name.(resourceapi.QualifiedName), name != resourceapi.QualifiedName("")
	}
	var name resourceapi.QualifiedName
	if a, err := deviceattribute.GetPCIBusIDAttribute(busID); err == nil {
		name = a.Name
	}
	pciBusIDs.Store(busID, name)
	return name, name != ""
}

// Options say how the chips of a node are published.
type Options struct {
	// Policy gives each chip its mode (partitions.ModePartitioned,
	// ModeShared, ModeWhole). The zero value publishes every chip Whole.
	Policy partitions.Policy
	// UnhealthyTaintEffect is the effect of the taint on unhealthy chips
	// (see Taints); empty means NoSchedule.
	UnhealthyTaintEffect resourceapi.DeviceTaintEffect
	// Templates, when not empty, are the only partition templates a
	// Partitioned chip offers, by slug (vendors.Template.Slug, as in
	// device and class names: vir10-3c-32g, smlu-50p); a chip whose model
	// has none of them is published Whole. Each slot
	// is a device every claim's selectors are evaluated on, so a node
	// that offers only the shapes its workloads use costs the scheduler
	// less (docs/benchmarks.md).
	Templates []string
	// OmitAttributes are attribute keys left out of every device: each
	// attribute is a map entry the scheduler's CEL evaluation builds per
	// device and selector (docs/benchmarks.md measures a leaner set).
	OmitAttributes []resourceapi.QualifiedName
}

// sharedMemoryMin is the smallest memory share of a shared chip: a claim
// asking for less gets this much.
var sharedMemoryMin = resource.MustParse("1Gi")

// chipDevices returns the devices a chip publishes in its mode and, when it
// has partitions, its counter set:
//
//   - Partitioned: the whole chip, consuming all of the counter set, then
//     one device per partition slot (partitions.Slots), each consuming its
//     template's cores, memory and AI CPUs.
//   - Shared: the whole chip with allowMultipleAllocations and request
//     policies (sharedChip), and accel-dra.dev/shareEnforcement.
//   - Whole: the whole chip only.
func chipDevices(reg vendors.Registry, c inventory.Chip, policy partitions.Policy, templates []string) ([]resourceapi.Device, *resourceapi.CounterSet) {
	chip := device(reg, c)
	switch policy.ModeOf(c) {
	case partitions.ModeShared:
		sharedChip(&chip, policy, c)
		return []resourceapi.Device{chip}, nil
	case partitions.ModePartitioned:
		slots := offered(partitions.Slots(reg, c), templates)
		if len(slots) == 0 {
			return []resourceapi.Device{chip}, nil
		}
		total := partitions.CountersOf(reg, c)
		// A chip's counter set is named after its device.
		set := &resourceapi.CounterSet{Name: reg.ChipDeviceName(c), Counters: counters(total.Cores, total.MemoryBytes, total.AICPUs)}
		chip.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name, Counters: counters(total.Cores, total.MemoryBytes, total.AICPUs)}}
		devices := []resourceapi.Device{chip}
		for _, s := range slots {
			devices = append(devices, partitionDevice(reg, c, chip, s, set.Name))
		}
		return devices, set
	}
	return []resourceapi.Device{chip}, nil
}

// sharedChip makes chip the device of a Shared chip c. Where the vendor's
// driver carves each share into a partition at prepare
// (partitions.Policy.ShareGrid), the request policies are its grid: a
// share takes memory and cores in the driver's steps, at least one of
// each, so the scheduler charges what the driver makes; memory defaults
// to the most a share takes (a claim that asks for no capacity gets the
// whole chip, and no partition), cores to one step. Elsewhere the shares
// are accounting only: memory defaults to all of it and takes at least
// 1Gi; cores default to 0 (a share without a cores request reserves none,
// the cores are time-shared) in steps of one.
func sharedChip(chip *resourceapi.Device, policy partitions.Policy, c inventory.Chip) {
	chip.AllowMultipleAllocations = ptr.To(true)
	chip.Attributes[partitions.AttrShareEnforcement] = resourceapi.DeviceAttribute{StringValue: ptr.To(policy.Enforcement(c))}
	mem := chip.Capacity[names.CapMemory]
	cores := chip.Capacity[names.CapCores]
	g, _, ok := policy.ShareGrid(c)
	switch {
	case ok && g.Units != nil:
		unitsChip(chip, *g.Units)
		return
	case ok:
		mem.RequestPolicy = gridPolicy(g.MemoryStep, g.MaxMemory, g.MaxMemory, resource.BinarySI)
		cores.RequestPolicy = gridPolicy(g.CoresStep, g.MaxCores, g.CoresStep, resource.DecimalSI)
		chip.Capacity[names.CapMemory], chip.Capacity[names.CapCores] = mem, cores
		return
	}
	min := sharedMemoryMin.DeepCopy()
	if mem.Value.Cmp(min) < 0 {
		min = mem.Value.DeepCopy()
	}
	mem.RequestPolicy = &resourceapi.CapacityRequestPolicy{
		Default:    ptr.To(mem.Value.DeepCopy()),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &min},
	}
	cores.RequestPolicy = &resourceapi.CapacityRequestPolicy{
		Default:    resource.NewQuantity(0, resource.DecimalSI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(0, resource.DecimalSI), Step: resource.NewQuantity(1, resource.DecimalSI)},
	}
	chip.Capacity[names.CapMemory], chip.Capacity[names.CapCores] = mem, cores
}

// unitsChip publishes the capacity of a Shared chip whose driver carves
// fixed templates only (vendors.UnitGrid): accel-dra.dev/shareUnits, the
// chip's units, whose valid values are the templates' sizes and the whole
// chip (the default: a claim that asks for no capacity gets the chip). A
// request policy rounds each capacity on its own, so cores and memory
// cannot be asked for: their only valid value and default is 0, and a
// share's cores and memory follow from its units. A request for units no
// template has rounds up to the next template, or to the whole chip.
func unitsChip(chip *resourceapi.Device, u vendors.UnitGrid) {
	values := make([]resource.Quantity, len(u.Sizes))
	for i, n := range u.Sizes {
		values[i] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	chip.Capacity[names.CapShareUnits] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(u.Whole(), resource.DecimalSI),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: resource.NewQuantity(u.Whole(), resource.DecimalSI), ValidValues: values}}
	for _, name := range []resourceapi.QualifiedName{names.CapMemory, names.CapCores} {
		c := chip.Capacity[name]
		zero := resource.NewQuantity(0, c.Value.Format)
		c.RequestPolicy = &resourceapi.CapacityRequestPolicy{Default: zero, ValidValues: []resource.Quantity{zero.DeepCopy()}}
		chip.Capacity[name] = c
	}
}

// gridPolicy is a request policy of whole steps from one step to most,
// with default def: the API wants the maximum and the default multiples
// of the step (k8s.io/api resource/v1 CapacityRequestPolicyRange.Step).
func gridPolicy(step, most, def int64, format resource.Format) *resourceapi.CapacityRequestPolicy {
	return &resourceapi.CapacityRequestPolicy{
		Default: resource.NewQuantity(def, format),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(step, format),
			Max: resource.NewQuantity(most, format), Step: resource.NewQuantity(step, format)},
	}
}

// CheckTemplates says which of slugs is the slug of no partition template
// of a model reg's vendors know, naming the known ones.
func CheckTemplates(reg vendors.Registry, slugs []string) error {
	known := map[string]bool{}
	for _, v := range reg.All() {
		for _, m := range v.Models() {
			for _, sh := range m.Shapes {
				known[sh.Slug] = true
			}
		}
	}
	for _, s := range slugs {
		if !known[s] {
			return fmt.Errorf("%q is the slug of no partition template (known: %s)", s, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	return nil
}

// offered are the slots of the templates named by slug, all slots when
// none is.
func offered(slots []vendors.Slot, templates []string) []vendors.Slot {
	if len(templates) == 0 {
		return slots
	}
	var out []vendors.Slot
	for _, s := range slots {
		if slices.Contains(templates, s.Template.Slug) {
			out = append(out, s)
		}
	}
	return out
}

// counters is a counter map; an AI CPU count of 0 is left out.
func counters(cores, memory, aicpus int64) map[string]resourceapi.Counter {
	out := map[string]resourceapi.Counter{
		partitions.CounterCores:  {Value: *resource.NewQuantity(cores, resource.DecimalSI)},
		partitions.CounterMemory: {Value: *resource.NewQuantity(memory, resource.BinarySI)},
	}
	if aicpus > 0 {
		out[partitions.CounterAICPU] = resourceapi.Counter{Value: *resource.NewQuantity(aicpus, resource.DecimalSI)}
	}
	return out
}

// Extra attributes of partition devices, unqualified (driver domain).
const (
	// AttrParentDevice is the whole-chip device a partition is cut from.
	AttrParentDevice resourceapi.QualifiedName = "parentDevice"
	// AttrPartitionTemplate is the vendor's template or profile name
	// (vir04, vir05_1c_16g, 25p.5827mb).
	AttrPartitionTemplate resourceapi.QualifiedName = "partitionTemplate"
)

// partitionDevice is the device of one partition slot: the chip's
// attributes (so CEL on model, linkGroup, numaNode… works the same), its
// type, parent and template, and the template's memory and cores as
// capacity.
func partitionDevice(reg vendors.Registry, c inventory.Chip, chip resourceapi.Device, s vendors.Slot, counterSet string) resourceapi.Device {
	attrs := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(chip.Attributes)+2)
	for k, v := range chip.Attributes {
		attrs[k] = v
	}
	attrs[names.AttrType] = resourceapi.DeviceAttribute{StringValue: ptr.To(s.Template.Type)}
	attrs[AttrParentDevice] = resourceapi.DeviceAttribute{StringValue: ptr.To(chip.Name)}
	attrs[AttrPartitionTemplate] = resourceapi.DeviceAttribute{StringValue: ptr.To(s.Template.Name)}
	d := resourceapi.Device{
		Name:       reg.PartitionDeviceName(c, s),
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			names.CapMemory: {Value: *resource.NewQuantity(s.Template.MemoryBytes, resource.BinarySI)},
			names.CapCores:  {Value: *resource.NewQuantity(s.Template.Cores, resource.DecimalSI)},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: counterSet,
			Counters: counters(s.Template.Cores, s.Template.MemoryBytes, s.Template.AICPUs)}},
		Taints: chip.Taints,
	}
	return d
}

// DevicesFor returns the devices and counter sets of the chips of vendor v
// of reg.
func DevicesFor(reg vendors.Registry, inv inventory.Inventory, v inventory.Vendor, opts Options) ([]resourceapi.Device, []resourceapi.CounterSet) {
	chips := inv.ChipsOf(v)
	devices := make([]resourceapi.Device, 0, len(chips))
	var sets []resourceapi.CounterSet
	for _, c := range chips {
		devs, set := chipDevices(reg, c, opts.Policy, opts.Templates)
		setHealth(devs, c, opts)
		for _, d := range devs {
			for _, k := range opts.OmitAttributes {
				delete(d.Attributes, k)
			}
		}
		devices = append(devices, devs...)
		if set != nil {
			sets = append(sets, *set)
		}
	}
	return devices, sets
}

// maxDevicesPerSlice is the API's limit for these devices: lower once any
// device uses taints or consumes counters (ResourceSliceSpec.Devices).
func maxDevicesPerSlice(devices []resourceapi.Device) int {
	for _, d := range devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	return resourceapi.ResourceSliceMaxDevices
}

// chunk splits devices into slices no larger than the API allows.
func chunk(devices []resourceapi.Device) [][]resourceapi.Device {
	limit := maxDevicesPerSlice(devices)
	var out [][]resourceapi.Device
	for len(devices) > limit {
		out = append(out, devices[:limit])
		devices = devices[limit:]
	}
	if len(devices) > 0 {
		out = append(out, devices)
	}
	return out
}

// chunkCounterSets splits counter sets into slices of at most
// ResourceSliceMaxCounterSets. In resource.k8s.io/v1 (1.37) a slice holds
// either devices or sharedCounters, never both; devices refer to counter
// sets of any slice of their pool by name.
func chunkCounterSets(sets []resourceapi.CounterSet) [][]resourceapi.CounterSet {
	var out [][]resourceapi.CounterSet
	for len(sets) > resourceapi.ResourceSliceMaxCounterSets {
		out = append(out, sets[:resourceapi.ResourceSliceMaxCounterSets])
		sets = sets[resourceapi.ResourceSliceMaxCounterSets:]
	}
	if len(sets) > 0 {
		out = append(out, sets)
	}
	return out
}

// DriverResourcesFor returns, per driver name, what the node agent hands
// to the kubeletplugin helper's PublishResources: one pool named after the
// node, first the slices of counter sets (at most 8 each), then the
// devices, split at the per-slice device limit. The chips' vendors are
// reg's.
func DriverResourcesFor(reg vendors.Registry, nodeName string, inv inventory.Inventory, opts Options) map[string]resourceslice.DriverResources {
	out := map[string]resourceslice.DriverResources{}
	for _, v := range inv.Vendors() {
		devices, sets := DevicesFor(reg, inv, v, opts)
		var slices []resourceslice.Slice
		for _, cs := range chunkCounterSets(sets) {
			slices = append(slices, resourceslice.Slice{SharedCounters: cs})
		}
		for _, devs := range chunk(devices) {
			slices = append(slices, resourceslice.Slice{Devices: devs})
		}
		out[reg.DriverFor(v)] = resourceslice.DriverResources{
			Pools: map[string]resourceslice.Pool{nodeName: {Slices: slices}},
		}
	}
	return out
}

// SlicesFor returns the ResourceSlice objects of a node, ordered by driver
// name and slice number, named <node>-<driver>-<n> like the resourceslice
// controller's generated names (which carry a random suffix instead).
func SlicesFor(reg vendors.Registry, nodeName string, inv inventory.Inventory, opts Options) []*resourceapi.ResourceSlice {
	return SliceObjects(nodeName, DriverResourcesFor(reg, nodeName, inv, opts))
}

// SliceObjects returns the ResourceSlice objects of what a node publishes
// by driver, each driver's pool named after the node: what the resourceslice
// controller would write, for code that reads slices without an API
// server (the simulator, the benchmarks).
func SliceObjects(nodeName string, drivers map[string]resourceslice.DriverResources) []*resourceapi.ResourceSlice {
	driverNames := make([]string, 0, len(drivers))
	for d := range drivers {
		driverNames = append(driverNames, d)
	}
	sort.Strings(driverNames)
	var out []*resourceapi.ResourceSlice
	for _, driver := range driverNames {
		pool := drivers[driver].Pools[nodeName]
		for i, s := range pool.Slices {
			out = append(out, &resourceapi.ResourceSlice{
				TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", nodeName, driver, i)},
				Spec: resourceapi.ResourceSliceSpec{
					Driver:   driver,
					NodeName: ptr.To(nodeName),
					Pool: resourceapi.ResourcePool{
						Name:               nodeName,
						Generation:         1,
						ResourceSliceCount: int64(len(pool.Slices)),
					},
					Devices:        s.Devices,
					SharedCounters: s.SharedCounters,
				},
			})
		}
	}
	return out
}

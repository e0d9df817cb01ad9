// Package resourceslices turns a node's inventory into resource.k8s.io/v1
// devices and ResourceSlices. It is pure and deterministic: the node agent
// publishes its output through the kubeletplugin helper, and the CLI's
// simulate and discover commands show exactly the same objects.
package resourceslices

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// DeviceName is the DNS-label name of a chip's device: npu-N or mlu-N.
func DeviceName(c inventory.Chip) string {
	return fmt.Sprintf("%s-%d", names.DevicePrefix(c.Vendor), c.Index)
}

// Device builds the DRA device of one whole chip.
func Device(c inventory.Chip) resourceapi.Device {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		names.AttrVendor:    {StringValue: ptr.To(string(c.Vendor))},
		names.AttrFamily:    {StringValue: ptr.To(string(c.Vendor.Family()))},
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
	}
	if c.DriverVersion != "" {
		attrs[names.AttrDriverVersion] = resourceapi.DeviceAttribute{VersionValue: ptr.To(c.DriverVersion)}
	}
	if c.PCIBusID != "" {
		if a, err := deviceattribute.GetPCIBusIDAttribute(c.PCIBusID); err == nil {
			attrs[a.Name] = a.Value
		}
	}
	if c.PCIeRoot != "" {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To(c.PCIeRoot)}
	}
	// Vendor extras are unqualified: they land in the driver's own domain.
	for k, v := range c.Extra {
		attrs[resourceapi.QualifiedName(k)] = resourceapi.DeviceAttribute{StringValue: v.String, IntValue: v.Int, BoolValue: v.Bool}
	}
	d := resourceapi.Device{
		Name:       DeviceName(c),
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			names.CapMemory: {Value: *resource.NewQuantity(c.MemoryBytes, resource.BinarySI)},
			names.CapCores:  {Value: *resource.NewQuantity(int64(c.Cores), resource.DecimalSI)},
		},
	}
	if !c.Healthy {
		d.Taints = []resourceapi.DeviceTaint{{
			Key:    names.TaintUnhealthy,
			Value:  "true",
			Effect: resourceapi.DeviceTaintEffectNoSchedule,
		}}
	}
	return d
}

// Devices returns the devices of one vendor's chips, ordered by index.
func Devices(inv inventory.Inventory, v inventory.Vendor) []resourceapi.Device {
	chips := inv.ChipsOf(v)
	devices := make([]resourceapi.Device, 0, len(chips))
	for _, c := range chips {
		devices = append(devices, Device(c))
	}
	return devices
}

// maxDevicesPerSlice is the API's limit for these devices: lower once any
// device uses taints (or, later, counters).
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

// DriverResources returns, per driver name, what the node agent hands to
// the kubeletplugin helper's PublishResources: one pool named after the
// node, split into slices within the per-slice device limit.
func DriverResources(nodeName string, inv inventory.Inventory) map[string]resourceslice.DriverResources {
	out := map[string]resourceslice.DriverResources{}
	for _, v := range inv.Vendors() {
		var slices []resourceslice.Slice
		for _, devs := range chunk(Devices(inv, v)) {
			slices = append(slices, resourceslice.Slice{Devices: devs})
		}
		out[names.DriverFor(v)] = resourceslice.DriverResources{
			Pools: map[string]resourceslice.Pool{nodeName: {Slices: slices}},
		}
	}
	return out
}

// Slices returns the ResourceSlice objects of a node, ordered by driver
// name and slice number, named <node>-<driver>-<n> like the resourceslice
// controller's generated names (which carry a random suffix instead).
func Slices(nodeName string, inv inventory.Inventory) []*resourceapi.ResourceSlice {
	drivers := DriverResources(nodeName, inv)
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
					Devices: s.Devices,
				},
			})
		}
	}
	return out
}

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

package scale

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// The NVIDIA GPU kubelet plugin's slices, from
// kubernetes-sigs/dra-driver-nvidia-gpu @ 95932046 (2026-08-07),
// cmd/gpu-kubelet-plugin:
//   - a GPU: deviceinfo.go GpuInfo.GetDevice (name gpu-<minor>), its
//     Attributes (type, uuid, productName, brand, architecture,
//     cudaComputeCapability, driverVersion, cudaDriverVersion, the
//     standard resource.kubernetes.io/pciBusID, pcieRoot and numaNode,
//     the latter an int without the DRAListTypeAttributes gate; with the
//     FabricManagerPartitioning gate gpuModuleID and partition<size>,
//     addFabricManagerAttributes) and partitions.go fullGpuCapacity
//     (memory); all in one slice per node (driver.go publishResources).
//   - with the DynamicMIG gate (driver.go generateSplitResourceSlices, the
//     Kubernetes >= 1.35 form): one slice of every GPU's counter set
//     (partitions.go PartSharedCounterSets), then one slice per GPU with
//     the GPU (PartGetDevice: the largest capacity of any MIG profile, all
//     counters consumed) and a MIG device per profile and placement
//     (nvlib.go inspectMigProfilesAndPlacements; mig.go
//     CommonAttributesMig, CommonCapacitiesMig, ToCanonicalName;
//     partitions.go PartConsumesCounters: a counter per capacity and one
//     per memory slice), in device-name order.
//
// Left out: addressingMode (coherent-memory systems only), VFIO devices
// (PassthroughSupport), static MIG, device taints from health checks,
// consumable shares (off by default), the ComputeDomain driver's
// channels; the values (UUIDs, bus IDs, partition ids) are made up in
// the source's formats.

// NVIDIADriver is the GPU kubelet plugin's driver name.
const NVIDIADriver = "gpu.nvidia.com"

// NVIDIAGates are the plugin's feature gates the shape depends on, all
// alpha and off by default (pkg/featuregates/featuregates.go).
type NVIDIAGates struct {
	FabricManagerPartitioning bool
	DynamicMIG                bool
}

// The GPU is NVIDIA/go-nvml's mock H100 SXM5 80GB
// (pkg/nvml/mock/shared/gpus/h100.go @ 3d26c396, H100_SXM5_80GB: name,
// Hopper, brand NVIDIA, compute capability 9.0, 81920 MiB), eight per
// node as in a DGX H100; the driver versions are the plugin's reference
// page's example (site/content/docs/reference/resourceslice-attributes.md),
// the strings go-nvlib makes of them (pkg/nvlib/device/device.go) and
// semver's form of versions.
const (
	nvidiaGPUsPerNode  = 8
	h100ProductName    = "NVIDIA H100 80GB HBM3"
	h100Architecture   = "Hopper"
	h100Brand          = "Nvidia"
	h100ComputeCap     = "9.0.0"
	nvidiaDriver       = "580.126.20"
	nvidiaCUDADriver   = "13.0.0"
	h100MemoryMiB      = 81920
	nvidiaGPUsPerNUMA  = 4
	nvidiaGPUsPerPCIe  = 2
	nvidiaDeviceGPU    = "gpu"
	nvidiaDeviceMIG    = "mig"
	nvidiaCounterSetOf = "gpu-%d-counter-set"
)

// migProfile is one MIG profile of the mock H100's GPU instance profiles
// and placements (h100_80gb_GpuInstanceProfiles, h100_GpuInstancePlacements)
// that the plugin announces: those whose compute instance spans the GPU
// instance (C == G), named as go-nvlib's MigProfileInfo.String does.
type migProfile struct {
	name                                 string
	id                                   int // GpuInstanceProfileInfo.Id
	multiprocessors, copyEngines         int64
	decoders, encoders, jpegEngines, ofa int64
	memoryMiB                            int64
	starts                               []int // placements' Start
	size                                 int   // placements' Size, in memory slices
}

var h100MIGProfiles = []migProfile{
	{"1g.10gb", 0, 16, 1, 1, 0, 0, 0, 10240, []int{0, 1, 2, 3, 4, 5, 6}, 1},
	{"2g.20gb", 1, 32, 2, 1, 0, 0, 0, 20480, []int{0, 2, 4}, 2},
	{"3g.40gb", 2, 48, 3, 2, 0, 0, 0, 40960, []int{0, 4}, 3},
	{"4g.40gb", 3, 64, 4, 2, 0, 0, 0, 40960, []int{0}, 4},
	{"7g.80gb", 4, 112, 7, 5, 0, 0, 0, 81920, []int{0}, 7},
	{"1g.10gb+me", 7, 16, 1, 1, 0, 1, 1, 10240, []int{0, 1, 2, 3, 4, 5, 6}, 1},
	{"1g.20gb", 9, 16, 1, 1, 0, 0, 0, 20480, []int{0, 1, 2, 3, 4, 5, 6}, 1},
}

// capacities is CommonCapacitiesMig of the profile.
func (p migProfile) capacities() map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	n := func(v int64) resourceapi.DeviceCapacity {
		return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"multiprocessors": n(p.multiprocessors), "copyEngines": n(p.copyEngines), "decoders": n(p.decoders),
		"encoders": n(p.encoders), "jpegEngines": n(p.jpegEngines), "ofaEngines": n(p.ofa), "memory": n(p.memoryMiB << 20),
	}
}

// counterNames are camelToDNSName of the capacities' names: the
// counters the plugin derives from them.
var counterNames = map[resourceapi.QualifiedName]string{
	"multiprocessors": "multiprocessors", "copyEngines": "copy-engines", "decoders": "decoders",
	"encoders": "encoders", "jpegEngines": "jpeg-engines", "ofaEngines": "ofa-engines", "memory": "memory",
}

// counters is capacitiesToCounters plus addCountersForMemSlices: a
// counter per capacity and one of 1 per memory slice from start.
func counters(caps map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, start, size int) map[string]resourceapi.Counter {
	out := make(map[string]resourceapi.Counter, len(caps)+size)
	for name, c := range caps {
		out[counterNames[name]] = resourceapi.Counter{Value: c.Value}
	}
	for s := start; s < start+size; s++ {
		out[fmt.Sprintf("memory-slice-%d", s)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.BinarySI)}
	}
	return out
}

// NVIDIAResources is what the plugin of the i-th node, named node,
// publishes with gates.
func NVIDIAResources(node string, i int, gates NVIDIAGates) resourceslice.DriverResources {
	var out []resourceslice.Slice
	if gates.DynamicMIG {
		out = nvidiaMIGSlices(i, gates)
	} else {
		var devices []resourceapi.Device
		for g := range nvidiaGPUsPerNode {
			devices = append(devices, resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d", g), Attributes: nvidiaGPUAttributes(i, g, gates),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					"memory": {Value: *resource.NewQuantity(h100MemoryMiB<<20, resource.BinarySI)}},
			})
		}
		out = []resourceslice.Slice{{Devices: devices}}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: {Slices: out}}}
}

// nvidiaMIGSlices are DynamicMIG's slices of the i-th node: the counter
// sets first, then each GPU's devices.
func nvidiaMIGSlices(i int, gates NVIDIAGates) []resourceslice.Slice {
	counterSlice := resourceslice.Slice{}
	out := []resourceslice.Slice{{}}
	for g := range nvidiaGPUsPerNode {
		set := fmt.Sprintf(nvidiaCounterSetOf, g)
		full, memSlices := nvidiaMIGFullCapacity()
		counterSlice.SharedCounters = append(counterSlice.SharedCounters, resourceapi.CounterSet{Name: set, Counters: counters(full, 0, memSlices)})
		gpu := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), Attributes: nvidiaGPUAttributes(i, g, gates), Capacity: full,
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: counters(full, 0, memSlices)}}}
		out = append(out, resourceslice.Slice{Devices: append([]resourceapi.Device{gpu}, migDevices(i, g)...)})
	}
	out[0] = counterSlice
	return out
}

// nvidiaMIGFullCapacity is a GPU's capacity with DynamicMIG, the largest
// of its MIG profiles' per dimension, and its memory slices, those of the
// largest placement (inspectMigProfilesAndPlacements).
func nvidiaMIGFullCapacity() (map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, int) {
	full := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	memSlices := 0
	for _, p := range h100MIGProfiles {
		for name, c := range p.capacities() {
			if have, ok := full[name]; !ok || c.Value.Cmp(have.Value) > 0 {
				full[name] = c
			}
		}
		memSlices = max(memSlices, p.size)
	}
	return full, memSlices
}

// migDevices are GPU g's MIG devices, one per profile and placement, in
// name order after the GPU ("gpu-<g>" sorts first).
func migDevices(i, g int) []resourceapi.Device {
	var out []resourceapi.Device
	for _, p := range h100MIGProfiles {
		for _, start := range p.starts {
			attrs := nvidiaCommonAttributes(g)
			attrs["type"] = nvidiaString(nvidiaDeviceMIG)
			attrs["parentUUID"] = nvidiaString(nvidiaUUID(i, g))
			attrs["profile"] = nvidiaString(p.name)
			caps := p.capacities()
			name := strings.NewReplacer(".", "", "+", "-").Replace(p.name)
			out = append(out, resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d-mig-%s-%d-%d", g, name, p.id, start), Attributes: attrs, Capacity: caps,
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: fmt.Sprintf(nvidiaCounterSetOf, g), Counters: counters(caps, start, p.size)}},
			})
		}
	}
	slices.SortFunc(out, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// nvidiaGPUAttributes is GpuInfo.Attributes of GPU g of the i-th node.
func nvidiaGPUAttributes(i, g int, gates NVIDIAGates) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	attrs := nvidiaCommonAttributes(g)
	attrs["type"] = nvidiaString(nvidiaDeviceGPU)
	attrs["uuid"] = nvidiaString(nvidiaUUID(i, g))
	if gates.FabricManagerPartitioning {
		// The example of pkg/fabricmanager/manager.go
		// GetPartitionsBySizeByModuleID: module 1 is in partition 1 of
		// 8 GPUs, 2 of 4, 4 of 2 and 8 of 1; module ids count from 1.
		module := int64(g + 1)
		attrs["gpuModuleID"] = resourceapi.DeviceAttribute{IntValue: ptr.To(module)}
		for size, first := range map[int64]int64{8: 1, 4: 2, 2: 4, 1: 8} {
			attrs[resourceapi.QualifiedName(fmt.Sprintf("partition%d", size))] = resourceapi.DeviceAttribute{IntValue: ptr.To(first + (module-1)/size)}
		}
	}
	return attrs
}

// nvidiaCommonAttributes are the attributes a GPU and its MIG devices
// share (CommonAttributesMig without type, parentUUID and profile).
func nvidiaCommonAttributes(g int) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	root := 0x18 + 0x40*(g/nvidiaGPUsPerPCIe)
	bus := root + 1 + 0x20*(g%nvidiaGPUsPerPCIe)
	return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"productName":           nvidiaString(h100ProductName),
		"brand":                 nvidiaString(h100Brand),
		"architecture":          nvidiaString(h100Architecture),
		"cudaComputeCapability": {VersionValue: ptr.To(h100ComputeCap)},
		"driverVersion":         {VersionValue: ptr.To(nvidiaDriver)},
		"cudaDriverVersion":     {VersionValue: ptr.To(nvidiaCUDADriver)},
		deviceattribute.StandardDeviceAttributePCIBusID: nvidiaString(fmt.Sprintf("0000:%02x:00.0", bus)),
		deviceattribute.StandardDeviceAttributePCIeRoot: nvidiaString(fmt.Sprintf("pci0000:%02x", root)),
		deviceattribute.StandardDeviceAttributeNUMANode: {IntValue: ptr.To(int64(g / nvidiaGPUsPerNUMA))},
	}
}

func nvidiaUUID(i, g int) string { return fmt.Sprintf("GPU-%08x-%04x-4000-8000-000000000000", i, g) }

func nvidiaString(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &s}
}

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

package resourceslices_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func inventoryOf(t testing.TB, node, profileName string) inventory.Inventory {
	t.Helper()
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, node, p).Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, inv.Validate())
	return inv
}

func TestSlicesOfEveryProfileMatchTheGoldenYAML(t *testing.T) {
	require.NotEmpty(t, profile.Names())
	for _, name := range profile.Names() {
		t.Run(name, func(t *testing.T) {
			requireGolden(t, filepath.Join("testdata", "golden", name+".yaml"), resourceslices.SlicesFor(registry, "node-0", inventoryOf(t, "node-0", name), partitioned))
		})
	}
}

func TestTheDefaultOptionsPublishWholeChipsOnly(t *testing.T) {
	for _, name := range profile.Names() {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, "node-0", name)
			slices := resourceslices.SlicesFor(registry, "node-0", inv, resourceslices.Options{})
			require.Equal(t, resourceslices.SlicesFor(registry, "node-0", inv, whole), slices)
			var devices int
			for _, s := range slices {
				require.Empty(t, s.Spec.SharedCounters, "no counter sets without partitions")
				for _, d := range s.Spec.Devices {
					require.Equal(t, names.TypeChip, *d.Attributes[names.AttrType].StringValue, d.Name)
					require.Nil(t, d.AllowMultipleAllocations, d.Name)
					devices++
				}
			}
			require.Len(t, inv.Chips, devices, "one device per chip")
		})
	}
}

func TestSlicesAreDeterministic(t *testing.T) {
	inv := inventoryOf(t, "n", "mixed-910b-mlu370")
	a, err := yaml.Marshal(resourceslices.SlicesFor(registry, "n", inv, partitioned))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		b, err := yaml.Marshal(resourceslices.SlicesFor(registry, "n", inv, partitioned))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b))
	}
}

func TestEveryDeviceHasTheSharedAttributesAndStaysWithinAPILimits(t *testing.T) {
	shared := []resourceapi.QualifiedName{
		names.AttrVendor, names.AttrFamily, names.AttrModel, names.AttrType, names.AttrIndex,
		names.AttrUUID, names.AttrLinkGroup, names.AttrLinkType, names.AttrNUMANode,
		names.AttrDriverVersion, names.AttrHealthy,
	}
	for _, name := range profile.Names() {
		t.Run(name, func(t *testing.T) {
			for _, s := range resourceslices.SlicesFor(registry, "node-0", inventoryOf(t, "node-0", name), partitioned) {
				require.Equal(t, "node-0", s.Spec.Pool.Name, "one pool per node and driver")
				require.False(t, len(s.Spec.Devices) > 0 && len(s.Spec.SharedCounters) > 0, "a slice holds devices or counter sets, not both")
				require.LessOrEqual(t, len(s.Spec.SharedCounters), resourceapi.ResourceSliceMaxCounterSets)
				require.Contains(t, []string{ascend.Driver, cambricon.Driver}, s.Spec.Driver)
				for _, d := range s.Spec.Devices {
					require.Empty(t, validation.IsDNS1123Label(d.Name), d.Name)
					for _, k := range shared {
						require.Contains(t, d.Attributes, k, "device %s", d.Name)
					}
					require.Contains(t, d.Attributes, resourceapi.QualifiedName("resource.kubernetes.io/pcieRoot"))
					// KEP-6072's standard key, next to ours, so one
					// matchAttribute can join another driver's device.
					require.Equal(t, d.Attributes[names.AttrNUMANode], d.Attributes[resourceapi.QualifiedName("resource.kubernetes.io/numaNode")],
						"device %s", d.Name)
					require.Contains(t, d.Capacity, names.CapMemory)
					require.Contains(t, d.Capacity, names.CapCores)
					require.LessOrEqual(t, len(d.Attributes)+len(d.Capacity), resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)
					typ := *d.Attributes[names.AttrType].StringValue
					switch {
					case typ == names.TypeChip && s.Spec.Driver == ascend.Driver:
						require.Regexp(t, `^npu-\d+$`, d.Name)
					case typ == names.TypeChip:
						require.Regexp(t, `^mlu-\d+$`, d.Name)
					case s.Spec.Driver == ascend.Driver:
						require.Equal(t, ascend.PartitionType, typ)
						require.Regexp(t, `^npu-\d+-vir[0-9a-z-]+-\d+$`, d.Name)
					default:
						require.Equal(t, cambricon.PartitionType, typ)
						require.Regexp(t, `^mlu-\d+-smlu-(50|25)p-\d+$`, d.Name)
					}
				}
			}
		})
	}
}

func TestDevicesCarryTheProfilesFacts(t *testing.T) {
	tests := []struct {
		profile   string
		device    string
		model     string
		linkGroup string
		memory    string
	}{
		{"atlas-800-910a", "npu-3", "Ascend910A", "hccs-0", "32Gi"},
		{"atlas-800-910a", "npu-4", "Ascend910A", "hccs-1", "32Gi"},
		{"atlas-800t-a2", "npu-7", "Ascend910B3", "hccs-0", "64Gi"},
		{"atlas-300i-duo", "npu-1", "Ascend310P3", "pcie-1", "44280Mi"},
		{"mlu370-x8", "mlu-2", "MLU370-X8", "mlulink-1", "23308Mi"},
		{"mlu590", "mlu-7", "MLU590", "mlulink-0", "96Gi"},
		{"mlu270", "mlu-0", "MLU270-S4", "pcie-0", "16Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.profile+"/"+tc.device, func(t *testing.T) {
			var found *resourceapi.Device
			for _, s := range resourceslices.SlicesFor(registry, "n", inventoryOf(t, "n", tc.profile), resourceslices.Options{}) {
				for i := range s.Spec.Devices {
					if s.Spec.Devices[i].Name == tc.device {
						found = &s.Spec.Devices[i]
					}
				}
			}
			require.NotNil(t, found)
			require.Equal(t, tc.model, *found.Attributes[names.AttrModel].StringValue)
			require.Equal(t, tc.linkGroup, *found.Attributes[names.AttrLinkGroup].StringValue)
			want := resource.MustParse(tc.memory)
			require.Zero(t, want.Cmp(found.Capacity[names.CapMemory].Value), "memory of %s", tc.device)
		})
	}
}

func bigInventory(n int, unhealthy bool) inventory.Inventory {
	var inv inventory.Inventory
	for i := 0; i < n; i++ {
		inv.Chips = append(inv.Chips, inventory.Chip{
			Vendor: ascend.Vendor, Model: "Ascend910B3", Index: i, MemoryBytes: 64 << 30, Cores: 20,
			LinkType: inventory.LinkHCCS, LinkGroup: fmt.Sprintf("hccs-%d", i/8), Healthy: !unhealthy,
		})
	}
	return inv
}

// whole publishes whole chips only, as before partitions (the default);
// partitioned adds the partitions of every chip whose model has them.
var (
	whole       = resourceslices.Options{Policy: partitions.Policy{Registry: registry, Default: partitions.ModeWhole}}
	partitioned = resourceslices.Options{Policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned}}
)

func TestSlicesSplitAtThePerSliceDeviceLimit(t *testing.T) {
	tests := []struct {
		name      string
		chips     int
		unhealthy bool
		want      []int
	}{
		{"within the limit", 128, false, []int{128}},
		{"one over the limit", 129, false, []int{128, 1}},
		{"tainted devices use the lower limit", 130, true, []int{64, 64, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slices := resourceslices.SlicesFor(registry, "big", bigInventory(tc.chips, tc.unhealthy), whole)
			var sizes []int
			seen := map[string]bool{}
			for _, s := range slices {
				sizes = append(sizes, len(s.Spec.Devices))
				require.Equal(t, int64(len(tc.want)), s.Spec.Pool.ResourceSliceCount)
				for _, d := range s.Spec.Devices {
					require.False(t, seen[d.Name], "device %s in two slices", d.Name)
					seen[d.Name] = true
				}
			}
			require.Equal(t, tc.want, sizes)
			require.Len(t, seen, tc.chips)
		})
	}
}

func TestUnhealthyChipsAreTaintedNoSchedule(t *testing.T) {
	d := wholeDevice(inventory.Chip{Vendor: cambricon.Vendor, Model: "MLU590", Index: 2,
		LinkType: inventory.LinkMLULink, LinkGroup: "mlulink-0", Healthy: false})
	require.Equal(t, "mlu-2", d.Name)
	require.False(t, *d.Attributes[names.AttrHealthy].BoolValue)
	require.Equal(t, []resourceapi.DeviceTaint{{Key: names.TaintUnhealthy, Value: resourceslices.TaintValueUnknown, Effect: resourceapi.DeviceTaintEffectNoSchedule}}, d.Taints)
}

func BenchmarkSlicesFor1000Nodes(b *testing.B) {
	inv := inventoryOf(b, "n", "mixed-910b-mlu370")
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 1000; i++ {
			_ = resourceslices.SlicesFor(registry, fmt.Sprintf("node-%d", i), inv, partitioned)
		}
	}
}

func TestPartitionedChipsPublishTheirCounterSetsInSlicesOfTheirOwn(t *testing.T) {
	slices := resourceslices.SlicesFor(registry, "big", bigInventory(20, false), partitioned)
	var sets, devices []int
	counterSets := map[string]resourceapi.CounterSet{}
	for _, s := range slices {
		require.Equal(t, int64(6), s.Spec.Pool.ResourceSliceCount)
		require.Equal(t, "big", *s.Spec.NodeName, "counter slices are node-local too")
		if len(s.Spec.SharedCounters) > 0 {
			require.Empty(t, s.Spec.Devices)
			sets = append(sets, len(s.Spec.SharedCounters))
			for _, cs := range s.Spec.SharedCounters {
				counterSets[cs.Name] = cs
			}
			continue
		}
		devices = append(devices, len(s.Spec.Devices))
	}
	require.Equal(t, []int{8, 8, 4}, sets, "at most 8 counter sets per slice")
	require.Equal(t, []int{64, 64, 12}, devices, "20 chips × (1 + 6 vNPUs), at most 64 devices that consume counters per slice")
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			require.Len(t, d.ConsumesCounters, 1, d.Name)
			cs, ok := counterSets[d.ConsumesCounters[0].CounterSet]
			require.True(t, ok, "%s consumes an existing counter set", d.Name)
			for name := range d.ConsumesCounters[0].Counters {
				require.Contains(t, cs.Counters, name)
			}
			if *d.Attributes[names.AttrType].StringValue == names.TypeChip {
				require.Equal(t, cs.Counters, d.ConsumesCounters[0].Counters, "a whole chip consumes all of its counters")
			}
		}
	}
}

func TestChipModesDecideWhatEachChipPublishes(t *testing.T) {
	inv := bigInventory(3, false)
	// vNPUs off: the shares of npu-0 are accounting only.
	inv.Chips[0].PartitionModeOff = "vNPUs are switched off for this node"
	policy, err := partitions.ParsePolicy(registry, "npu-0=Shared,npu-1=Partitioned")
	require.NoError(t, err)
	devices, sets := resourceslices.DevicesFor(registry, inv, ascend.Vendor, resourceslices.Options{Policy: policy})
	byName := map[string]resourceapi.Device{}
	for _, d := range devices {
		byName[d.Name] = d
	}
	require.Len(t, devices, 1+7+1, "npu-0 shared, npu-1 with its 6 vNPUs, npu-2 whole (the default)")
	require.Len(t, sets, 1)
	require.Equal(t, "npu-1", sets[0].Name)

	shared := byName["npu-0"]
	require.Equal(t, ptr.To(true), shared.AllowMultipleAllocations)
	require.Empty(t, shared.ConsumesCounters)
	mem := shared.Capacity[names.CapMemory]
	require.Zero(t, mem.RequestPolicy.Default.Cmp(mem.Value), "a claim that asks for no memory gets all of it: the whole chip")
	require.Zero(t, mem.RequestPolicy.ValidRange.Min.Cmp(resource.MustParse("1Gi")))
	cores := shared.Capacity[names.CapCores]
	require.True(t, cores.RequestPolicy.Default.IsZero(), "a share reserves no cores unless it asks")
	require.Zero(t, cores.RequestPolicy.ValidRange.Step.Cmp(resource.MustParse("1")))
	require.Equal(t, ptr.To(partitions.EnforcementNone), shared.Attributes[partitions.AttrShareEnforcement].StringValue, "shares are accounting only where vNPUs are off")

	whole := byName["npu-2"]
	require.Nil(t, whole.AllowMultipleAllocations)
	require.Empty(t, whole.ConsumesCounters)
	require.Equal(t, wholeDevice(inv.ChipsOf(ascend.Vendor)[2]), whole, "a Whole chip is published as before partitions")

	noTool := partitions.Policy{Registry: registry, Default: partitions.ModePartitioned, NoPartitions: true}
	devices, sets = resourceslices.DevicesFor(registry, inv, ascend.Vendor, resourceslices.Options{Policy: noTool})
	require.Len(t, devices, 3, "without a partition tool no partitions are published")
	require.Empty(t, sets)
}

// A Shared chip whose vendor's driver carves each share into a partition
// publishes the driver's grid as its request policy and says so in
// shareEnforcement; where the partition mode is off, or the library
// cannot carve, the shares stay accounting only.
func TestSharedChipsPublishWhoEnforcesTheirShares(t *testing.T) {
	inv := inventoryOf(t, "node-0", "mlu370-x8")
	for i := range inv.Chips {
		inv.Chips[i].Sources = map[string]string{cambricon.SourceSizedSMLU: "libcndev.so cndevCreateSMluProfileInfo"}
	}
	inv.Chips[1].PartitionModeOff = "sMLU mode is off on card 1"
	delete(inv.Chips[2].Sources, cambricon.SourceSizedSMLU)
	policy, err := partitions.ParsePolicy(registry, "Shared")
	require.NoError(t, err)
	devices, sets := resourceslices.DevicesFor(registry, inv, cambricon.Vendor, resourceslices.Options{Policy: policy})
	require.Empty(t, sets)
	byName := map[string]resourceapi.Device{}
	for _, d := range devices {
		byName[d.Name] = d
	}

	enforced := byName["mlu-0"]
	require.Equal(t, ptr.To(partitions.EnforcementHardware), enforced.Attributes[partitions.AttrShareEnforcement].StringValue)
	step := inv.Chips[0].MemoryBytes / (1 << 20) / 100 * (1 << 20)
	mem := enforced.Capacity[names.CapMemory]
	require.Equal(t, &resourceapi.CapacityRequestPolicy{
		Default: resource.NewQuantity(100*step, resource.BinarySI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(step, resource.BinarySI),
			Max: resource.NewQuantity(100*step, resource.BinarySI), Step: resource.NewQuantity(step, resource.BinarySI)},
	}, mem.RequestPolicy, "a step of one hundredth of the chip's memory, the whole by default")
	cores := enforced.Capacity[names.CapCores]
	require.Equal(t, &resourceapi.CapacityRequestPolicy{
		Default: resource.NewQuantity(4, resource.DecimalSI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(4, resource.DecimalSI),
			Max: resource.NewQuantity(16, resource.DecimalSI), Step: resource.NewQuantity(4, resource.DecimalSI)},
	}, cores.RequestPolicy, "4 of 16 cores, a 25% quota")

	for _, name := range []string{"mlu-1", "mlu-2"} {
		d := byName[name]
		require.Equal(t, ptr.To(partitions.EnforcementNone), d.Attributes[partitions.AttrShareEnforcement].StringValue, name)
		m := d.Capacity[names.CapMemory]
		require.Zero(t, m.RequestPolicy.ValidRange.Min.Cmp(resource.MustParse("1Gi")), name)
	}
	require.NotContains(t, wholeDevice(inv.Chips[0]).Attributes, partitions.AttrShareEnforcement, "only Shared chips have it")
}

// A Shared Ascend chip whose model's vNPU templates are multiples of one
// unit publishes its capacity in units, valid only at the templates'
// sizes and the whole chip; its cores and memory cannot be asked for on
// their own, so no request can pair them as no template does.
func TestSharedAscendChipsPublishTheirTemplatesInUnits(t *testing.T) {
	inv := bigInventory(2, false)
	inv.Chips[1].Model = "Ascend910A" // templates of no one unit
	policy, err := partitions.ParsePolicy(registry, "Shared")
	require.NoError(t, err)
	devices, _ := resourceslices.DevicesFor(registry, inv, ascend.Vendor, resourceslices.Options{Policy: policy})
	require.Len(t, devices, 2)
	d := devices[0]
	require.Equal(t, ptr.To(partitions.EnforcementHardware), d.Attributes[partitions.AttrShareEnforcement].StringValue)
	n := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	require.Equal(t, resourceapi.DeviceCapacity{Value: n(4), RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default: ptr.To(n(4)), ValidValues: []resource.Quantity{n(1), n(2), n(4)}}}, d.Capacity[names.CapShareUnits],
		"vir05_1c_16g is one unit, vir10_3c_32g two, the whole chip (the default) four")
	for _, name := range []resourceapi.QualifiedName{names.CapMemory, names.CapCores} {
		c := d.Capacity[name]
		require.True(t, c.RequestPolicy.Default.IsZero(), name)
		require.Len(t, c.RequestPolicy.ValidValues, 1, name)
		require.True(t, c.RequestPolicy.ValidValues[0].IsZero(), "%s cannot be asked for apart from the units", name)
	}
	require.Equal(t, int64(64<<30), ptr.To(d.Capacity[names.CapMemory].Value).Value(), "CEL still sees the chip's memory")

	other := devices[1]
	require.Equal(t, ptr.To(partitions.EnforcementNone), other.Attributes[partitions.AttrShareEnforcement].StringValue)
	require.NotContains(t, other.Capacity, names.CapShareUnits)
}

func TestPartitionsOfAnUnhealthyChipAreTaintedToo(t *testing.T) {
	devices, _ := resourceslices.DevicesFor(registry, bigInventory(1, true), ascend.Vendor, partitioned)
	require.Len(t, devices, 7)
	for _, d := range devices {
		require.Equal(t, []resourceapi.DeviceTaint{{Key: names.TaintUnhealthy, Value: resourceslices.TaintValueUnknown, Effect: resourceapi.DeviceTaintEffectNoSchedule}}, d.Taints, d.Name)
	}
}

// wholeDevice is the device of chip c published Whole, alone on its node.
func wholeDevice(c inventory.Chip) resourceapi.Device {
	devices, _ := resourceslices.DevicesFor(registry, inventory.Inventory{Chips: []inventory.Chip{c}}, c.Vendor, resourceslices.Options{})
	return devices[0]
}

func TestAChipWithoutNUMAAffinityPublishesNeitherNUMAKey(t *testing.T) {
	// sysfs numa_node -1: a published -1 would match every other device
	// without affinity under matchAttribute.
	inv := inventoryOf(t, "node-0", "atlas-800t-a2")
	inv.Chips[0].NUMANode = nil
	for _, s := range resourceslices.SlicesFor(registry, "node-0", inv, resourceslices.Options{}) {
		for _, d := range s.Spec.Devices {
			if d.Name != "npu-0" {
				require.Contains(t, d.Attributes, resourceapi.QualifiedName("resource.kubernetes.io/numaNode"), d.Name)
				continue
			}
			require.NotContains(t, d.Attributes, names.AttrNUMANode)
			require.NotContains(t, d.Attributes, resourceapi.QualifiedName("resource.kubernetes.io/numaNode"))
		}
	}
}

func TestOfferedTemplatesAndOmittedAttributesLeaveTheRestAsItWas(t *testing.T) {
	inv := inventoryOf(t, "node-0", "atlas-800t-a2")
	policy, err := partitions.ParsePolicy(registry, "Partitioned")
	require.NoError(t, err)
	all, allSets := resourceslices.DevicesFor(registry, inv, ascend.Vendor, resourceslices.Options{Policy: policy})
	var chips, halves []string
	for i := range inv.ChipsOf(ascend.Vendor) {
		chips = append(chips, fmt.Sprintf("npu-%d", i))
		halves = append(halves, fmt.Sprintf("npu-%d", i), fmt.Sprintf("npu-%d-vir10-3c-32g-0", i), fmt.Sprintf("npu-%d-vir10-3c-32g-1", i))
	}
	for _, tc := range []struct {
		name      string
		opts      resourceslices.Options
		wantNames []string
	}{
		{"one template", resourceslices.Options{Policy: policy, Templates: []string{"vir10-3c-32g"}}, halves},
		{"another vendor's template only: chips Whole", resourceslices.Options{Policy: policy, Templates: []string{"smlu-50p"}}, chips},
		{"omitted attributes", resourceslices.Options{Policy: policy, OmitAttributes: []resourceapi.QualifiedName{names.AttrHealthy, "logicId"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			devices, sets := resourceslices.DevicesFor(registry, inv, ascend.Vendor, tc.opts)
			if tc.wantNames == nil {
				require.Len(t, devices, len(all))
				require.Equal(t, allSets, sets)
				for i, d := range devices {
					want := all[i].DeepCopy()
					for _, k := range tc.opts.OmitAttributes {
						require.Contains(t, want.Attributes, k, "the full device %s has %s", d.Name, k)
						delete(want.Attributes, k)
					}
					require.Equal(t, *want, d)
				}
				return
			}
			var got []string
			for _, d := range devices {
				got = append(got, d.Name)
			}
			require.Equal(t, tc.wantNames, got)
			if len(got) == len(chips) {
				require.Empty(t, sets, "no slot, no counter set")
			}
		})
	}
	require.NoError(t, resourceslices.CheckTemplates(registry, []string{"vir10-3c-32g", "smlu-25p"}))
	require.ErrorContains(t, resourceslices.CheckTemplates(registry, []string{"vir10_3c_32g"}), `"vir10_3c_32g" is the slug of no partition template (known: `)
}

// The fabric attributes come from the chip's own fields, for every vendor
// (the claim status reads the same fields), and only where known: a chip
// in no super pod publishes none. A partition is in its chip's super pod.
func TestChipsPublishTheirSuperPodFromTheirOwnFields(t *testing.T) {
	// The A3 profile's dies offer no vNPU templates; MLU370 chips do.
	for profileName, devicesOfChip0 := range map[string]int{"atlas-800t-a3": 1, "mlu370-x8": 7} {
		t.Run(profileName, func(t *testing.T) {
			inv := inventoryOf(t, "node-0", profileName)
			inv.Chips[0].SuperPod, inv.Chips[0].SuperDeviceID, inv.Chips[0].ServerIndex = "7", ptr.To[int64](12648448), ptr.To[int64](3)
			inv.Chips[1].SuperPod = "7" // a super pod without the rest: only what is known
			chip0, chip1 := registry.ChipDeviceName(inv.Chips[0]), registry.ChipDeviceName(inv.Chips[1])
			seen := map[string]int{}
			for _, s := range resourceslices.SlicesFor(registry, "node-0", inv, partitioned) {
				for _, d := range s.Spec.Devices {
					parent := d.Name
					if p := d.Attributes[resourceslices.AttrParentDevice].StringValue; p != nil {
						parent = *p
					}
					want := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
					switch parent {
					case chip0:
						want = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{names.AttrSuperPod: {StringValue: ptr.To("7")},
							names.AttrSuperDeviceID: {IntValue: ptr.To[int64](12648448)}, names.AttrServerIndex: {IntValue: ptr.To[int64](3)}}
					case chip1:
						want = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{names.AttrSuperPod: {StringValue: ptr.To("7")}}
					}
					got := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
					for _, k := range []resourceapi.QualifiedName{names.AttrSuperPod, names.AttrSuperDeviceID, names.AttrServerIndex} {
						if v, ok := d.Attributes[k]; ok {
							got[k] = v
						}
					}
					require.Equal(t, want, got, "device %s", d.Name)
					seen[parent]++
				}
			}
			require.Equal(t, devicesOfChip0, seen[chip0], "chip 0 and its partitions are published")
		})
	}
}

// The Ascend reader's super pod, read through npu-smi spod-info from the
// 910B3 node's recordings with its chips named as npu-smi names 910_93
// dies, is published by the slices as each die's fabric attributes: the
// reader sets the chip's own fields, these are what reach the scheduler.
func TestDiscoveredSuperPodIsPublished(t *testing.T) {
	src := filepath.Join("..", "vendors", "ascend", "testdata", "atlas-800t-a2")
	dir := t.TempDir()
	files, err := os.ReadDir(filepath.Join(src, "npu-smi"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(src, "npu-smi", f.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name()), data, 0o644))
	}
	info, err := os.ReadFile(filepath.Join(dir, "npu-smi_info.txt"))
	require.NoError(t, err)
	for npu := range 8 {
		from, to := fmt.Sprintf("| %d     910B3 ", npu), fmt.Sprintf("| %d     Ascend910 ", npu)
		require.Contains(t, string(info), from)
		info = []byte(strings.Replace(string(info), from, to, 1))
		// npu-smi's spod-info of a 910_93 die (npu_chip_info_ext.c,
		// print_npu_spod_info): super pod 7, server 3, SDID laid out as the
		// DCMI reference says.
		spod := fmt.Sprintf("\tSDID                           : %d\n\tSuper Pod Size                 : 384\n\tSuper Pod ID                   : 7\n\tServer Index                   : 3\n", 3<<22|npu<<18|npu*2)
		require.NoError(t, os.WriteFile(filepath.Join(dir, discovery.RecordingName("npu-smi", "info", "-t", "spod-info", "-i", strconv.Itoa(npu), "-c", "0")), []byte(spod), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "npu-smi_info.txt"), info, 0o644))
	inv, err := ascend.New(ascend.Config{Root: filepath.Join(src, "root"), Runner: discovery.RecordedRunner{Dir: dir}}).Discover(t.Context())
	require.NoError(t, err)
	require.Len(t, inv.Chips, 8)
	byName := map[string]resourceapi.Device{}
	for _, s := range resourceslices.SlicesFor(registry, "node-0", inv, resourceslices.Options{}) {
		for _, d := range s.Spec.Devices {
			byName[d.Name] = d
		}
	}
	for _, c := range inv.Chips {
		d := byName[registry.ChipDeviceName(c)]
		require.Equal(t, "7", ptr.Deref(d.Attributes[names.AttrSuperPod].StringValue, ""), d.Name)
		require.Equal(t, int64(3), ptr.Deref(d.Attributes[names.AttrServerIndex].IntValue, -1), d.Name)
		require.Equal(t, int64(3<<22|c.Index<<18|c.Index*2), ptr.Deref(d.Attributes[names.AttrSuperDeviceID].IntValue, -1), d.Name)
	}
}

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

package allocation

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// node is one node's slices and what the scheduler has allocated on it so
// far, including the shares of shared devices, as the kube-scheduler keeps
// it between claims.
type node struct {
	t      *testing.T
	name   string
	cls    classes
	slices []*resourceapi.ResourceSlice
	state  structured.AllocatedState
	claims int
}

func newNode(t *testing.T, profileName string, chipModes string) *node {
	t.Helper()
	return newNodeWith(t, profileName, chipModes, nil)
}

// newNodeWith is newNode with the discovered chips changed by adjust
// first (when set).
func newNodeWith(t *testing.T, profileName string, chipModes string, adjust func(*inventory.Inventory)) *node {
	t.Helper()
	policy, err := partitions.ParsePolicy(registry, chipModes)
	require.NoError(t, err)
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, profileName, p).Discover(context.Background())
	require.NoError(t, err)
	if adjust != nil {
		adjust(&inv)
	}
	return &node{t: t, name: profileName, cls: loadClasses(t),
		slices: resourceslices.SlicesFor(registry, profileName, inv, resourceslices.Options{Policy: policy}),
		state: structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}}
}

// request is one exact-count request of a claim.
type request struct {
	class    string
	count    int64
	cel      string
	capacity map[resourceapi.QualifiedName]resource.Quantity
}

// allocate allocates a claim with the upstream allocator and, if it fits,
// records its devices (and shares) as allocated. Nil means unsatisfiable.
func (n *node) allocate(reqs ...request) []resourceapi.DeviceRequestAllocationResult {
	n.t.Helper()
	n.claims++
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("claim-%d", n.claims),
		UID: types.UID(fmt.Sprintf("uid-%d", n.claims))}}
	for i, r := range reqs {
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: r.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: r.count}
		if e.Count == 0 {
			e.Count = 1
		}
		if r.cel != "" {
			e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: r.cel}}}
		}
		if r.capacity != nil {
			e.Capacity = &resourceapi.CapacityRequirements{Requests: r.capacity}
		}
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i), Exactly: e})
	}
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, features, n.state, n.cls, n.slices, cel.NewCache(100, cel.Features{EnableConsumableCapacity: true}))
	require.NoError(n.t, err)
	res, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, []*resourceapi.ResourceClaim{claim})
	require.NoError(n.t, err)
	if res == nil {
		return nil
	}
	for _, r := range res[0].Devices.Results {
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID == nil {
			n.state.AllocatedDevices.Insert(id)
			continue
		}
		n.state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		n.state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
	}
	return res[0].Devices.Results
}

func deviceNames(results []resourceapi.DeviceRequestAllocationResult) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Device)
	}
	return out
}

// onChip selects the partitions of one chip; the driver's own domain holds
// the unqualified parentDevice and partitionTemplate attributes.
func onChip(parent string) string {
	return fmt.Sprintf(`device.attributes["accel-dra.dev"].type != "chip" && device.attributes[device.driver].parentDevice == %q`, parent)
}

func template(name string) string {
	return fmt.Sprintf(`device.attributes[device.driver].partitionTemplate == %q`, name)
}

func chip(index int) string {
	return fmt.Sprintf(`device.attributes["accel-dra.dev"].index == %d`, index)
}

func TestAPartitionAndItsWholeChipExcludeEachOther(t *testing.T) {
	tests := []struct {
		name, profile, chipClass, partClass, parent string
		chipIndex                                   int
	}{
		{"910B3 vNPU", "atlas-800t-a2", ascend.Driver, "ascend-vnpu.accel-dra.dev", "npu-2", 2},
		{"310P3 vNPU", "atlas-300i-duo", ascend.Driver, "ascend-vnpu.accel-dra.dev", "npu-0", 0},
		{"MLU370 sMLU", "mlu370-x8", cambricon.Driver, "cambricon-partition.accel-dra.dev", "mlu-5", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name+": a partition first keeps the chip from being given whole", func(t *testing.T) {
			n := newNode(t, tt.profile, "Partitioned")
			part := n.allocate(request{class: tt.partClass, cel: onChip(tt.parent)})
			require.Len(t, part, 1)
			require.Regexp(t, "^"+tt.parent+"-", part[0].Device)
			require.Nil(t, n.allocate(request{class: tt.chipClass, cel: chip(tt.chipIndex)}), "the whole chip is not free")
			other := n.allocate(request{class: tt.chipClass, count: 1})
			require.Len(t, other, 1, "other chips still are")
			require.NotEqual(t, tt.parent, other[0].Device)
		})
		t.Run(tt.name+": a whole chip first keeps its partitions from being given", func(t *testing.T) {
			n := newNode(t, tt.profile, "Partitioned")
			require.Equal(t, []string{tt.parent}, deviceNames(n.allocate(request{class: tt.chipClass, cel: chip(tt.chipIndex)})))
			require.Nil(t, n.allocate(request{class: tt.partClass, cel: onChip(tt.parent)}))
			require.Len(t, n.allocate(request{class: tt.partClass}), 1, "partitions of other chips are free")
		})
	}
}

// chipOf finds the chip's device name in a partition's (npu-5-vir05-1c-16g-0).
var chipOf = regexp.MustCompile(`^(npu|mlu)-\d+`)

func TestPartitionClaimsFitOnlyOnChipsPublishedPartitioned(t *testing.T) {
	tests := []struct {
		name, profile, chipModes, class string
		want                            []string // parents of the partitions a claim for all of them gets; nil: unsatisfiable
	}{
		{"a vNPU on whole chips (the default)", "atlas-800t-a2", "", "ascend-vnpu.accel-dra.dev", nil},
		{"an sMLU on whole chips (the default)", "mlu370-x8", "", "cambricon-partition.accel-dra.dev", nil},
		{"an sMLU on shared chips", "mlu370-x8", "Shared", "cambricon-partition.accel-dra.dev", nil},
		{"a vNPU where one chip is Partitioned", "atlas-800t-a2", "npu-5=Partitioned", "ascend-vnpu.accel-dra.dev", []string{"npu-5"}},
		{"an sMLU where one vendor's chips are Partitioned", "mixed-910b-mlu370", "mlu-*=Partitioned", "cambricon-partition.accel-dra.dev", []string{"mlu-0", "mlu-1", "mlu-2", "mlu-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, tt.profile, tt.chipModes)
			var parents []string
			for {
				res := n.allocate(request{class: tt.class})
				if res == nil {
					break
				}
				if p := chipOf.FindString(res[0].Device); !slices.Contains(parents, p) {
					parents = append(parents, p)
				}
			}
			require.Equal(t, tt.want, parents)
		})
	}
}

func TestNPartitionsFillAChipAndOneMoreIsUnsatisfiable(t *testing.T) {
	tests := []struct {
		name, profile, class, parent string
		// fill are the templates, in order, that fill the chip.
		fill []string
		// more is a template that no longer fits.
		more string
	}{
		{"910B3: 4 × vir05_1c_16g", "atlas-800t-a2", "ascend-vnpu.accel-dra.dev", "npu-0",
			[]string{"vir05_1c_16g", "vir05_1c_16g", "vir05_1c_16g", "vir05_1c_16g"}, "vir05_1c_16g"},
		{"910B3: 2 × vir10_3c_32g", "atlas-800t-a2", "ascend-vnpu.accel-dra.dev", "npu-1",
			[]string{"vir10_3c_32g", "vir10_3c_32g"}, "vir05_1c_16g"},
		{"910B3: vir10_3c_32g + 2 × vir05_1c_16g", "atlas-800t-a2", "ascend-vnpu.accel-dra.dev", "npu-7",
			[]string{"vir10_3c_32g", "vir05_1c_16g", "vir05_1c_16g"}, "vir05_1c_16g"},
		{"910A: 15 × vir02 use 30 AI cores", "atlas-800-910a", "ascend-vnpu.accel-dra.dev", "npu-3",
			[]string{"vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02", "vir02"}, "vir02"},
		{"910A: vir16 + vir08 + vir04 + vir02", "atlas-800-910a", "ascend-vnpu.accel-dra.dev", "npu-0",
			[]string{"vir16", "vir08", "vir04", "vir02"}, "vir02"},
		{"310P3: 7 AI CPUs take 7 × vir01, the 8th AI core stays idle", "atlas-300i-duo", "ascend-vnpu.accel-dra.dev", "npu-2",
			[]string{"vir01", "vir01", "vir01", "vir01", "vir01", "vir01", "vir01"}, "vir01"},
		{"310P3: vir04 + vir02 + vir01", "atlas-300i-duo", "ascend-vnpu.accel-dra.dev", "npu-1",
			[]string{"vir04", "vir02", "vir01"}, "vir01"},
		{"MLU370-X8: 4 × 1/4 sMLU", "mlu370-x8", "cambricon-partition.accel-dra.dev", "mlu-3",
			[]string{"25p.5827mb", "25p.5827mb", "25p.5827mb", "25p.5827mb"}, "25p.5827mb"},
		{"MLU590: 1/2 + 2 × 1/4 sMLU", "mlu590", "cambricon-partition.accel-dra.dev", "mlu-6",
			[]string{"50p.49152mb", "25p.24576mb", "25p.24576mb"}, "25p.24576mb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, tt.profile, "Partitioned")
			got := map[string]bool{}
			for i, tmpl := range tt.fill {
				res := n.allocate(request{class: tt.class, cel: onChip(tt.parent) + " && (" + template(tmpl) + ")"})
				require.Len(t, res, 1, "partition %d (%s) fits", i+1, tmpl)
				require.False(t, got[res[0].Device], "a partition device is given once")
				got[res[0].Device] = true
			}
			require.Nil(t, n.allocate(request{class: tt.class, cel: onChip(tt.parent) + " && (" + template(tt.more) + ")"}),
				"one more %s does not fit on %s", tt.more, tt.parent)
			require.Nil(t, n.allocate(request{class: tt.class, cel: onChip(tt.parent)}), "nor any other partition")
		})
	}
}

func TestAClaimForManyPartitionsSpreadsOverChipsWithinTheirCounters(t *testing.T) {
	n := newNode(t, "atlas-800t-a2", "Partitioned")
	// 8 chips × 4 quarter vNPUs: 32 (the most one claim may hold) fit, and
	// then nothing of the node is left.
	res := n.allocate(request{class: "ascend-vnpu.accel-dra.dev", count: 32, cel: template("vir05_1c_16g")})
	require.Len(t, res, 32)
	perChip := map[string]int{}
	for _, r := range res {
		perChip[r.Device[:len("npu-0")]]++
	}
	require.Len(t, perChip, 8)
	for chip, k := range perChip {
		require.Equal(t, 4, k, chip)
	}
	require.Nil(t, n.allocate(request{class: "ascend-vnpu.accel-dra.dev"}), "no vNPU of any template")
	require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev"}), "no whole chip")
}

// vnpusOff switches the node's vNPUs off (the declared partition mode
// off), so its Shared chips' shares are accounting only.
func vnpusOff(inv *inventory.Inventory) {
	for i := range inv.Chips {
		inv.Chips[i].PartitionModeOff = "vNPUs are switched off for this node"
	}
}

func TestASharedChipTakesClaimsUntilItsMemoryIsUsedUp(t *testing.T) {
	gi := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }
	memory := func(q resource.Quantity) map[resourceapi.QualifiedName]resource.Quantity {
		return map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: q}
	}
	shared := `device.allowMultipleAllocations == true`
	t.Run("four 16Gi shares fill a 64Gi 910B3, the fifth waits", func(t *testing.T) {
		n := newNodeWith(t, "atlas-800t-a2", "npu-0=Shared", vnpusOff)
		for i := 0; i < 4; i++ {
			res := n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: memory(gi(16))})
			require.Len(t, res, 1, "share %d", i+1)
			require.Equal(t, "npu-0", res[0].Device)
			require.NotNil(t, res[0].ShareID)
			q := res[0].ConsumedCapacity[names.CapMemory]
			require.Zero(t, q.Cmp(gi(16)))
			cores := res[0].ConsumedCapacity[names.CapCores]
			require.True(t, cores.IsZero(), "a share that asks for no cores reserves none")
		}
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: memory(gi(1))}))
	})
	t.Run("shares of different sizes and a share rounded up to the 1Gi minimum", func(t *testing.T) {
		n := newNode(t, "mlu370-x8", "Shared")
		mib := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<20, resource.BinarySI) }
		require.Len(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: chip(0), capacity: memory(mib(20000))}), 1)
		res := n.allocate(request{class: "cambricon.accel-dra.dev", cel: chip(0), capacity: memory(mib(100))})
		require.Len(t, res, 1)
		q := res[0].ConsumedCapacity[names.CapMemory]
		require.Zero(t, q.Cmp(gi(1)), "the request policy's minimum")
		// 23308 - 20000 - 1024 MiB left.
		require.Nil(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: chip(0), capacity: memory(mib(2285))}))
		require.Len(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: chip(0), capacity: memory(mib(2284))}), 1)
	})
	t.Run("cores a share reserves are used up too", func(t *testing.T) {
		n := newNodeWith(t, "atlas-800t-a2", "npu-0=Shared", vnpusOff)
		cores := func(c int64) map[resourceapi.QualifiedName]resource.Quantity {
			return map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: gi(4), names.CapCores: *resource.NewQuantity(c, resource.DecimalSI)}
		}
		require.Len(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: cores(15)}), 1)
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: cores(6)}), "20 AI cores")
		require.Len(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: cores(5)}), 1)
	})
	t.Run("a claim without capacity gets the whole shared chip, and then no share fits", func(t *testing.T) {
		n := newNodeWith(t, "atlas-800t-a2", "npu-0=Shared", vnpusOff)
		res := n.allocate(request{class: "ascend.accel-dra.dev", cel: chip(0)})
		require.Len(t, res, 1)
		q := res[0].ConsumedCapacity[names.CapMemory]
		require.Zero(t, q.Cmp(gi(64)), "the default is all of the memory")
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: memory(gi(1))}))
	})
	t.Run("a shared chip has no partitions, the Partitioned ones keep theirs", func(t *testing.T) {
		n := newNode(t, "atlas-800t-a2", "Partitioned,npu-0=Shared")
		require.Nil(t, n.allocate(request{class: "ascend-vnpu.accel-dra.dev", cel: onChip("npu-0")}))
		require.Len(t, n.allocate(request{class: "ascend-vnpu.accel-dra.dev", cel: onChip("npu-1")}), 1)
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: shared + " && " + chip(1)}), "only npu-0 is shared")
	})
}

// TestTheDemoClaimsGetTheSameChipsWithPartitionsPublished runs every demo
// claim over the demo cluster twice, with the chips published whole only
// (the default) and with partitions on every node: the whole-chip
// DeviceClasses select type "chip", so each claim gets exactly the same
// devices.
func TestTheDemoClaimsGetTheSameChipsWithPartitionsPublished(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("../../demo/cluster.yaml")
	require.NoError(t, err)
	sc, err := v1alpha1.ParseSimulatedCluster("demo/cluster.yaml", data)
	require.NoError(t, err)
	for i := range sc.Nodes {
		sc.Nodes[i].ChipModes = "" // every node takes the modes below
	}
	wholeOnly, err := simulate.BuildCluster(ctx, sc, simulate.ClusterOptions{Registry: registry})
	require.NoError(t, err)
	withPartitions, err := simulate.BuildCluster(ctx, sc, simulate.ClusterOptions{Registry: registry, Policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned}})
	require.NoError(t, err)
	require.Greater(t, len(withPartitions.Slices), len(wholeOnly.Slices))
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "../../demo/workloads"})
	require.NoError(t, err)
	before, err := simulate.Run(ctx, wholeOnly, in, simulate.Options{})
	require.NoError(t, err)
	after, err := simulate.Run(ctx, withPartitions, in, simulate.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, before.Claims)
	require.Equal(t, before, after)
	for _, c := range after.Claims {
		require.True(t, c.Allocated, "%s/%s: %s", c.Namespace, c.Name, c.Reason)
	}
}

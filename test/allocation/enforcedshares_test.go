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
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// TestTheSchedulerChargesAnEnforcedShareWhatTheDriverCarves runs the
// upstream allocator over MLU370-X8 chips published Shared whose shares
// are sMLUs (the node's libcndev makes dynamic profiles): every share is
// charged a whole number of the driver's steps, 233 MiB (1% of the
// chip's 23308 MiB) and 4 cores (a 25% quota), which is what prepare
// carves; a claim for the whole capacity waits until the shares are gone.
func TestTheSchedulerChargesAnEnforcedShareWhatTheDriverCarves(t *testing.T) {
	const step = int64(233) << 20
	mib := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<20, resource.BinarySI) }
	capacity := func(memory resource.Quantity, cores int64) map[resourceapi.QualifiedName]resource.Quantity {
		c := map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: memory}
		if cores > 0 {
			c[names.CapCores] = *resource.NewQuantity(cores, resource.DecimalSI)
		}
		return c
	}
	enforced := func(inv *inventory.Inventory) {
		for i := range inv.Chips {
			inv.Chips[i].Sources = map[string]string{cambricon.SourceSizedSMLU: "libcndev.so cndevCreateSMluProfileInfo"}
		}
	}
	onChip0 := `device.attributes["accel-dra.dev"].index == 0 && device.attributes["accel-dra.dev"].shareEnforcement == "hardware"`
	charged := func(t *testing.T, r resourceapi.DeviceRequestAllocationResult, memory, cores int64) {
		t.Helper()
		m, c := r.ConsumedCapacity[names.CapMemory], r.ConsumedCapacity[names.CapCores]
		require.Equal(t, memory, m.Value(), "memory")
		require.Equal(t, cores, c.Value(), "cores")
	}
	t.Run("four quarters fill a chip, a fifth waits", func(t *testing.T) {
		n := newNodeWith(t, "mlu370-x8", string(partitions.ModeShared), enforced)
		for i := range 4 {
			res := n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(5825), 4)})
			require.Len(t, res, 1, "share %d", i+1)
			charged(t, res[0], 25*step, 4)
		}
		require.Nil(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(233), 4)}), "no cores left")
	})
	t.Run("a request is rounded up to the driver's steps", func(t *testing.T) {
		n := newNodeWith(t, "mlu370-x8", string(partitions.ModeShared), enforced)
		res := n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(8192), 5)})
		require.Len(t, res, 1)
		charged(t, res[0], 36*step, 8) // 8192 MiB is 35.2 steps; 5 cores are 1.25 steps
		res = n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(1), 0)})
		require.Len(t, res, 1)
		charged(t, res[0], step, 4) // a share that asks for no cores gets one step
		require.Nil(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(23308), 0)}),
			"more than the most a share takes")
	})
	t.Run("a claim for the whole capacity waits until the shares are gone", func(t *testing.T) {
		n := newNodeWith(t, "mlu370-x8", string(partitions.ModeShared), enforced)
		res := n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0})
		require.Len(t, res, 1)
		charged(t, res[0], 100*step, 4) // the default: the whole chip, no sMLU
		require.Nil(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(233), 4)}))

		n = newNodeWith(t, "mlu370-x8", string(partitions.ModeShared), enforced)
		require.Len(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0, capacity: capacity(mib(233), 4)}), 1)
		require.Nil(t, n.allocate(request{class: "cambricon.accel-dra.dev", cel: onChip0}), "the whole chip waits for the share")
	})
}

// TestTheSchedulerChargesAVNPUShareExactlyItsTemplate runs the upstream
// allocator over 910B3 chips published Shared with vNPUs on: a share asks
// for accel-dra.dev/shareUnits (one unit is vir05_1c_16g's 5 cores and
// 16 GiB, two vir10_3c_32g's, four the whole chip) and is charged exactly
// one template; cores and memory asked for apart from the units, a pair
// no template may have, are never allocated on such a chip, whatever the
// class; a claim for the whole capacity waits until the shares are gone.
func TestTheSchedulerChargesAVNPUShareExactlyItsTemplate(t *testing.T) {
	units := func(n int64) map[resourceapi.QualifiedName]resource.Quantity {
		return map[resourceapi.QualifiedName]resource.Quantity{names.CapShareUnits: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	gi := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }
	onChip0 := `device.attributes["accel-dra.dev"].index == 0 && device.attributes["accel-dra.dev"].shareEnforcement == "hardware"`
	charged := func(t *testing.T, r resourceapi.DeviceRequestAllocationResult, n int64) {
		t.Helper()
		u, m, c := r.ConsumedCapacity[names.CapShareUnits], r.ConsumedCapacity[names.CapMemory], r.ConsumedCapacity[names.CapCores]
		require.Equal(t, n, u.Value(), "units")
		require.True(t, m.IsZero(), "memory follows from the units")
		require.True(t, c.IsZero(), "cores follow from the units")
	}
	t.Run("template-sized shares fill the chip, the next waits", func(t *testing.T) {
		n := newNode(t, "atlas-800t-a2", "npu-0=Shared")
		res := n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(2)})
		require.Len(t, res, 1)
		require.Equal(t, "npu-0", res[0].Device)
		charged(t, res[0], 2) // vir10_3c_32g
		for i := range 2 {
			res = n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(1)})
			require.Len(t, res, 1, "vir05_1c_16g %d", i+1)
			charged(t, res[0], 1)
		}
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(1)}), "four units in use")
	})
	t.Run("a size no template has is rounded up to the next that one has", func(t *testing.T) {
		n := newNode(t, "atlas-800t-a2", "npu-0=Shared")
		res := n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(3)})
		require.Len(t, res, 1)
		charged(t, res[0], 4) // the whole chip, which prepare gives whole
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(5)}), "more than the chip")
	})
	t.Run("cores and memory asked for apart never go to the chip", func(t *testing.T) {
		// npu-1's vNPUs are off: its shares are accounting only and take
		// memory and cores.
		shared := `device.allowMultipleAllocations == true`
		for _, c := range []map[resourceapi.QualifiedName]resource.Quantity{
			{names.CapMemory: gi(16)},
			{names.CapMemory: gi(16), names.CapCores: *resource.NewQuantity(10, resource.DecimalSI)},
			{names.CapCores: *resource.NewQuantity(5, resource.DecimalSI)},
		} {
			n := newNodeWith(t, "atlas-800t-a2", "npu-0=Shared,npu-1=Shared", func(inv *inventory.Inventory) {
				inv.Chips[1].PartitionModeOff = "vNPUs are switched off for this node"
			})
			res := n.allocate(request{class: "ascend.accel-dra.dev", cel: shared, capacity: c})
			require.Len(t, res, 1)
			require.Equal(t, "npu-1", res[0].Device, "%v: the accounting chip, never the one of vNPU templates", c)
		}
	})
	t.Run("a claim for the whole capacity waits until the shares are gone", func(t *testing.T) {
		n := newNode(t, "atlas-800t-a2", "npu-0=Shared")
		require.Len(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(1)}), 1)
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0}), "no capacity: the whole chip, the default")
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(4)}), "all four units")

		n = newNode(t, "atlas-800t-a2", "npu-0=Shared")
		res := n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0})
		require.Len(t, res, 1)
		charged(t, res[0], 4)
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(1)}))
	})
	t.Run("310P3: vir02_1c and vir04_3c, two cores a unit", func(t *testing.T) {
		n := newNode(t, "atlas-300i-duo", "npu-0=Shared")
		for _, u := range []int64{2, 1, 1} {
			res := n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(u)})
			require.Len(t, res, 1)
			charged(t, res[0], u)
		}
		require.Nil(t, n.allocate(request{class: "ascend.accel-dra.dev", cel: onChip0, capacity: units(1)}))
	})
}

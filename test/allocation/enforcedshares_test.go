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

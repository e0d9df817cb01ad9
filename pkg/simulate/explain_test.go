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

package simulate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

// Claims on Shared chips take shares and capacity as the scheduler
// records them, so a chip serves claims until its memory is gone.
func TestSharesOfAChipAreAllocatedUntilItsMemoryIsGone(t *testing.T) {
	cluster, err := clusterOf(t, "nodes:\n- {name: s, profile: mlu270, chipModes: Shared}\n", simulate.ClusterOptions{Registry: registry})
	require.NoError(t, err)
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/nine-shares.yaml"})
	require.NoError(t, err)
	res, err := simulate.Run(context.Background(), cluster, in, simulate.Options{})
	require.NoError(t, err)
	perChip := map[string]int{}
	for i, c := range res.Claims {
		if i < 8 {
			require.True(t, c.Allocated, "claim %s: %s", c.Name, c.Reason)
			perChip[c.Devices[0].Device]++
			continue
		}
		require.False(t, c.Allocated, "the ninth share finds no memory left")
	}
	require.Equal(t, map[string]int{"mlu-0": 2, "mlu-1": 2, "mlu-2": 2, "mlu-3": 2}, perChip)
}

func TestExplainCountsWhatTheAllocatorWouldSkip(t *testing.T) {
	partitioned := simulate.ClusterOptions{Registry: registry, Policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned}}
	cluster, err := clusterOf(t, "nodes:\n- {name: duo, profile: atlas-300i-duo}\n", partitioned)
	require.NoError(t, err)
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses"})
	require.NoError(t, err)
	var chips []string
	for _, s := range cluster.Slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if *d.Attributes["accel-dra.dev/type"].StringValue == "chip" {
				chips = append(chips, d.Name)
				if d.Name == "npu-1" {
					d.Taints = []resourceapi.DeviceTaint{{Key: "accel-dra.dev/unhealthy", Value: "HealthAlarm", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
				}
			}
		}
	}
	require.Equal(t, []string{"npu-0", "npu-1", "npu-2", "npu-3"}, chips)
	claim := func(tolerations ...resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "npu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ascend.accel-dra.dev", Count: 1,
				AllocationMode: resourceapi.DeviceAllocationModeExactCount, Tolerations: tolerations}}}}}}
	}
	// A vNPU of npu-0 is allocated: it draws on the chip's counters, so
	// the whole chip cannot be had either.
	var vnpu string
	for _, s := range cluster.Slices {
		for _, d := range s.Spec.Devices {
			if p, ok := d.Attributes[resourceslices.AttrParentDevice]; ok && *p.StringValue == "npu-0" && vnpu == "" {
				vnpu = d.Name
			}
		}
	}
	require.NotEmpty(t, vnpu)
	state := simulate.NewAllocatedState()
	simulate.AddAllocation(state, &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "v", Driver: "ascend.accel-dra.dev", Pool: "duo", Device: vnpu},
		// Admin access holds nothing.
		{Request: "a", Driver: "ascend.accel-dra.dev", Pool: "duo", Device: "npu-2", AdminAccess: ptr.To(true)},
	}}})
	pool := simulate.Pool{Slices: cluster.Slices, Classes: in, Allocated: state, Cache: cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})}
	for _, tc := range []struct {
		name                 string
		claim                *resourceapi.ResourceClaim
		free, inUse, tainted int
		taints               []string
	}{
		{"the tainted chip is not free", claim(), 2, 1, 1, []string{"accel-dra.dev/unhealthy=HealthAlarm:NoSchedule"}},
		{"a toleration makes it free", claim(resourceapi.DeviceToleration{Key: "accel-dra.dev/unhealthy", Operator: resourceapi.DeviceTolerationOpExists}), 3, 1, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := simulate.Explain(context.Background(), pool, tc.claim)
			require.Len(t, got, 1)
			c := got[0]
			require.Equal(t, 4, c.ClassMatched)
			require.Equal(t, 4, c.PassSelectors)
			require.Equal(t, [3]int{tc.free, tc.inUse, tc.tainted}, [3]int{c.Free, c.InUse, c.Tainted})
			require.ElementsMatch(t, tc.taints, c.Taints)
			node, have, ok := c.Nearest()
			require.True(t, ok)
			require.Equal(t, "duo", node)
			require.Equal(t, tc.free, have)
			// The allocator agrees: it gets one of the free chips.
			a, err := structured.NewAllocator(context.Background(), simulate.Features, state, in, cluster.Slices, pool.Cache)
			require.NoError(t, err)
			out, err := a.Allocate(context.Background(), cluster.Nodes[0], []*resourceapi.ResourceClaim{tc.claim})
			require.NoError(t, err)
			require.Len(t, out, 1)
			require.NotEqual(t, "npu-0", out[0].Devices.Results[0].Device)
		})
	}
}

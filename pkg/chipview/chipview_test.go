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

package chipview_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

const (
	ascend    = "ascend.accel-dra.dev"
	cambricon = "cambricon.accel-dra.dev"
)

// nodeSlices are the slices the node agent publishes for a bundled
// profile in chip modes modes, with the chips of the given indices
// unhealthy.
func nodeSlices(t testing.TB, node, prof, modes string, unhealthy ...int) []resourceapi.ResourceSlice {
	t.Helper()
	s, err := liveclustertest.ProfileSlices(registry, node, prof, modes, unhealthy...)
	require.NoError(t, err)
	return s
}

// result is an allocation result of a device of pool (= node).
func result(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "chips", Driver: driver, Pool: pool, Device: device}
}

// admin is an admin-access result.
func admin(r resourceapi.DeviceRequestAllocationResult) resourceapi.DeviceRequestAllocationResult {
	r.AdminAccess = ptr.To(true)
	return r
}

// unitsShare is a share of a Shared chip whose vNPU templates are counted
// in units (accel-dra.dev/shareUnits): its cores and memory are not asked
// for on their own.
func unitsShare(r resourceapi.DeviceRequestAllocationResult, id, units string) resourceapi.DeviceRequestAllocationResult {
	r.ShareID = ptr.To(types.UID(id))
	r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
		"accel-dra.dev/memory": resource.MustParse("0"), "accel-dra.dev/cores": resource.MustParse("0"), "accel-dra.dev/shareUnits": resource.MustParse(units),
	}
	return r
}

// claimOpt changes a claim.
type claimOpt func(*resourceapi.ResourceClaim)

// reservedFor puts pods into the claim's reservedFor.
func reservedFor(pods ...string) claimOpt {
	return func(c *resourceapi.ResourceClaim) {
		for _, p := range pods {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p, UID: types.UID(p + "-uid")})
		}
	}
}

// prepared writes the Ready entries the node agent writes after prepare,
// for every result of the claim.
func prepared(c *resourceapi.ResourceClaim) {
	for _, r := range c.Status.Allocation.Devices.Results {
		c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{
			Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: (*string)(r.ShareID),
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared"}},
		})
	}
}

// claim is an allocated claim.
func claim(ns, name string, results []resourceapi.DeviceRequestAllocationResult, opts ...claimOpt) resourceapi.ResourceClaim {
	c := resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// row is what a test expects of one chip.
type row struct {
	state   chipview.State
	mode    partitions.Mode
	holders []string // namespace/claim
	admin   []string
	pods    []string // of all holders
	left    map[string]string
	healthy bool
}

func chipByDevice(t *testing.T, v *chipview.View, node, device string) chipview.Chip {
	t.Helper()
	for _, c := range v.Chips {
		if c.Node == node && c.Device == device {
			return c
		}
	}
	require.Failf(t, "no such chip", "%s/%s", node, device)
	return chipview.Chip{}
}

func TestEachChipShowsItsStateHoldersAndCapacityLeft(t *testing.T) {
	a2 := nodeSlices(t, "a2-0", "atlas-800t-a2", "npu-0=Partitioned,npu-1=Shared", 7)
	mlu := nodeSlices(t, "infer-0", "mlu370-x8", "")
	tests := []struct {
		name   string
		claims []resourceapi.ResourceClaim
		// want by node/device; chips not named must be free and hold nothing.
		want map[[2]string]row
	}{{
		name: "nothing allocated: every chip is free, partitioned and shared chips have everything left",
		want: map[[2]string]row{
			{"a2-0", "npu-0"}: {state: chipview.Free, mode: partitions.ModePartitioned, healthy: true, left: map[string]string{"cores": "20", "memory": "64Gi", "aicpu": "6"}},
			{"a2-0", "npu-1"}: {state: chipview.Free, mode: partitions.ModeShared, healthy: true, left: map[string]string{"cores": "20", "memory": "64Gi", "shareUnits": "4"}},
			{"a2-0", "npu-7"}: {state: chipview.Free, mode: partitions.ModeWhole, healthy: false},
		},
	}, {
		name: "a whole chip allocated and not yet prepared names its claim and pod",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "train", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-2")}, reservedFor("train-0")),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-2"}: {state: chipview.Allocated, mode: partitions.ModeWhole, healthy: true, holders: []string{"ml/train"}, pods: []string{"train-0"}},
		},
	}, {
		name: "a prepared claim shared by two pods holds both of its chips",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "pair", []resourceapi.DeviceRequestAllocationResult{result(cambricon, "infer-0", "mlu-0"), result(cambricon, "infer-0", "mlu-1")}, reservedFor("a", "b"), prepared),
		},
		want: map[[2]string]row{
			{"infer-0", "mlu-0"}: {state: chipview.Prepared, mode: partitions.ModeWhole, healthy: true, holders: []string{"ml/pair"}, pods: []string{"a", "b"}},
			{"infer-0", "mlu-1"}: {state: chipview.Prepared, mode: partitions.ModeWhole, healthy: true, holders: []string{"ml/pair"}, pods: []string{"a", "b"}},
		},
	}, {
		name: "an admin-access monitor is shown apart and leaves the chip free; with a workload the chip is the workload's",
		claims: []resourceapi.ResourceClaim{
			claim("mon", "watch", []resourceapi.DeviceRequestAllocationResult{admin(result(ascend, "a2-0", "npu-2")), admin(result(ascend, "a2-0", "npu-3"))}, reservedFor("monitor-x"), prepared),
			claim("ml", "train", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-3")}, reservedFor("train-0"), prepared),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-2"}: {state: chipview.Free, mode: partitions.ModeWhole, healthy: true, admin: []string{"mon/watch"}, pods: nil},
			{"a2-0", "npu-3"}: {state: chipview.Prepared, mode: partitions.ModeWhole, healthy: true, holders: []string{"ml/train"}, admin: []string{"mon/watch"}, pods: []string{"train-0"}},
		},
	}, {
		name: "two vNPUs of a partitioned chip take their counters from it",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "small-a", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-0-vir05-1c-16g-0")}, prepared),
			claim("ml", "small-b", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-0-vir05-1c-16g-3")}),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-0"}: {state: chipview.Allocated, mode: partitions.ModePartitioned, healthy: true, holders: []string{"ml/small-a", "ml/small-b"},
				left: map[string]string{"cores": "10", "memory": "32Gi", "aicpu": "4"}},
		},
	}, {
		name: "the whole of a partitioned chip leaves nothing",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "whole", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-0")}, prepared),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-0"}: {state: chipview.Prepared, mode: partitions.ModePartitioned, healthy: true, holders: []string{"ml/whole"},
				left: map[string]string{"cores": "0", "memory": "0", "aicpu": "0"}},
		},
	}, {
		name: "two shares of a shared chip take their units from it",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "infer-a", []resourceapi.DeviceRequestAllocationResult{unitsShare(result(ascend, "a2-0", "npu-1"), "s1", "2")}, reservedFor("infer-a-0"), prepared),
			claim("ml", "infer-b", []resourceapi.DeviceRequestAllocationResult{unitsShare(result(ascend, "a2-0", "npu-1"), "s2", "1")}, reservedFor("infer-b-0"), prepared),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-1"}: {state: chipview.Prepared, mode: partitions.ModeShared, healthy: true, holders: []string{"ml/infer-a", "ml/infer-b"},
				pods: []string{"infer-a-0", "infer-b-0"}, left: map[string]string{"cores": "20", "memory": "64Gi", "shareUnits": "1"}},
		},
	}, {
		name: "a share prepared for one claim but not yet for the other is allocated",
		claims: []resourceapi.ResourceClaim{
			claim("ml", "infer-a", []resourceapi.DeviceRequestAllocationResult{unitsShare(result(ascend, "a2-0", "npu-1"), "s1", "2")}, prepared),
			claim("ml", "infer-b", []resourceapi.DeviceRequestAllocationResult{unitsShare(result(ascend, "a2-0", "npu-1"), "s2", "1")}),
		},
		want: map[[2]string]row{
			{"a2-0", "npu-1"}: {state: chipview.Allocated, mode: partitions.ModeShared, healthy: true, holders: []string{"ml/infer-a", "ml/infer-b"},
				left: map[string]string{"cores": "20", "memory": "64Gi", "shareUnits": "1"}},
		},
	}, {
		name: "a pending claim and another driver's allocation hold nothing of ours",
		claims: []resourceapi.ResourceClaim{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "pending"}},
			claim("ml", "gpu", []resourceapi.DeviceRequestAllocationResult{result("gpu.example.com", "a2-0", "npu-2")}),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := &livecluster.Snapshot{Slices: append(append([]resourceapi.ResourceSlice{}, a2...), mlu...), Claims: tc.claims}
			v, err := chipview.Build(snap, chipview.Options{Registry: registry})
			require.NoError(t, err)
			require.Len(t, v.Chips, 16, "8 chips of the Atlas 800T A2, 8 of the MLU370-X8 node")
			for _, c := range v.Chips {
				want, named := tc.want[[2]string{c.Node, c.Device}]
				if !named {
					require.Equal(t, chipview.Free, c.State, c.Device)
					require.Empty(t, c.Holders, c.Device)
					require.Empty(t, c.AdminHolders, c.Device)
					continue
				}
				require.Equal(t, want.state, c.State, "state of %s", c.Device)
				require.Equal(t, want.mode, c.Mode, "mode of %s", c.Device)
				require.Equal(t, want.healthy, c.Healthy(), "health of %s", c.Device)
				var holders, admins, pods []string
				for _, h := range c.Holders {
					holders = append(holders, h.ClaimName())
					pods = append(pods, h.Pods...)
				}
				for _, h := range c.AdminHolders {
					admins = append(admins, h.ClaimName())
				}
				require.Equal(t, want.holders, holders, "holders of %s", c.Device)
				require.Equal(t, want.admin, admins, "admin holders of %s", c.Device)
				require.Equal(t, want.pods, pods, "pods of %s", c.Device)
				left := map[string]string{}
				for k, q := range c.Left {
					left[k] = q.String()
				}
				if want.left == nil {
					want.left = map[string]string{}
				}
				require.Equal(t, want.left, left, "capacity left of %s", c.Device)
			}
		})
	}
}

func TestAChipShowsItsModelMemoryLinkGroupAndTaints(t *testing.T) {
	snap := &livecluster.Snapshot{Slices: nodeSlices(t, "train-0", "atlas-800-910a", "", 5)}
	v, err := chipview.Build(snap, chipview.Options{Registry: registry})
	require.NoError(t, err)
	require.Len(t, v.Chips, 8)
	c := chipByDevice(t, v, "train-0", "npu-5")
	require.Equal(t, "Ascend910A", c.Model)
	require.Equal(t, "32Gi", c.Memory.String())
	require.Equal(t, "hccs-1", c.LinkGroup, "chips 4-7 of an Atlas 800 are the second HCCS ring")
	require.Equal(t, ascend, c.Driver)
	require.Equal(t, int64(5), *c.Index)
	require.Equal(t, []resourceapi.DeviceTaint{{Key: "accel-dra.dev/device-file-missing", Value: "DeviceFileMissing", Effect: resourceapi.DeviceTaintEffectNoSchedule}}, c.Taints)
	require.Equal(t, "hccs-0", chipByDevice(t, v, "train-0", "npu-0").LinkGroup)
	for i, c := range v.Chips {
		require.Equal(t, int64(i), *c.Index, "chips are in index order")
	}
}

func TestOtherDriversAreListedByPoolAndNotInterpreted(t *testing.T) {
	other := resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("infer-0"),
			Pool:    resourceapi.ResourcePool{Name: "infer-0", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}},
	}
	snap := &livecluster.Snapshot{Slices: append(nodeSlices(t, "infer-0", "mlu370-x8", ""), other)}
	v, err := chipview.Build(snap, chipview.Options{Registry: registry})
	require.NoError(t, err)
	require.Len(t, v.Chips, 8, "only our chips are rows")
	require.Equal(t, []chipview.OtherPool{{Driver: "gpu.example.com", Pool: "infer-0", Node: "infer-0", Slices: 1, Devices: 2}}, v.OtherDrivers)
}

func TestSlicesOfAnOlderPoolGenerationAreSkipped(t *testing.T) {
	old := nodeSlices(t, "a2-0", "atlas-800t-a2", "")
	current := nodeSlices(t, "a2-0", "atlas-800t-a2", "Partitioned")
	for i := range current {
		current[i].Name += "-new"
		current[i].Spec.Pool.Generation = 2
	}
	v, err := chipview.Build(&livecluster.Snapshot{Slices: append(old, current...)}, chipview.Options{Registry: registry})
	require.NoError(t, err)
	require.Len(t, v.Chips, 8, "each chip once")
	for _, c := range v.Chips {
		require.Equal(t, partitions.ModePartitioned, c.Mode, "%s is as the newest generation publishes it", c.Device)
	}
}

func TestNodeLimitsTheViewAndAnUnknownNodeIsAnError(t *testing.T) {
	snap := &livecluster.Snapshot{Slices: append(nodeSlices(t, "a2-0", "atlas-800t-a2", ""), nodeSlices(t, "infer-0", "mlu370-x8", "")...)}
	v, err := chipview.Build(snap, chipview.Options{Registry: registry, Node: "infer-0"})
	require.NoError(t, err)
	require.Len(t, v.Chips, 8)
	for _, c := range v.Chips {
		require.Equal(t, "infer-0", c.Node)
		require.Equal(t, cambricon, c.Driver)
	}
	_, err = chipview.Build(snap, chipview.Options{Registry: registry, Node: "nope"})
	require.EqualError(t, err, `no ResourceSlice is published for node "nope": the node does not exist or no DRA driver runs there (accel-dra chips without --node lists the nodes that have chips)`)
}

func TestTheSummaryCountsChipsPerModel(t *testing.T) {
	slices := append(append(nodeSlices(t, "a2-0", "atlas-800t-a2", "npu-0=Partitioned", 7), nodeSlices(t, "a2-1", "atlas-800t-a2", "", 6, 7)...),
		nodeSlices(t, "infer-0", "mlu370-x8", "")...)
	claims := []resourceapi.ResourceClaim{
		claim("ml", "vnpu", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-0", "npu-0-vir05-1c-16g-0")}),
		claim("ml", "train", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a2-1", "npu-0"), result(ascend, "a2-1", "npu-7")}, prepared),
		claim("ml", "serve", []resourceapi.DeviceRequestAllocationResult{result(cambricon, "infer-0", "mlu-3")}, prepared),
		claim("mon", "watch", []resourceapi.DeviceRequestAllocationResult{admin(result(cambricon, "infer-0", "mlu-4"))}, prepared),
	}
	v, err := chipview.Build(&livecluster.Snapshot{Slices: slices, Claims: claims}, chipview.Options{Registry: registry})
	require.NoError(t, err)
	require.Equal(t, []chipview.ModelSummary{
		// a2-0: npu-0 partly held, npu-7 unhealthy; a2-1: npu-0 and
		// the unhealthy npu-7 held, npu-6 unhealthy.
		{Model: "Ascend910B3", Total: 16, Allocated: 3, Free: 11, Unhealthy: 3},
		{Model: "MLU370-X8", Total: 8, Allocated: 1, Free: 7},
	}, chipview.Summarize(v.Chips, false))
	require.Equal(t, []chipview.ModelSummary{
		{Node: "a2-0", Model: "Ascend910B3", Total: 8, Allocated: 1, Free: 6, Unhealthy: 1},
		{Node: "a2-1", Model: "Ascend910B3", Total: 8, Allocated: 2, Free: 5, Unhealthy: 2},
		{Node: "infer-0", Model: "MLU370-X8", Total: 8, Allocated: 1, Free: 7},
	}, chipview.Summarize(v.Chips, true))
}

// The Health column shows each taint, the reason naming its cause in the
// table and key=value in the wide one; a chip whose only taint has effect
// None (a warning) counts as free and healthy in the summary.
func TestHealthShowsEachCauseAndAWarningDoesNotCountUnhealthy(t *testing.T) {
	taint := func(key, value string, effect resourceapi.DeviceTaintEffect) resourceapi.DeviceTaint {
		return resourceapi.DeviceTaint{Key: key, Value: value, Effect: effect}
	}
	for _, tc := range []struct {
		name        string
		taints      []resourceapi.DeviceTaint
		short, wide string
		unhealthy   int
	}{
		{name: "healthy", short: "ok", wide: "ok"},
		{name: "a warning", taints: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthWarning", resourceapi.DeviceTaintEffectNone)},
			short: "HealthWarning:None", wide: "accel-dra.dev/health=HealthWarning:None"},
		{name: "two causes", taints: []resourceapi.DeviceTaint{
			taint("accel-dra.dev/device-file-missing", "DeviceFileMissing", resourceapi.DeviceTaintEffectNoSchedule),
			taint("accel-dra.dev/health", "HealthAlarm", resourceapi.DeviceTaintEffectNoSchedule)},
			short: "DeviceFileMissing:NoSchedule,HealthAlarm:NoSchedule",
			wide:  "accel-dra.dev/device-file-missing=DeviceFileMissing:NoSchedule,accel-dra.dev/health=HealthAlarm:NoSchedule", unhealthy: 1},
		{name: "a key without value", taints: []resourceapi.DeviceTaint{taint("accel-dra.dev/maintenance", "", resourceapi.DeviceTaintEffectNoExecute)},
			short: "maintenance:NoExecute", wide: "accel-dra.dev/maintenance:NoExecute", unhealthy: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &chipview.View{Chips: []chipview.Chip{{Node: "n", Device: "npu-0", Model: "Ascend910B3", Mode: partitions.ModeWhole, State: chipview.Free, Taints: tc.taints}}}
			for wide, want := range map[bool]string{false: tc.short, true: tc.wide} {
				var out bytes.Buffer
				require.NoError(t, chipview.PrintTable(&out, v, wide))
				require.Contains(t, strings.Fields(strings.Split(out.String(), "\n")[1]), want, "wide=%v", wide)
			}
			sum := chipview.Summarize(v.Chips, false)
			require.Equal(t, tc.unhealthy, sum[0].Unhealthy)
			require.Equal(t, 1-tc.unhealthy, sum[0].Free)
		})
	}
}

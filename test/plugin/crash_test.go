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

package plugin_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// The crash tests run one agent per vendor (a node agent serving two
// vendors starts the second driver only after the first published its
// slices, which upstream polls for once a second): chip 3 Shared, the
// others Partitioned.
var crashNodes = map[inventory.Vendor]struct{ profile, chipModes string }{
	ascend.Vendor:    {"atlas-800t-a2", "Partitioned,npu-3=Shared"},
	cambricon.Vendor: {"mlu370-x8", "Partitioned,mlu-3=Shared"},
}

// claimKind is a kind of claim of one vendor on the mixed node.
type claimKind struct {
	name   string
	vendor inventory.Vendor
	// devices are the allocated devices; a share of shareMemory and
	// shareCores each when shareMemory is set, of shareUnits (a chip
	// whose shares are vNPUs) when that is.
	devices                 []string
	shareMemory, shareCores int64
	shareUnits              int64
	partitions              int // partitions the claim makes
}

var crashKinds = []claimKind{
	{name: "Ascend whole chip", vendor: ascend.Vendor, devices: []string{"npu-0"}},
	{name: "Ascend vNPUs", vendor: ascend.Vendor, devices: []string{"npu-1-vir05-1c-16g-0", "npu-1-vir10-3c-32g-0"}, partitions: 2},
	// A share of a 910B3 with vNPUs is a vNPU: one unit, vir05_1c_16g.
	{name: "Ascend share", vendor: ascend.Vendor, devices: []string{"npu-3"}, shareUnits: 1, partitions: 1},
	{name: "Cambricon whole chip", vendor: cambricon.Vendor, devices: []string{"mlu-0"}},
	{name: "Cambricon sMLUs", vendor: cambricon.Vendor, devices: []string{"mlu-1-smlu-25p-0", "mlu-1-smlu-50p-0"}, partitions: 2},
	{name: "Cambricon share", vendor: cambricon.Vendor, devices: []string{"mlu-3"}, shareMemory: 4 << 30},
}

// allocated is a claim of kind k as the scheduler leaves it, with a fresh
// share ID per share.
func (k claimKind) allocated(name string, uid types.UID) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
	}
	c.Status.Allocation.Devices.Results = k.results(uid)
	return c
}

func (k claimKind) results(uid types.UID) []resourceapi.DeviceRequestAllocationResult {
	var out []resourceapi.DeviceRequestAllocationResult
	for i, d := range k.devices {
		r := resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: registry.DriverFor(k.vendor), Pool: nodeName, Device: d}
		if k.shareMemory > 0 || k.shareUnits > 0 {
			share := types.UID(fmt.Sprintf("%s-share-%d", uid, i))
			r.ShareID = &share
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
				names.CapMemory: *resource.NewQuantity(k.shareMemory, resource.BinarySI),
				names.CapCores:  *resource.NewQuantity(k.shareCores, resource.DecimalSI),
			}
			if k.shareUnits > 0 {
				r.ConsumedCapacity[names.CapShareUnits] = *resource.NewQuantity(k.shareUnits, resource.DecimalSI)
			}
		}
		out = append(out, r)
	}
	return out
}

// TestAKilledAgentLosesNothing kills the agent (SIGKILL) at each point of
// prepare and unprepare, for each kind of claim of both vendors: after the
// restart nothing is left without an owner, the kubelet's retry succeeds
// with the same CDI device IDs, and unprepare leaves no CDI spec, no
// partition and an empty checkpoint.
func TestAKilledAgentLosesNothing(t *testing.T) {
	agents := map[inventory.Vendor]*agent{}
	for v, n := range crashNodes {
		agents[v] = newAgent(t, n.profile, n.chipModes)
	}
	prepareFailpoints := []string{failpoint.PartitionCreated, failpoint.PrepareBeforeCDI, failpoint.PrepareAfterCDI, failpoint.PrepareAfterCheckpoint}
	unprepareFailpoints := []string{failpoint.UnprepareAfterCDI, failpoint.UnprepareBeforeCheckpoint}
	cases := 0
	for _, k := range crashKinds {
		for _, point := range append(prepareFailpoints, unprepareFailpoints...) {
			if point == failpoint.PartitionCreated && k.partitions == 0 {
				continue // never reached
			}
			cases++
			name := fmt.Sprintf("%s/%s", k.name, point)
			t.Run(name, func(t *testing.T) {
				c := k.allocated(fmt.Sprintf("case-%d", cases), types.UID(fmt.Sprintf("uid-case-%d", cases)))
				killAt(t, agents[k.vendor], k, point, c)
			})
		}
	}
}

// killAt is one case of the crash tests: it kills agent a at failpoint
// point of preparing or unpreparing claim c of kind k, restarts it, and
// checks that nothing is left without an owner, that the kubelet's retry
// succeeds with the same CDI device IDs, and that unprepare leaves no CDI
// spec, no partition and an empty checkpoint.
func killAt(t *testing.T, a *agent, k claimKind, point string, c *resourceapi.ResourceClaim) {
	a.t = t
	a.kill() // left running by a failed case
	driverName := registry.DriverFor(k.vendor)
	a.addClaim(c)
	wantIDs := cdiIDs(k.vendor, c.UID, k.devices...)
	prepare := func() {
		t.Helper()
		resp, err := a.prepare(driverName, c)
		require.NoError(t, err)
		require.Empty(t, resp[string(c.UID)].Error)
		var ids []string
		for _, d := range resp[string(c.UID)].Devices {
			ids = append(ids, d.CdiDeviceIds...)
		}
		require.Equal(t, wantIDs, ids, "the CDI device IDs of the contract")
	}
	unprepare := func() {
		t.Helper()
		resp, err := a.unprepare(driverName, c)
		require.NoError(t, err)
		require.Empty(t, resp[string(c.UID)].Error)
	}
	isPrepare := point != failpoint.UnprepareAfterCDI && point != failpoint.UnprepareBeforeCheckpoint

	if isPrepare {
		a.start(point + "=kill")
		_, err := a.prepare(driverName, c)
		require.Error(t, err, "the kubelet gets no answer")
		a.waitKilled()
		a.start("")
		var want []types.UID
		if point == failpoint.PrepareAfterCheckpoint {
			want = []types.UID{c.UID} // prepared, only the answer was lost
		}
		a.requireConsistent(k.vendor, want, "after the restart")
		prepare()
	} else {
		a.start(point + "=kill") // prepare does not pass it
		prepare()
		_, err := a.unprepare(driverName, c)
		require.Error(t, err, "the kubelet gets no answer")
		a.waitKilled()
		a.start("")
		st := a.requireConsistent(k.vendor, []types.UID{c.UID}, "after the restart the claim is still known, so the retry cleans up")
		require.NotContains(t, st.specs, c.UID, "its CDI spec was removed before the crash")
	}
	st := a.requireConsistent(k.vendor, []types.UID{c.UID}, "prepared")
	if isPrepare {
		require.Equal(t, []types.UID{c.UID}, st.specs)
		require.Len(t, st.partitions, k.partitions)
	}
	if point == failpoint.UnprepareBeforeCheckpoint {
		require.Empty(t, st.partitions, "destroyed before the crash")
		for _, d := range st.checkpoint.Claims[c.UID].Devices {
			require.Nil(t, d.Partition, "the restart forgot the destroyed partitions, so the retry cannot destroy another claim's partition that reuses an id")
		}
	}

	unprepare()
	st = a.requireConsistent(k.vendor, nil, "unprepared")
	require.Empty(t, st.specs)
	require.Empty(t, st.partitions)
	require.Empty(t, a.cdiFiles(), "no file of any kind is left in the CDI directory")
	unprepare() // the kubelet may repeat it
	a.stop()
}

// TestAKilledAgentLosesNoEnforcedShare is TestAKilledAgentLosesNothing
// for a quarter of an MLU370 published Shared on a node whose libcndev
// (the mock) carves shares: its sMLU is made at prepare and destroyed at
// unprepare like a Partitioned chip's, so each step of both is killed.
func TestAKilledAgentLosesNoEnforcedShare(t *testing.T) {
	a := cambriconLibraryAgent(t, "mlu-3=Shared")
	k := claimKind{vendor: cambricon.Vendor, devices: []string{"mlu-3"}, shareMemory: 25 * smluStep, shareCores: 4, partitions: 1}
	points := []string{failpoint.PartitionCreated, failpoint.PrepareBeforeCDI, failpoint.PrepareAfterCDI, failpoint.PrepareAfterCheckpoint,
		failpoint.UnprepareAfterCDI, failpoint.UnprepareBeforeCheckpoint}
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			killAt(t, a, k, point, k.allocated(fmt.Sprintf("enforced-%d", i), types.UID(fmt.Sprintf("uid-enforced-%d", i))))
		})
	}
}

// TestARetriedUnprepareNeverDestroysAnotherClaimsPartition: unprepare is
// killed after destroying a claim's sMLU and before saving the checkpoint;
// after the restart another claim gets a partition the tool gives the
// freed id, and the kubelet's retry of the first unprepare must leave it.
func TestARetriedUnprepareNeverDestroysAnotherClaimsPartition(t *testing.T) {
	a := newAgent(t, "mlu370-x8", string(partitions.ModePartitioned))
	first := claimKind{vendor: cambricon.Vendor, devices: []string{"mlu-1-smlu-25p-0"}}
	second := claimKind{vendor: cambricon.Vendor, devices: []string{"mlu-1-smlu-25p-1"}}
	c1, c2 := first.allocated("first", "uid-first"), second.allocated("second", "uid-second")
	a.addClaim(c1)
	a.addClaim(c2)
	drv := cambricon.Driver

	a.start(failpoint.UnprepareBeforeCheckpoint + "=kill")
	resp, err := a.prepare(drv, c1)
	require.NoError(t, err)
	require.Empty(t, resp[string(c1.UID)].Error)
	id := a.state(cambricon.Vendor).partitions[0].ID
	_, err = a.unprepare(drv, c1)
	require.Error(t, err)
	a.waitKilled()

	a.start("")
	resp, err = a.prepare(drv, c2)
	require.NoError(t, err)
	require.Empty(t, resp[string(c2.UID)].Error)
	st := a.state(cambricon.Vendor)
	require.Len(t, st.partitions, 1)
	require.Equal(t, id, st.partitions[0].ID, "the tool reuses the freed id")

	un, err := a.unprepare(drv, c1)
	require.NoError(t, err)
	require.Empty(t, un[string(c1.UID)].Error)
	st = a.requireConsistent(cambricon.Vendor, []types.UID{c2.UID})
	require.Len(t, st.partitions, 1, "the second claim's partition survives the retried unprepare of the first")
	un, err = a.unprepare(drv, c2)
	require.NoError(t, err)
	require.Empty(t, un[string(c2.UID)].Error)
	require.Empty(t, a.requireConsistent(cambricon.Vendor, nil).partitions)
	a.stop()
}

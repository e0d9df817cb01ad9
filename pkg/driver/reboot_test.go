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

package driver

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// TestStartUpForgetsGonePartitionsAndTheirClaimsCDISpecs: a claim of two
// vNPUs and a claim of a whole chip are prepared; then the vNPUs are gone
// (a reboot, or an unprepare that crashed), or the tool cannot list the
// chip. Start-up reconciliation must forget every partition that may not
// exist and remove its claim's CDI spec (on a CDI directory that survives
// a reboot it names a device node the tool hands to the next partition),
// keep the claim and its CDI device IDs for the re-prepare, and say why
// the partition is gone.
func TestStartUpForgetsGonePartitionsAndTheirClaimsCDISpecs(t *testing.T) {
	tests := []struct {
		name     string
		rebooted bool
		// brokenTool: the tool fails every command at start-up.
		brokenTool bool
		// wantForgotten: the vNPU claim's partitions and spec are gone.
		wantForgotten bool
		wantWhy       string
	}{
		{name: "after a reboot", rebooted: true, wantForgotten: true, wantWhy: "the node rebooted since the checkpoint recorded it"},
		{name: "after a reboot, the tool cannot list the chips", rebooted: true, brokenTool: true, wantForgotten: true, wantWhy: "the node rebooted"},
		{name: "after an unprepare that crashed", wantForgotten: true, wantWhy: "destroyed by an unprepare that crashed"},
		{name: "the tool cannot list the chips, no reboot", brokenTool: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx = klog.NewContext(ctx, logger)
			n := newTestNode(t)
			vnpu, whole := n.claim("uid-vnpus", vnpus...), n.claim("uid-whole", "npu-0")
			for _, c := range []*resourceapi.ResourceClaim{vnpu, whole} {
				_, _, err := n.d.prepare(ctx, c)
				require.NoError(t, err)
			}
			ids := n.d.prepared.Claims[vnpu.UID].Devices[0].CDIDeviceIDs
			require.NotEmpty(t, ids)
			require.NoError(t, os.Remove(n.runner.fake.StatePath), "the vNPUs are gone")
			if tt.rebooted {
				n.d.rebootID = "boot-2"
			}
			n.runner.broken = tt.brokenTool

			require.NoError(t, n.d.reconcilePartitions(ctx))

			_, specs, saved := n.left(t)
			require.ElementsMatch(t, []types.UID{vnpu.UID, whole.UID}, saved, "both claims stay for the re-prepare or the kubelet's unprepare")
			data, err := n.d.store.Load()
			require.NoError(t, err)
			for _, dev := range data.Claims[vnpu.UID].Devices {
				require.Equal(t, tt.wantForgotten, dev.Partition == nil, "the vNPU %s is forgotten", dev.Device)
			}
			require.Equal(t, ids, data.Claims[vnpu.UID].Devices[0].CDIDeviceIDs, "the claim keeps the CDI device IDs the kubelet recorded")
			if !tt.wantForgotten {
				require.ElementsMatch(t, []types.UID{vnpu.UID, whole.UID}, specs)
				require.Empty(t, n.d.unsure)
				return
			}
			require.Equal(t, []types.UID{whole.UID}, specs, "only the spec of the claim whose partitions are gone is removed")
			require.Equal(t, tt.brokenTool, n.d.unsure[1], "a chip not listed is listed again at the next call")
			logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			require.Contains(t, logs, tt.wantWhy)
			require.Contains(t, logs, "Removed the CDI spec of a claim whose partition no longer exists")
		})
	}
}

// TestReadyNamesTheClaimsNotPreparedAgain: /readyz names each claim of
// the checkpoint not prepared again since the reboot, and why.
func TestReadyNamesTheClaimsNotPreparedAgain(t *testing.T) {
	d := &Driver{name: "npu.accel-dra.dev"}
	require.NoError(t, d.Ready(), "no reboot")
	d.setMissing(map[types.UID]missingClaim{
		"uid-b": {ref: klog.KRef("ns", "b"), why: "creating partition npu-1-vir05-1c-16g-0: no room"},
		"uid-a": {ref: klog.KRef("ns", "a"), why: "reading the claim: timeout"},
	})
	require.EqualError(t, d.Ready(), "npu.accel-dra.dev: 2 claims prepared before the node rebooted are not prepared again (retrying): "+
		"ns/a (uid-a): reading the claim: timeout; ns/b (uid-b): creating partition npu-1-vir05-1c-16g-0: no room")
	d.setMissing(nil)
	require.NoError(t, d.Ready())
}

// TestAReprepareRoundAsksOnlyForClaimsStillThere: a round of re-prepare
// asks the helper only for the missing claims that the checkpoint still
// lists and the API still has under the same UID; one the API cannot
// read stays missing, with the error, for the next round.
func TestAReprepareRoundAsksOnlyForClaimsStillThere(t *testing.T) {
	claim := func(name string, uid types.UID) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
	}
	tests := []struct {
		name string
		// inAPI is the claim the API has under the name (nil: none);
		// apiErr fails the read instead.
		inAPI  *resourceapi.ResourceClaim
		apiErr error
		// unprepared: the kubelet unprepared it meanwhile.
		unprepared bool
		wantAsked  bool
		wantWhy    string
	}{
		{name: "still there", inAPI: claim("c", "uid-c"), wantAsked: true},
		{name: "gone from the API", inAPI: nil},
		{name: "replaced by another of the same name", inAPI: claim("c", "uid-other")},
		{name: "unprepared by the kubelet meanwhile", inAPI: claim("c", "uid-c"), unprepared: true},
		{name: "the API cannot be read", apiErr: errors.New("connection refused"), wantWhy: "reading the claim: Internal error occurred: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			n := newTestNode(t)
			var objs []runtime.Object
			if tt.inAPI != nil {
				objs = append(objs, tt.inAPI)
			}
			client := fake.NewClientset(objs...)
			if tt.apiErr != nil {
				client.PrependReactor("get", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewInternalError(tt.apiErr)
				})
			}
			n.d.kube = client
			if !tt.unprepared {
				_, _, err := n.d.prepare(ctx, n.claimIn("ns", "c", "uid-c", "npu-0"))
				require.NoError(t, err)
			}
			missing := map[types.UID]missingClaim{"uid-c": {ref: klog.KRef("ns", "c"), why: "not prepared again yet"}}

			still, req := n.d.claimsToReprepare(ctx, missing)

			if tt.wantAsked {
				require.Len(t, req.Claims, 1)
				require.Equal(t, "uid-c", req.Claims[0].Uid)
			} else {
				require.Empty(t, req.Claims)
			}
			if tt.wantWhy == "" {
				require.Empty(t, still)
				return
			}
			require.Contains(t, still, types.UID("uid-c"))
			require.Contains(t, still["uid-c"].why, tt.wantWhy)
		})
	}
}

// TestTheBootIDIsRecordedOnlyWhenEveryClaimIsBack: while a claim is
// missing the boot id stays the old one (a restart prepares again);
// once none is, it is recorded and the reboot is over.
func TestTheBootIDIsRecordedOnlyWhenEveryClaimIsBack(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	n.d.kube = fake.NewClientset()
	n.d.prepared.BootID, n.d.rebootID = "boot-1", "boot-2"
	n.d.setMissing(map[types.UID]missingClaim{"uid-c": {ref: klog.KRef("ns", "c")}})
	n.d.kube.(*fake.Clientset).PrependReactor("get", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	_, _, err := n.d.prepare(ctx, n.claimIn("ns", "c", "uid-c", "npu-0"))
	require.NoError(t, err)

	require.False(t, n.d.reprepare(ctx), "the claim cannot be read")
	data, err := n.d.store.Load()
	require.NoError(t, err)
	require.Equal(t, "boot-1", data.BootID)
	require.Error(t, n.d.Ready())

	n.d.kube = fake.NewClientset() // the claim is gone from the API
	require.True(t, n.d.reprepare(ctx))
	data, err = n.d.store.Load()
	require.NoError(t, err)
	require.Equal(t, "boot-2", data.BootID)
	require.NoError(t, n.d.Ready())
	require.Empty(t, n.d.rebootID, "later forgotten partitions are not blamed on the reboot")
}

// TestAPartitionOfAChipGoneAtStartIsForgottenAndItsClaimUnprepares: a
// claim holds a vNPU of chip 1, and the agent starts without chip 1 on
// the node. Start-up must forget the vNPU, with a warning naming it,
// and remove the claim's spec, so the kubelet's unprepare succeeds
// instead of failing at every retry ("chip 1 is not on this node any
// more"); the claim's chip on the node (npu-0) is unaffected.
func TestAPartitionOfAChipGoneAtStartIsForgottenAndItsClaimUnprepares(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(t.Context(), logger)
	n := newTestNode(t)
	gone, other := n.claim("uid-gone", vnpus...), n.claim("uid-other", "npu-0")
	for _, c := range []*resourceapi.ResourceClaim{gone, other} {
		_, _, err := n.d.prepare(ctx, c)
		require.NoError(t, err)
	}
	// The start without chip 1.
	var chips []inventory.Chip
	for _, c := range n.d.inv.Chips {
		if c.Index != 1 {
			chips = append(chips, c)
		}
	}
	n.d.inv.Chips = chips
	n.d.index(chips)

	require.NoError(t, n.d.reconcilePartitions(ctx))

	for _, dev := range n.d.prepared.Claims[gone.UID].Devices {
		require.Nil(t, dev.Partition, "%s is forgotten", dev.Device)
	}
	_, specs, _ := n.left(t)
	require.Equal(t, []types.UID{other.UID}, specs)
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	require.Contains(t, logs, "Forgetting a recorded partition whose chip is not on this node any more")
	require.Contains(t, logs, "vnpu 116 (vir05_1c_16g) on chip 1")
	for _, c := range []*resourceapi.ResourceClaim{gone, other} {
		_, err := n.d.unprepare(ctx, kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, UID: c.UID})
		require.NoError(t, err, "unprepare of %s", c.Name)
	}
	_, specs, saved := n.left(t)
	require.Empty(t, specs)
	require.Empty(t, saved)
}

// TestACallDuringTheRetryKeepsThePartitionsMadeSinceTheReboot: after a
// reboot, while a claim is still being retried (the boot id not recorded
// yet), a call lists a chip where a create failed and the tool cannot
// list it. The partitions re-made in this boot, on that chip and others,
// must stay with their specs: only start-up forgets the records of
// chips it cannot list.
func TestACallDuringTheRetryKeepsThePartitionsMadeSinceTheReboot(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	n.d.rebootID = "boot-2"
	back := []*resourceapi.ResourceClaim{n.claim("uid-chip1", "npu-1-vir05-1c-16g-0"), n.claim("uid-chip2", "npu-2-vir05-1c-16g-0")}
	for _, c := range back {
		_, _, err := n.d.prepare(ctx, c)
		require.NoError(t, err)
	}
	n.d.markUnsure(1) // a create failed there
	n.runner.broken = true

	n.d.retryOrphans(ctx)

	parts, specs, _ := n.left(t)
	require.Len(t, parts, 2)
	require.ElementsMatch(t, []types.UID{"uid-chip1", "uid-chip2"}, specs, "no spec of a partition made in this boot is removed")
	for _, c := range back {
		require.NotNil(t, n.d.prepared.Claims[c.UID].Devices[0].Partition, "%s keeps its partition", c.Name)
	}
	require.True(t, n.d.unsure[1], "the chip is listed again at the next call")
}

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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// failingRunner runs the fake vendor tool, but fails the failCreate-th
// partition create and the failDestroy-th destroy (counting from 1; 0:
// none).
type failingRunner struct {
	fake                    *profilenode.PartitionTool
	failCreate, failDestroy int
	creates, destroys       int
	// cancelCreate-th create cancels the caller's context with cancel and
	// fails, as the kubelet's deadline passing mid-create does.
	cancelCreate int
	cancel       context.CancelFunc
	// lateCreate-th create makes the partition but fails as timed out,
	// as a tool killed at its deadline or a wedged library call that
	// returns late can.
	lateCreate int
	// broken fails every command, as a vendor tool does before its
	// driver is loaded.
	broken bool
}

func (r *failingRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := discovery.CommandLine(name, args...)
	if r.broken {
		return nil, fmt.Errorf("running %s: the device driver is not loaded (injected)", cmd)
	}
	if strings.Contains(cmd, "create") {
		if r.creates++; r.creates == r.cancelCreate {
			r.cancel()
		}
		if r.creates == r.failCreate {
			return nil, fmt.Errorf("running %s: no room (injected)", cmd)
		}
		if r.creates == r.lateCreate {
			if _, err := r.fake.Run(ctx, name, args...); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("running %s: %w (injected)", cmd, discovery.ErrToolTimeout)
		}
	}
	// What exec.CommandContext does (discovery.ExecRunner).
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("running %s: %w", cmd, err)
	}
	if strings.Contains(cmd, "destroy") {
		if r.destroys++; r.destroys == r.failDestroy {
			return nil, fmt.Errorf("running %s: busy (injected)", cmd)
		}
	}
	return r.fake.Run(ctx, name, args...)
}

// testNode is a Driver on a simulated atlas-800t-a2, chips Partitioned,
// with the fake vendor tool, a CDI writer and a checkpoint in temporary
// directories: no kubelet, no API server.
type testNode struct {
	d       *Driver
	runner  *failingRunner
	cdiDir  string
	ckptDir string
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	p, err := profile.Load(registry, "atlas-800t-a2")
	require.NoError(t, err)
	inv, err := profilenode.New(registry, "node-0", p).Discover(context.Background())
	require.NoError(t, err)
	policy, err := partitions.ParsePolicy(registry, "Partitioned")
	require.NoError(t, err)
	dir := t.TempDir()
	n := &testNode{cdiDir: filepath.Join(dir, "cdi"), ckptDir: filepath.Join(dir, "state")}
	n.runner = &failingRunner{fake: &profilenode.PartitionTool{StatePath: filepath.Join(dir, "partitions.json"),
		Vendors: []vendors.Vendor{ascend.Ascend{}}, Chips: inv.Chips}}
	tool := ascend.VNPUs{}.NewTool(vendors.BackendConfig{Runner: n.runner, Library: vendors.LibraryNone})
	writer, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: n.cdiDir, HostRoot: filepath.Join(dir, "root")})
	require.NoError(t, err)
	n.d = &Driver{name: ascend.Driver, vendor: ascend.Ascend{}, names: ascend.Ascend{}.Names(), parts: ascend.VNPUs{}, node: "node-0", inv: inv.Only(ascend.Vendor),
		policy: policy, tool: tool, cdi: writer, configs: configs, store: checkpoint.New(n.ckptDir, CheckpointFile),
		prepared: checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{}}}
	n.d.index(n.d.inv.Chips)
	return n
}

func (n *testNode) claim(uid types.UID, devices ...string) *resourceapi.ResourceClaim {
	return n.claimIn("default", string(uid), uid, devices...)
}

// claimIn is claim with its namespace and name.
func (n *testNode) claimIn(namespace, name string, uid types.UID, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: ascend.Driver, Pool: "node-0", Device: d})
	}
	return c
}

// left is what the node has: partitions, claims with a CDI spec, and the
// claims of the checkpoint on disk.
func (n *testNode) left(t *testing.T) (parts []string, specs []types.UID, saved []types.UID) {
	t.Helper()
	insts, err := n.runner.fake.Instances()
	require.NoError(t, err)
	for _, i := range insts {
		parts = append(parts, i.Template)
	}
	specs, err = n.d.cdi.ClaimUIDs(ascend.Ascend{})
	require.NoError(t, err)
	data, err := n.d.store.Load()
	require.NoError(t, err)
	for uid := range data.Claims {
		saved = append(saved, uid)
	}
	return parts, specs, saved
}

var vnpus = []string{"npu-1-vir05-1c-16g-0", "npu-1-vir10-3c-32g-0"}

// blockWith moves path aside and puts a directory (a file, when dir is
// false) in its place, so writing path fails, and returns what undoes it.
func blockWith(t *testing.T, path string, dir bool) (repair func()) {
	t.Helper()
	require.NoError(t, os.Rename(path, path+".aside"))
	if dir {
		require.NoError(t, os.Mkdir(path, 0o750))
	} else {
		require.NoError(t, os.WriteFile(path, nil, 0o600))
	}
	return func() {
		require.NoError(t, os.RemoveAll(path))
		require.NoError(t, os.Rename(path+".aside", path))
	}
}

// TestAFailedPhaseRollsBackTheOnesBefore fails each phase of prepare
// that can fail once the node is changing, for a new claim of two vNPUs
// and for a claim prepared before (a kubelet retry): whatever failed,
// the node and the checkpoint are as before the call.
func TestAFailedPhaseRollsBackTheOnesBefore(t *testing.T) {
	tests := []struct {
		name    string
		retry   bool // the claim was prepared before
		breakIt func(*testing.T, *testNode) (repair func())
		wantErr string
	}{{
		name:    "the second partition cannot be made",
		breakIt: func(_ *testing.T, n *testNode) func() { n.runner.failCreate = n.runner.creates + 2; return func() {} },
		wantErr: "creating partition npu-1-vir10-3c-32g-0: ",
	}, {
		name:    "the CDI spec cannot be written",
		breakIt: func(t *testing.T, n *testNode) func() { return blockWith(t, n.cdiDir, false) },
		wantErr: "CDI",
	}, {
		name:    "the checkpoint cannot be saved",
		breakIt: func(t *testing.T, n *testNode) func() { return blockWith(t, n.d.store.Path(), true) },
		wantErr: "saving checkpoint: replacing checkpoint: ",
	}, {
		name:    "the CDI spec cannot be written on a retry",
		retry:   true,
		breakIt: func(t *testing.T, n *testNode) func() { return blockWith(t, n.cdiDir, false) },
		wantErr: "CDI",
	}, {
		name:    "the checkpoint cannot be saved on a retry",
		retry:   true,
		breakIt: func(t *testing.T, n *testNode) func() { return blockWith(t, n.d.store.Path(), true) },
		wantErr: "saving checkpoint: replacing checkpoint: ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			n := newTestNode(t)
			other := n.claim("uid-other", "npu-0")
			_, _, err := n.d.prepare(ctx, other)
			require.NoError(t, err)
			c := n.claim("uid-vnpus", vnpus...)
			wantParts, wantClaims := []string(nil), []types.UID{other.UID}
			if tt.retry {
				_, _, err := n.d.prepare(ctx, c)
				require.NoError(t, err)
				wantParts, wantClaims = []string{"vir05_1c_16g", "vir10_3c_32g"}, []types.UID{other.UID, c.UID}
			}
			memory := make(map[types.UID]checkpoint.Claim, len(n.d.prepared.Claims))
			for uid, cl := range n.d.prepared.Claims {
				memory[uid] = cl
			}

			repair := tt.breakIt(t, n)
			_, _, err = n.d.prepare(ctx, c)
			require.ErrorContains(t, err, tt.wantErr)
			repair()
			require.Equal(t, memory, n.d.prepared.Claims, "the prepared claims in memory are as before")
			parts, specs, saved := n.left(t)
			require.Equal(t, wantParts, parts, "partitions made by the failed call are destroyed, those of an earlier prepare kept")
			require.ElementsMatch(t, wantClaims, specs, "a new claim's CDI spec is removed, an earlier prepare's kept")
			require.ElementsMatch(t, wantClaims, saved, "the checkpoint on disk is unchanged")

			_, _, err = n.d.prepare(ctx, c)
			require.NoError(t, err, "the kubelet's retry succeeds")
			parts, specs, saved = n.left(t)
			require.Equal(t, []string{"vir05_1c_16g", "vir10_3c_32g"}, parts)
			require.ElementsMatch(t, []types.UID{other.UID, c.UID}, specs)
			require.ElementsMatch(t, []types.UID{other.UID, c.UID}, saved)
		})
	}
}

// TestAnUnprepareThatFailsHalfwayForgetsWhatItDestroyed: the second of a
// claim's two vNPUs cannot be destroyed. The claim stays prepared with
// only that one, in memory and on disk, so when another claim gets a
// vNPU of the id the first one freed, the kubelet's retry of the
// unprepare leaves that vNPU alone.
func TestAnUnprepareThatFailsHalfwayForgetsWhatItDestroyed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	c := n.claim("uid-vnpus", vnpus...)
	_, _, err := n.d.prepare(ctx, c)
	require.NoError(t, err)
	obj := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, UID: c.UID}

	n.runner.failDestroy = n.runner.destroys + 2
	_, err = n.d.unprepare(ctx, obj)
	require.ErrorContains(t, err, "claim default/uid-vnpus (uid-vnpus): destroying partition vnpu 117 (vir10_3c_32g) on chip 1 of device npu-1-vir10-3c-32g-0: ")
	parts, specs, saved := n.left(t)
	require.Equal(t, []string{"vir10_3c_32g"}, parts)
	require.Empty(t, specs, "the CDI spec is removed first")
	require.Equal(t, []types.UID{c.UID}, saved, "the claim stays for the retry")
	data, err := n.d.store.Load()
	require.NoError(t, err)
	for _, st := range []checkpoint.Claim{n.d.prepared.Claims[c.UID], data.Claims[c.UID]} {
		require.Nil(t, st.Devices[0].Partition, "the destroyed vNPU is forgotten")
		require.Equal(t, 117, st.Devices[1].Partition.ID, "the other is still to destroy")
	}

	again := n.claim("uid-again", "npu-1-vir05-1c-16g-1")
	_, _, err = n.d.prepare(ctx, again)
	require.NoError(t, err)
	require.Equal(t, 116, n.d.prepared.Claims[again.UID].Devices[0].Partition.ID, "the tool reuses the freed id")
	_, err = n.d.unprepare(ctx, obj)
	require.NoError(t, err)
	parts, _, saved = n.left(t)
	require.Equal(t, []string{"vir05_1c_16g"}, parts, "the other claim's vNPU of the reused id survives the retry")
	require.Equal(t, []types.UID{again.UID}, saved)
}

// TestARollbackOutlivesTheKubeletsDeadline: the kubelet's context ends
// while prepare makes the second of a claim's vNPUs. The rollback must
// still destroy the first one: it runs under a context of its own.
func TestARollbackOutlivesTheKubeletsDeadline(t *testing.T) {
	_, logCtx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	ctx, cancel := context.WithCancel(logCtx)
	n.runner.cancelCreate, n.runner.cancel = n.runner.creates+2, cancel
	_, _, err := n.d.prepare(ctx, n.claim("uid-vnpus", vnpus...))
	require.ErrorIs(t, err, context.Canceled)
	parts, specs, saved := n.left(t)
	require.Empty(t, parts, "the first vNPU is destroyed although the call's context ended")
	require.Empty(t, specs)
	require.Empty(t, saved)
	require.Empty(t, n.d.prepared.Orphans)
}

// TestAPartitionARollbackCannotDestroyIsRecordedAndDestroyedLater: the
// second vNPU cannot be made and the first cannot be destroyed again.
// The checkpoint records it, so the next call (or start-up) destroys it,
// and a record whose id a claim holds by then is only forgotten.
func TestAPartitionARollbackCannotDestroyIsRecordedAndDestroyedLater(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	n.runner.failCreate, n.runner.failDestroy = n.runner.creates+2, n.runner.destroys+1
	_, _, err := n.d.prepare(ctx, n.claim("uid-vnpus", vnpus...))
	require.ErrorContains(t, err, "creating partition npu-1-vir10-3c-32g-0: ")
	parts, _, _ := n.left(t)
	require.Equal(t, []string{"vir05_1c_16g"}, parts, "left by the failed destroy")
	data, err := n.d.store.Load()
	require.NoError(t, err)
	require.Len(t, data.Orphans, 1, "the checkpoint records it")
	require.Equal(t, "vir05_1c_16g", data.Orphans[0].Template)

	n.d.retryOrphans(ctx)
	parts, _, _ = n.left(t)
	require.Empty(t, parts, "the next call destroys it")
	data, err = n.d.store.Load()
	require.NoError(t, err)
	require.Empty(t, data.Orphans)

	// Again, but the id is reused by a claim before the retry: the record
	// is dropped and the claim's vNPU stays.
	n.runner.failCreate, n.runner.failDestroy = n.runner.creates+2, n.runner.destroys+1
	_, _, err = n.d.prepare(ctx, n.claim("uid-vnpus", vnpus...))
	require.Error(t, err)
	require.Len(t, n.d.prepared.Orphans, 1)
	orphan := n.d.prepared.Orphans[0]
	chip, _ := n.d.chipByIndex(orphan.Chip)
	require.NoError(t, n.d.tool.Destroy(ctx, chip, fromCheckpoint(&orphan)), "destroyed behind the driver's back")
	other := n.claim("uid-other", "npu-1-vir05-1c-16g-1")
	_, _, err = n.d.prepare(ctx, other)
	require.NoError(t, err)
	require.Equal(t, orphan.ID, n.d.prepared.Claims[other.UID].Devices[0].Partition.ID, "the tool reuses the id")
	n.d.retryOrphans(ctx)
	parts, _, _ = n.left(t)
	require.Equal(t, []string{"vir05_1c_16g"}, parts, "the other claim's vNPU of the reused id survives")
	require.Empty(t, n.d.prepared.Orphans)
}

// TestAPartitionACreateMadeAfterItsDeadlineIsRemovedByTheNextCall: the
// tool times out creating the second vNPU but makes it anyway. The driver
// does not know it; the next call lists the chip and destroys it, and
// leaves the vNPUs claims hold.
func TestAPartitionACreateMadeAfterItsDeadlineIsRemovedByTheNextCall(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	n := newTestNode(t)
	held := n.claim("uid-held", "npu-1-vir05-1c-16g-1")
	_, _, err := n.d.prepare(ctx, held)
	require.NoError(t, err)
	n.runner.lateCreate = n.runner.creates + 2
	_, _, err = n.d.prepare(ctx, n.claim("uid-vnpus", vnpus...))
	require.ErrorIs(t, err, discovery.ErrToolTimeout)
	parts, _, _ := n.left(t)
	require.ElementsMatch(t, []string{"vir05_1c_16g", "vir10_3c_32g"}, parts, "the late vNPU is there, the rolled back one destroyed")

	n.d.retryOrphans(ctx) // what the next call does first
	parts, _, saved := n.left(t)
	require.Equal(t, []string{"vir05_1c_16g"}, parts, "only the held claim's vNPU is left")
	require.Equal(t, []types.UID{held.UID}, saved)
	require.Empty(t, n.d.unsure)
}

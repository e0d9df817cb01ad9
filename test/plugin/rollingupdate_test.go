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
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// TestDuringARollingUpdateBothPodsShareTheState starts the old and the new
// pod of a DaemonSet update side by side on the same directories: what one
// prepared, the other sees, so neither hands out a chip twice, and the new
// one can unprepare what the old one prepared.
func TestDuringARollingUpdateBothPodsShareTheState(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor})
	n.stop() // the harness's own instance is not a rolling-update one

	start := func(podUID types.UID) (*driver.Driver, drapb.DRAPluginClient) {
		_, ctx := ktesting.NewTestContext(t)
		writer, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: n.cdiDir, HostRoot: n.root})
		require.NoError(t, err)
		d, err := driver.Start(ctx, driver.Config{
			Vendor: vendorOf(t, n.vendor), NodeName: nodeName, Inventory: n.inv, CDI: writer, Configs: configs, StateDir: n.stateDir, KubeClient: n.client,
			RegistrarDir: n.regDir, PluginDataDir: filepath.Join(n.pluginDir, n.driverName), PodUID: podUID,
		})
		require.NoError(t, err)
		t.Cleanup(d.Stop)
		n.ctx = ctx
		reg := n.dial(filepath.Join(n.regDir, kubeletplugin.RollingUpdateRegistrarSocketFile(n.regDir, n.driverName, podUID)))
		info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{})
		require.NoError(t, err)
		return d, drapb.NewDRAPluginClient(n.dial(info.Endpoint))
	}
	oldDriver, oldPod := start("pod-old")
	_, newPod := start("pod-new")

	x := n.claim("x", []string{"npu-0"})
	n.kubelet = oldPod
	n.mustPrepare(x)

	n.kubelet = newPod
	y := n.claim("y", []string{"npu-0"})
	require.Contains(t, n.prepare(y)[string(y.UID)].Error, "device npu-0 is already prepared for claim default/x",
		"the new pod knows what the old one prepared")
	n.unprepare(x)
	n.mustPrepare(y)

	n.kubelet = oldPod
	z := n.claim("z", []string{"npu-0"})
	require.Contains(t, n.prepare(z)[string(z.UID)].Error, "already prepared for claim default/y", "and the old pod what the new one did")
	require.Equal(t, []types.UID{y.UID}, oldDriver.PreparedClaims())
}

// TestASurgedAgentWaitsForThePrepareInFlight: the old pod of a rolling
// update is in a prepare, its vNPU made and not yet in the checkpoint,
// when the new pod starts on the same directories (maxSurge). The new
// pod's start-up reconciliation must wait for that call (the helper's
// serialize.lock) instead of destroying the vNPU as one the checkpoint
// does not list: else the old pod answers with a destroyed vNPU, the next
// claim gets the same id, and two claims' containers get one device node.
func TestASurgedAgentWaitsForThePrepareInFlight(t *testing.T) {
	old := newAgent(t, "atlas-800t-a2", "Partitioned")
	old.cfg.PodUID = "pod-old"
	pauses := t.TempDir()
	old.env = []string{failpoint.PauseDirEnv + "=" + pauses}
	old.start(failpoint.PartitionCreated + "=pause")
	drv := registry.DriverFor(ascend.Vendor)
	x := claimKind{vendor: ascend.Vendor, devices: []string{"npu-1-vir05-1c-16g-0"}}.allocated("x", "uid-x")
	y := claimKind{vendor: ascend.Vendor, devices: []string{"npu-1-vir05-1c-16g-1"}}.allocated("y", "uid-y")
	old.addClaim(x)
	old.addClaim(y)

	type answer struct {
		resp map[string]*drapb.NodePrepareResourceResponse
		err  error
	}
	inFlight := make(chan answer, 1)
	go func() {
		resp, err := old.prepare(drv, x)
		inFlight <- answer{resp, err}
	}()
	paused := filepath.Join(pauses, failpoint.PartitionCreated+".paused")
	require.Eventually(t, func() bool { _, err := os.Stat(paused); return err == nil }, time.Minute, 10*time.Millisecond,
		"the old pod's prepare made the vNPU")

	surged := old.surge("pod-new")
	surged.launch("")
	// Until the old pod's call ends the new one either waits for the lock
	// (it says so) or, without it, reconciles and registers.
	require.Eventually(t, func() bool {
		out, _ := os.ReadFile(surged.log.Name())
		if strings.Contains(string(out), "Waiting for the other instance's call to finish before start-up reconciliation") {
			return true
		}
		_, err := os.Stat(surged.registrarSocket(drv))
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the new pod starts")
	require.NoError(t, os.WriteFile(filepath.Join(pauses, failpoint.PartitionCreated+".release"), nil, 0o600))
	got := <-inFlight
	require.NoError(t, got.err)
	require.Empty(t, got.resp[string(x.UID)].Error)
	surged.register()

	resp, err := surged.prepare(drv, y)
	require.NoError(t, err)
	require.Empty(t, resp[string(y.UID)].Error)
	old.stop()

	st := surged.requireConsistent(ascend.Vendor, []types.UID{x.UID, y.UID}, "after the rolling update")
	require.Len(t, st.partitions, 2, "x's vNPU survived the new pod's start, y has its own")
	nodes := map[string]types.UID{}
	for _, c := range []*resourceapi.ResourceClaim{x, y} {
		ctr := containerOf(t, surged.cfg.CDIDir, st.checkpoint.Claims[c.UID].Devices[0].CDIDeviceIDs)
		for _, p := range devicePaths(ctr) {
			if slices.Contains(surged.inv.SharedDeviceNodes[ascend.Vendor], p) {
				continue // every container of the vendor has these
			}
			require.NotContains(t, nodes, p, "claims %s and %s both get %s", nodes[p], c.UID, p)
			nodes[p] = c.UID
		}
	}
	require.Len(t, nodes, 2, "each claim's container gets its own vNPU device node: %v", nodes)
	surged.stop()
}

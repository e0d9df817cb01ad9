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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// adminResults are admin-access allocation results for devices, as the
// scheduler makes them for a request with adminAccess: true.
func (n *node) adminResults(devices ...string) []resourceapi.DeviceRequestAllocationResult {
	out := make([]resourceapi.DeviceRequestAllocationResult, 0, len(devices))
	for _, d := range devices {
		out = append(out, resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: n.driverName, Pool: nodeName, Device: d, AdminAccess: ptr.To(true)})
	}
	return out
}

// checkpointDevices reads the devices the checkpoint file lists for a claim.
func (n *node) checkpointDevices(uid types.UID) []map[string]any {
	n.t.Helper()
	raw, err := os.ReadFile(filepath.Join(n.stateDir, driver.CheckpointFile))
	require.NoError(n.t, err)
	var file struct {
		Data struct {
			Claims map[types.UID]struct {
				Devices []map[string]any `json:"devices"`
			} `json:"claims"`
		} `json:"data"`
	}
	require.NoError(n.t, json.Unmarshal(raw, &file))
	return file.Data.Claims[uid].Devices
}

func TestAnAdminClaimAndAClaimOfTheSameChipArePreparedSideBySideInEitherOrder(t *testing.T) {
	vendors := []struct {
		profile string
		vendor  inventory.Vendor
		chip    string
		node    string
		visible string
	}{
		{profile: "atlas-800t-a2", vendor: ascend.Vendor, chip: "npu-3", node: "/dev/davinci3", visible: "ASCEND_VISIBLE_DEVICES"},
		{profile: "mlu370-x8", vendor: cambricon.Vendor, chip: "mlu-3", node: "/dev/cambricon_dev3", visible: "CAMBRICON_VISIBLE_DEVICES"},
	}
	for _, v := range vendors {
		for _, adminFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s admin first %v", v.vendor, adminFirst), func(t *testing.T) {
				n := startNode(t, nodeOptions{Profile: v.profile, Vendor: v.vendor, ChipModes: "Whole"})
				work := n.claim("train", []string{v.chip})
				monitor := n.claimWithResults("monitor", n.adminResults(chipNames(v.chip[:3], 8)...))
				var workIDs, monitorIDs []string
				if adminFirst {
					monitorIDs = n.mustPrepare(monitor)
					workIDs = n.mustPrepare(work)
				} else {
					workIDs = n.mustPrepare(work)
					monitorIDs = n.mustPrepare(monitor)
				}

				mon := n.container(monitorIDs)
				require.Contains(t, devicePaths(mon), v.node, "the monitor gets the chip another claim holds")
				require.Len(t, monitorIDs, 8, "and every other chip of the node")
				env := envMap(mon)
				require.Equal(t, "true", env["DRA_ADMIN_ACCESS"])
				require.Equal(t, "0,1,2,3,4,5,6,7", env[v.visible])
				require.Equal(t, "true", env["DRA_DEVICE_"+cdiKey(v.chip)+"_ADMIN_ACCESS"])
				wenv := envMap(n.container(workIDs))
				require.NotContains(t, wenv, "DRA_ADMIN_ACCESS", "the workload's container is a normal one")
				require.Equal(t, "3", wenv[v.visible])

				devs := n.checkpointDevices(monitor.UID)
				require.Len(t, devs, 8)
				for _, d := range devs {
					require.Equal(t, "admin", d["kind"], "the checkpoint records which results are admin: %v", d)
				}
				require.Equal(t, "chip", n.checkpointDevices(work.UID)[0]["kind"])

				other := n.claim("other", []string{v.chip})
				require.Contains(t, n.prepare(other)[string(other.UID)].Error, "device "+v.chip+" is already prepared for claim default/train",
					"an admin claim does not make a held chip free")

				n.unprepare(monitor)
				require.Len(t, n.cdiFiles(), 1, "unpreparing the monitor leaves the workload's spec")
				require.Equal(t, []types.UID{work.UID}, n.driver.PreparedClaims())
				require.Equal(t, workIDs, n.mustPrepare(work), "and its state")
				n.unprepare(work)
				require.Empty(t, n.cdiFiles())
			})
		}
	}
}

// cdiKey is the stem of a device's variables without DRA_DEVICE_.
func cdiKey(device string) string {
	out := []byte(device)
	for i, c := range out {
		if c == '-' {
			out[i] = '_'
		} else if c >= 'a' && c <= 'z' {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

func TestAnAdminClaimNeverTouchesPartitionsNorShares(t *testing.T) {
	t.Run("partitions", func(t *testing.T) {
		n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "Partitioned"})
		work := n.claim("infer", []string{"npu-2-vir05-1c-16g-0"})
		n.mustPrepare(work)
		require.Len(t, n.commands.changes(), 1)
		before := n.partitionsOnChips()

		// An admin request of the vNPU class gets a partition device, one
		// of the whole-chip class its chip: neither makes a vNPU.
		monitor := n.claimWithResults("monitor", n.adminResults("npu-2-vir05-1c-16g-0", "npu-2-vir10-3c-32g-0", "npu-2"))
		ids := n.mustPrepare(monitor)
		require.Empty(t, n.commands.changes(), "no partition created for an admin claim")
		require.Equal(t, before, n.partitionsOnChips())
		ctr := n.container(ids)
		require.Equal(t, []string{"/dev/davinci2", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, devicePaths(ctr),
			"the chip's own node, not a vNPU's")
		require.NotContains(t, envMap(ctr), "ASCEND_RUNTIME_OPTIONS", "an admin container is not a vNPU container")

		n.unprepare(monitor)
		require.Empty(t, n.commands.changes(), "nor destroyed when it goes")
		require.Equal(t, before, n.partitionsOnChips())
		n.unprepare(work)
		require.Len(t, n.commands.changes(), 1)
	})
	t.Run("shares", func(t *testing.T) {
		n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "npu-0=Shared", VNPUsOff: true})
		share := func(id string, memory resource.Quantity) resourceapi.DeviceRequestAllocationResult {
			return n.share("npu-0", id, memory)
		}
		a := n.claimWithResults("a", []resourceapi.DeviceRequestAllocationResult{share("11111111-1111-1111-1111-111111111111", gi(40))})
		n.mustPrepare(a)
		admin := share("22222222-2222-2222-2222-222222222222", gi(64))
		admin.AdminAccess = ptr.To(true)
		monitor := n.claimWithResults("monitor", []resourceapi.DeviceRequestAllocationResult{admin})
		ids := n.mustPrepare(monitor)
		env := envMap(n.container(ids))
		require.Equal(t, "true", env["DRA_ADMIN_ACCESS"])
		require.NotContains(t, env, "DRA_DEVICE_NPU_0_MEMORY", "an admin claim has no share")
		require.NotContains(t, n.checkpointDevices(monitor.UID)[0], "share")

		b := n.claimWithResults("b", []resourceapi.DeviceRequestAllocationResult{share("33333333-3333-3333-3333-333333333333", gi(24))})
		n.mustPrepare(b) // 40Gi + 24Gi fit in 64Gi only if the admin claim counts nothing
		n.unprepare(monitor, a, b)
		require.Empty(t, n.cdiFiles())
	})
}

func TestAdminResultsStayAdminAcrossRestartsAndACorruptCheckpoint(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "Whole"})
	monitor := n.claimWithResults("monitor", n.adminResults("npu-0", "npu-1"))
	ids := n.mustPrepare(monitor)
	n.restart()
	work := n.claim("train", []string{"npu-0"})
	n.mustPrepare(work)
	n.unprepare(work)

	n.stop()
	require.NoError(t, os.WriteFile(filepath.Join(n.stateDir, driver.CheckpointFile), []byte("{not json"), 0o600))
	n.start()
	devs := n.checkpointDevices(monitor.UID)
	require.Len(t, devs, 2, "the admin claim is rebuilt from its CDI spec")
	for _, d := range devs {
		require.Equal(t, "admin", d["kind"], "and stays admin: %v", d)
	}
	n.mustPrepare(work) // still not blocked by the monitor
	require.Equal(t, ids, n.mustPrepare(monitor))
	n.unprepare(monitor, work)
	require.Empty(t, n.cdiFiles())
}

func TestAClaimWithAnAdminAndANormalRequestOfOneChipGetsBoth(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "Whole"})
	results := append(n.adminResults("npu-0"), resourceapi.DeviceRequestAllocationResult{Request: "work", Driver: n.driverName, Pool: nodeName, Device: "npu-0"})
	results[0].Request = "debug"
	c := n.claimWithResults("mixed", results)
	resp := n.prepare(c)[string(c.UID)]
	require.Empty(t, resp.Error)
	require.Len(t, resp.Devices, 2)
	var ids []string
	for _, d := range resp.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	env := envMap(n.container(ids))
	require.NotContains(t, env, "DRA_ADMIN_ACCESS", "not every device of the claim is admin")
	require.Equal(t, "true", env["DRA_DEVICE_NPU_0_ADMIN_1_ADMIN_ACCESS"], "the admin one is told apart")
	require.NotContains(t, env, "DRA_DEVICE_NPU_0_ADMIN_ACCESS")
	n.unprepare(c)
}

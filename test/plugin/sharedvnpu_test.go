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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// ascendLibraryAgent prepares an agent on the Atlas 800T A2 fixture node
// (8 × 910B3) read through the mock libdcmi, its fixture with extra lines,
// chips published as chipModes says: vNPUs are made and destroyed with
// dcmi_create_vdevice and dcmi_set_destroy_vdevice, recorded in the host's
// /etc/vnpu.cfg under its lock, as Partitioned vNPUs are.
func ascendLibraryAgent(t *testing.T, chipModes string, extra ...string) *agent {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	out, err := exec.Command("cp", "-a", dcmiTestdata+"/atlas-800t-a2/root/.", root).CombinedOutput()
	require.NoError(t, err, "copying the fixture root: %s", out)
	lib := filepath.Join(dir, "libdcmi.so")
	out, err = exec.Command("gcc", "-shared", "-fPIC", "-I", dcmiTestdata+"/dcmi", "-o", lib, dcmiTestdata+"/dcmi/mock_dcmi.c").CombinedOutput()
	require.NoError(t, err, "building the mock libdcmi.so: %s", out)
	text, err := os.ReadFile(filepath.Join(dcmiTestdata, "dcmi", "atlas-800t-a2.txt"))
	require.NoError(t, err)
	fixture := filepath.Join(dir, "dcmi.txt")
	require.NoError(t, os.WriteFile(fixture, []byte(string(text)+strings.Join(extra, "\n")+"\n"), 0o644))
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", fixture)
	t.Setenv("ACCEL_DRA_DCMI_STATE", filepath.Join(dir, "dcmi.state"))
	// The host's vNPU lock directory and config (ascend.VNPUHostFiles).
	host := filepath.Join(dir, "host")
	require.NoError(t, os.MkdirAll(filepath.Join(host, "run", "vnpu_cfg_lock"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(host, "etc"), 0o755))
	t.Setenv("ACCEL_DRA_DCMI_ROOT", host)
	cfg := agentConfig{Root: root, ChipModes: chipModes,
		Libraries: map[string]string{ascend.Option: lib},
		Tools:     map[string]string{ascend.NpuSmi: libraryOnlyTool(t, dir)}}
	inv, err := source.Discover(ctx, cfg.discovery())
	require.NoError(t, err)
	require.Empty(t, inv.Chips[3].PartitionModeOff, "the fixture node is in vNPU docker mode")
	return newAgentOf(t, inv, cfg)
}

// dcmiInstances are the vNPUs in the mock libdcmi's state (mock_dcmi.c
// save_state: "<logic id> <vNPU id> <template>"); the fixture's logic ids
// are the chips' indexes.
func dcmiInstances(t testing.TB) []vendors.Instance {
	t.Helper()
	raw, err := os.ReadFile(os.Getenv("ACCEL_DRA_DCMI_STATE"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []vendors.Instance
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var chip, id int
		var template string
		if n, _ := fmt.Sscanf(l, "%d %d %s", &chip, &id, &template); n != 3 {
			continue
		}
		out = append(out, vendors.Instance{Type: ascend.PartitionType, Chip: chip, ID: id, Template: template, DeviceNode: fmt.Sprintf("/dev/vdavinci%d", id)})
	}
	return out
}

// vnpuShare is a claim of one share of a units of device, as the scheduler
// allocates it under the chip's request policy; units 0 leaves the
// capacity out (the policy's default, the whole chip).
func vnpuShare(name, device string, units int64) *resourceapi.ResourceClaim {
	k := claimKind{vendor: ascend.Vendor, devices: []string{device}, shareUnits: units}
	if units == 0 {
		k.shareMemory = 1 // a share with no units consumed
	}
	c := k.allocated(name, types.UID("uid-"+name))
	if units == 0 {
		c.Status.Allocation.Devices.Results[0].ConsumedCapacity = nil
	}
	return c
}

// claimSpec is the CDI spec the agent wrote for claim c, as its JSON.
func (a *agent) claimSpec(c *resourceapi.ResourceClaim) string {
	a.t.Helper()
	entries, err := os.ReadDir(a.cfg.CDIDir)
	require.NoError(a.t, err)
	for _, e := range entries {
		if strings.Contains(e.Name(), string(c.UID)) {
			raw, err := os.ReadFile(filepath.Join(a.cfg.CDIDir, e.Name()))
			require.NoError(a.t, err)
			return string(raw)
		}
	}
	require.Failf(a.t, "no CDI spec", "of claim %s in %s", c.Name, a.cfg.CDIDir)
	return ""
}

// mustPrepareAll prepares claims with driver and requires each to succeed.
func (a *agent) mustPrepareAll(claims ...*resourceapi.ResourceClaim) {
	a.t.Helper()
	for _, c := range claims {
		a.addClaim(c)
	}
	resp, err := a.prepare(ascend.Driver, claims...)
	require.NoError(a.t, err)
	for _, c := range claims {
		require.Empty(a.t, resp[string(c.UID)].Error, c.Name)
	}
}

// TestSharesOfAnEnforcedAscendChipAreVNPUsOfTheirTemplate: two claims
// share 910B3 chip 3, two units and one; DCMI makes a vir10_3c_32g and a
// vir05_1c_16g vNPU, recorded in the host's /etc/vnpu.cfg; each container
// gets only its vNPU, as Huawei's device plugin gives one; a restart
// reuses them and unprepare destroys them.
func TestSharesOfAnEnforcedAscendChipAreVNPUsOfTheirTemplate(t *testing.T) {
	a := ascendLibraryAgent(t, "npu-3=Shared")
	a.start("")
	defer a.kill()
	big, small := vnpuShare("big", "npu-3", 2), vnpuShare("small", "npu-3", 1)
	a.mustPrepareAll(big)
	a.mustPrepareAll(small)
	require.Equal(t, []vendors.Instance{
		{Type: ascend.PartitionType, Chip: 3, ID: 148, Template: "vir10_3c_32g", DeviceNode: "/dev/vdavinci148"},
		{Type: ascend.PartitionType, Chip: 3, ID: 149, Template: "vir05_1c_16g", DeviceNode: "/dev/vdavinci149"},
	}, dcmiInstances(t), "the lowest free ids of chip 3's range, 148 on")
	cfg, err := os.ReadFile(filepath.Join(os.Getenv("ACCEL_DRA_DCMI_ROOT"), "etc", "vnpu.cfg"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), "-f vir10_3c_32g -v 148")
	require.Contains(t, string(cfg), "-f vir05_1c_16g -v 149")

	for _, tc := range []struct {
		c        *resourceapi.ResourceClaim
		id       int
		template string
		memory   int64
		cores    int
	}{{big, 148, "vir10_3c_32g", 32 << 30, 10}, {small, 149, "vir05_1c_16g", 16 << 30, 5}} {
		spec := a.claimSpec(tc.c)
		require.Contains(t, spec, fmt.Sprintf(`"path":"/dev/davinci%d","hostPath":"%s/dev/vdavinci%d"`, tc.id, a.cfg.Root, tc.id), "its vNPU")
		require.NotContains(t, spec, `"path":"/dev/davinci3"`, "not the chip")
		for _, env := range []string{fmt.Sprintf("%s=%d", ascend.EnvVisibleDevices, tc.id), ascend.EnvRuntimeOptions + "=VIRTUAL",
			"DRA_DEVICE_NPU_3_PARTITION=" + tc.template, fmt.Sprintf("DRA_DEVICE_NPU_3_MEMORY=%d", tc.memory), fmt.Sprintf("DRA_DEVICE_NPU_3_CORES=%d", tc.cores)} {
			require.Contains(t, spec, `"`+env+`"`, tc.c.Name)
		}
	}

	a.stop()
	a.start("")
	before := dcmiInstances(t)
	a.mustPrepareAll(big)
	require.Equal(t, before, dcmiInstances(t), "a restarted agent reuses the vNPUs the checkpoint records, none made twice or removed")
	a.requireConsistent(ascend.Vendor, []types.UID{big.UID, small.UID}, "both prepared")

	for _, c := range []*resourceapi.ResourceClaim{big, small} {
		resp, err := a.unprepare(ascend.Driver, c)
		require.NoError(t, err)
		require.Empty(t, resp[string(c.UID)].Error)
	}
	require.Empty(t, dcmiInstances(t))
	cfg, err = os.ReadFile(filepath.Join(os.Getenv("ACCEL_DRA_DCMI_ROOT"), "etc", "vnpu.cfg"))
	require.NoError(t, err)
	require.NotContains(t, string(cfg), "create-vnpu", "unprepare dropped them from the host's vnpu.cfg")
	a.requireConsistent(ascend.Vendor, nil, "unprepared")
}

// TestAWholeShareOfAnEnforcedAscendChipGetsTheChip: a claim that asks for
// the chip's whole capacity, four units, or none (the request policy's
// default) gets the whole chip and no vNPU.
func TestAWholeShareOfAnEnforcedAscendChipGetsTheChip(t *testing.T) {
	a := ascendLibraryAgent(t, "npu-3=Shared")
	a.start("")
	defer a.kill()
	for _, c := range []*resourceapi.ResourceClaim{vnpuShare("all", "npu-3", 4), vnpuShare("default", "npu-3", 0)} {
		a.mustPrepareAll(c)
		require.Empty(t, dcmiInstances(t), "%s: no vNPU for the whole chip", c.Name)
		spec := a.claimSpec(c)
		require.Contains(t, spec, `"path":"/dev/davinci3","hostPath":"`+a.cfg.Root+`/dev/davinci3"`, c.Name)
		require.Contains(t, spec, `"`+ascend.EnvVisibleDevices+`=3"`, c.Name)
		require.NotContains(t, spec, ascend.EnvRuntimeOptions, c.Name)
		resp, err := a.unprepare(ascend.Driver, c)
		require.NoError(t, err)
		require.Empty(t, resp[string(c.UID)].Error)
	}
}

// TestAnEnforcedVNPUShareTheDriverCannotMakeFailsNamingClaimAndChip: a
// share of a size no template has (off the published policy), a DCMI that
// refuses dcmi_create_vdevice on the chip and a chip whose vNPU ids are
// all taken each fail the claim's prepare with an error naming the claim
// and the chip; the claim prepared before keeps its vNPU and the failed
// one is not recorded.
func TestAnEnforcedVNPUShareTheDriverCannotMakeFailsNamingClaimAndChip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		// good is the chip of the claim prepared first.
		good  string
		units int64
		// fill, when set, makes that many other vNPUs on chip 3 after the
		// good claim's: a node where someone else made them.
		fill int
		want []string
	}{
		{name: "a size no template has", good: "npu-3", units: 3,
			want: []string{"claim default/bad", "the share of npu-3", "does not fit the request policy", "3 units is no template's size; the sizes are 1 (vir05_1c_16g"}},
		{name: "DCMI refuses the call", extra: []string{"fail-chip 3 dcmi_create_vdevice -8255"}, good: "npu-2", units: 1,
			want: []string{"claim default/bad", "creating the partition of the share of npu-3 (chip 3)", "creating a vir05_1c_16g vNPU on chip 3 through DCMI",
				"dcmi_create_vdevice: not supported by this chip or driver (-8255)"}},
		{name: "every vNPU id of the chip is taken", good: "npu-3", units: 1, fill: 15,
			want: []string{"claim default/bad", "creating the partition of the share of npu-3 (chip 3)", "all 16 vNPU ids from 148 are in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ascendLibraryAgent(t, "npu-2=Shared,npu-3=Shared", tc.extra...)
			a.start("")
			defer a.kill()
			good := vnpuShare("good", tc.good, 1)
			a.mustPrepareAll(good)
			before := dcmiInstances(t)
			require.Len(t, before, 1)
			if tc.fill > 0 {
				f, err := os.OpenFile(os.Getenv("ACCEL_DRA_DCMI_STATE"), os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				for id := 149; id < 149+tc.fill; id++ {
					_, err = fmt.Fprintf(f, "3 %d vir05_1c_16g\n", id)
					require.NoError(t, err)
				}
				require.NoError(t, f.Close())
			}

			bad := vnpuShare("bad", "npu-3", tc.units)
			a.addClaim(bad)
			resp, err := a.prepare(ascend.Driver, bad)
			require.NoError(t, err)
			msg := resp[string(bad.UID)].Error
			for _, w := range tc.want {
				require.Contains(t, msg, w)
			}
			require.True(t, slices.Contains(dcmiInstances(t), before[0]), "the good claim keeps its vNPU")
			st := a.state(ascend.Vendor)
			require.Contains(t, st.checkpoint.Claims, good.UID)
			require.NotContains(t, st.checkpoint.Claims, bad.UID)
			if tc.fill == 0 {
				require.Equal(t, before, dcmiInstances(t), "the bad claim left no vNPU")
			}
		})
	}
}

// TestAKilledAgentLosesNoEnforcedVNPUShare is TestAKilledAgentLosesNothing
// for a vNPU share of a 910B3 published Shared, made through DCMI: each
// step of its prepare and unprepare is killed.
func TestAKilledAgentLosesNoEnforcedVNPUShare(t *testing.T) {
	a := ascendLibraryAgent(t, "npu-3=Shared")
	k := claimKind{vendor: ascend.Vendor, devices: []string{"npu-3"}, shareUnits: 2, partitions: 1}
	points := []string{failpoint.PartitionCreated, failpoint.PrepareBeforeCDI, failpoint.PrepareAfterCDI, failpoint.PrepareAfterCheckpoint,
		failpoint.UnprepareAfterCDI, failpoint.UnprepareBeforeCheckpoint}
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			killAt(t, a, k, point, k.allocated(fmt.Sprintf("vnpu-%d", i), types.UID(fmt.Sprintf("uid-vnpu-%d", i))))
		})
	}
}

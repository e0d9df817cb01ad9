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
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func TestPreparingAPartitionCreatesItWithTheVendorToolAndUnprepareDestroysIt(t *testing.T) {
	tests := []struct {
		name, profile string
		vendor        inventory.Vendor
		device        string
		create        string
		destroy       string
		nodes         []string // container device paths besides the shared ones
		hostNode      string   // the partition's own node on the host
		env           map[string]string
		absent        []string // variables the container must not get
	}{
		{name: "Ascend vNPU", profile: "atlas-800t-a2", vendor: ascend.Vendor, device: "npu-2-vir05-1c-16g-0",
			create:   "npu-smi set -t create-vnpu -i 2 -c 0 -f vir05_1c_16g -v 132",
			destroy:  "npu-smi set -t destroy-vnpu -i 2 -c 0 -v 132",
			nodes:    []string{"/dev/davinci132"},
			hostNode: "/dev/vdavinci132",
			env: map[string]string{"ASCEND_VISIBLE_DEVICES": "132", "ASCEND_RUNTIME_OPTIONS": "VIRTUAL",
				"DRA_DEVICE_NPU_2_VIR05_1C_16G_0_PARTITION": "vir05_1c_16g", "DRA_DEVICE_NPU_2_VIR05_1C_16G_0_MEMORY": "17179869184",
				"DRA_DEVICE_NPU_2_VIR05_1C_16G_0_CORES": "5"}},
		{name: "Cambricon sMLU", profile: "mlu370-x8", vendor: cambricon.Vendor, device: "mlu-5-smlu-50p-1",
			create:   "cnmon smlu -c 5 -C 1",
			destroy:  "cnmon smlu -c 5 -D 1",
			nodes:    []string{"/dev/cambricon-caps/cap_dev5_mi1", "/dev/cambricon_dev5", "/dev/cambricon_ipcm5"},
			hostNode: "/dev/cambricon-caps/cap_dev5_mi1",
			// The device plugin never sets CAMBRICON_VISIBLE_DEVICES for
			// an sMLU (server.go PrepareResponse lines 229-237, 265-282).
			absent: []string{"CAMBRICON_VISIBLE_DEVICES"},
			env: map[string]string{
				"DRA_DEVICE_MLU_5_SMLU_50P_1_PARTITION": "50p.11654mb", "DRA_DEVICE_MLU_5_SMLU_50P_1_MEMORY": fmt.Sprint(int64(11654) << 20),
				"DRA_DEVICE_MLU_5_SMLU_50P_1_CORES": "8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := startNode(t, nodeOptions{Profile: tt.profile, Vendor: tt.vendor, ChipModes: string(partitions.ModePartitioned)})
			require.Empty(t, n.commands.changes(), "start-up changes no partition")
			c := n.claim("infer", []string{tt.device})
			ids := n.mustPrepare(c)
			require.Equal(t, []string{tt.create}, n.commands.changes())
			require.Len(t, n.partitionsOnChips(), 1)
			require.FileExists(t, filepath.Join(n.root, tt.hostNode), "the tool made the partition's device node")

			ctr := n.container(ids)
			want := append(append([]string{}, tt.nodes...), n.inv.SharedDeviceNodes[tt.vendor]...)
			sort.Strings(want)
			require.Equal(t, want, devicePaths(ctr), "the partition's nodes, not the whole chip's")
			for _, d := range ctr.Linux.Devices {
				require.Equal(t, int64(1), d.Major, "%s is a null clone made by the fake tool or device faker", d.Path)
			}
			env := envMap(ctr)
			for k, v := range tt.env {
				require.Equal(t, v, env[k], k)
			}
			for _, k := range tt.absent {
				require.NotContains(t, env, k)
			}

			require.Equal(t, ids, n.mustPrepare(c), "preparing again reuses the partition")
			n.restart()
			require.Equal(t, ids, n.mustPrepare(c), "so does a restarted plugin: the checkpoint has it")
			require.Empty(t, n.commands.changes(), "no partition made twice, none removed at start-up")

			n.unprepare(c)
			require.Equal(t, []string{tt.destroy}, n.commands.changes())
			require.Empty(t, n.partitionsOnChips())
			require.NoFileExists(t, filepath.Join(n.root, tt.hostNode))
			require.Empty(t, n.cdiFiles())
			n.unprepare(c)
			require.Empty(t, n.commands.changes(), "a repeated unprepare has nothing left to destroy")
		})
	}
}

func TestAPartitionLeftByACrashBeforeTheCheckpointIsRemovedAtStartUp(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-300i-duo", Vendor: ascend.Vendor, ChipModes: string(partitions.ModePartitioned)})
	kept := n.claim("kept", []string{"npu-1-vir02-0"})
	n.mustPrepare(kept)
	n.stop()
	// What a crash after npu-smi create-vnpu and before the checkpoint
	// leaves: vNPUs on the chips that no prepared claim lists.
	chips := n.inv.ChipsOf(ascend.Vendor)
	tool := &ascend.PartitionTool{Runner: n.fake}
	vir01, _ := partitions.TemplateByName(registry, chips[1], "vir01")
	vir04, _ := partitions.TemplateByName(registry, chips[3], "vir04")
	orphanA, err := tool.Create(context.Background(), chips[1], vir01)
	require.NoError(t, err)
	orphanB, err := tool.Create(context.Background(), chips[3], vir04)
	require.NoError(t, err)
	require.Len(t, n.partitionsOnChips(), 3)
	n.commands.changes()

	n.start()
	require.Equal(t, []string{
		fmt.Sprintf("npu-smi set -t destroy-vnpu -i 1 -c 0 -v %d", orphanA.ID),
		fmt.Sprintf("npu-smi set -t destroy-vnpu -i 3 -c 0 -v %d", orphanB.ID),
	}, n.commands.changes(), "the orphans, and only they, are destroyed")
	left := n.partitionsOnChips()
	require.Len(t, left, 1)
	require.Equal(t, "vir02", left[0].Template, "the recorded vNPU of the prepared claim stays")
	require.NoFileExists(t, filepath.Join(n.root, orphanA.DeviceNode))
	n.unprepare(kept)
	require.Empty(t, n.partitionsOnChips())
}

func TestAFailedPrepareLeavesNoPartitionBehind(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: string(partitions.ModePartitioned)})
	// Someone takes half of npu-0 behind the plugin's back: the second of
	// the claim's vNPUs cannot be made, and the first is destroyed again.
	chip0 := n.inv.ChipsOf(ascend.Vendor)[0]
	vir10, _ := partitions.TemplateByName(registry, chip0, "vir10_3c_32g")
	foreign, err := (&ascend.PartitionTool{Runner: n.fake}).Create(context.Background(), chip0, vir10)
	require.NoError(t, err)
	n.commands.changes()

	c := n.claim("two-halves", []string{"npu-0-vir10-3c-32g-0", "npu-0-vir10-3c-32g-1"})
	resp := n.prepare(c)[string(c.UID)]
	require.Contains(t, resp.Error, "creating partition npu-0-vir10-3c-32g-1: creating a vir10_3c_32g vNPU on chip 0: running npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_32g -v 102")
	require.Contains(t, resp.Error, "not enough AI cores left on chip 0")
	require.Equal(t, []string{
		"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_32g -v 101",
		"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_32g -v 102",
		"npu-smi set -t destroy-vnpu -i 0 -c 0 -v 101",
	}, n.commands.changes())
	require.Equal(t, []vendors.Instance{foreign}, n.partitionsOnChips())
	require.Empty(t, n.cdiFiles())
	require.Empty(t, n.driver.PreparedClaims())
}

func TestTheDriverNeverGivesAChipAndItsPartitionOrMorePartitionsThanFit(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu590", Vendor: cambricon.Vendor, ChipModes: string(partitions.ModePartitioned)})
	whole := n.claim("whole", []string{"mlu-1"})
	n.mustPrepare(whole)
	half := n.claim("half", []string{"mlu-2-smlu-50p-0"})
	n.mustPrepare(half)
	n.commands.changes()

	tests := []struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{n.claim("part-of-whole", []string{"mlu-1-smlu-25p-0"}), "device mlu-1-smlu-25p-0 is a partition of mlu-1, which is prepared whole for claim default/whole"},
		{n.claim("whole-of-part", []string{"mlu-2"}), "device mlu-2 has partition mlu-2-smlu-50p-0 prepared for claim default/half"},
		{n.claim("same-part", []string{"mlu-2-smlu-50p-0"}), "device mlu-2-smlu-50p-0 is already prepared for claim default/half"},
		{n.claim("too-much", []string{"mlu-2-smlu-50p-1", "mlu-2-smlu-25p-0"}), "device mlu-2-smlu-25p-0 (25p.24576mb) does not fit on mlu-2 next to the 2 partitions prepared there: refusing to over-commit the chip"},
		{n.claim("unpublished", []string{"mlu-2-smlu-10p-0"}), `device "mlu-2-smlu-10p-0" is not a chip of cambricon.accel-dra.dev on node node-0`},
	}
	for _, tt := range tests {
		t.Run(tt.claim.Name, func(t *testing.T) {
			resp := n.prepare(tt.claim)[string(tt.claim.UID)]
			require.Contains(t, resp.Error, tt.want)
		})
	}
	require.Empty(t, n.commands.changes(), "refused claims make no partition")
	fits := n.claim("fits", []string{"mlu-2-smlu-25p-0", "mlu-2-smlu-25p-1"})
	n.mustPrepare(fits)
	require.Len(t, n.partitionsOnChips(), 3)
	n.unprepare(whole, half, fits)
	require.Empty(t, n.partitionsOnChips())
}

func TestABadPartitionOrSharingConfigFailsOnlyItsClaimAndNamesTheField(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-300i-duo", Vendor: ascend.Vendor, ChipModes: string(partitions.ModePartitioned)})
	good := n.claim("good", []string{"npu-0-vir04-0"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Exclusive"},"env":{"MODEL":"qwen"}}`))
	badStrategy := n.claim("bad-strategy", []string{"npu-1-vir04-0"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"TimeSlicing"}}`))
	badField := n.claim("bad-field", []string{"npu-2-vir04-0"},
		n.opaque(resourceapi.AllocationConfigSourceClass, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Shared","vnpu":"vir04"}}`))

	resp := n.prepare(good, badStrategy, badField)
	require.Empty(t, resp[string(good.UID)].Error)
	require.Equal(t, "qwen", envMap(n.container(resp[string(good.UID)].Devices[0].CdiDeviceIds))["MODEL"])
	require.Equal(t, `claim default/bad-strategy (`+string(badStrategy.UID)+`): status.allocation.devices.config[0].opaque.parameters (from the claim): AscendConfig: sharing.strategy: Unsupported value: "TimeSlicing": supported values: "Exclusive", "Shared"`,
		resp[string(badStrategy.UID)].Error)
	require.Contains(t, resp[string(badField.UID)].Error, `status.allocation.devices.config[0].opaque.parameters (from the DeviceClass): decoding: strict decoding error: unknown field "sharing.vnpu"`)
	require.Equal(t, []string{"npu-smi set -t create-vnpu -i 0 -c 0 -f vir04 -v 100"}, n.commands.changes(), "only the good claim's vNPU is made")
	require.Equal(t, []types.UID{good.UID}, n.driver.PreparedClaims())
}

// gi is n GiB.
func gi(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }

// share is an allocation result for a share of device with this much
// memory and no reserved cores, as the scheduler makes it for a shared chip.
func (n *node) share(device, id string, memory resource.Quantity) resourceapi.DeviceRequestAllocationResult {
	uid := types.UID(id)
	return resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: n.driverName, Pool: nodeName, Device: device, ShareID: &uid,
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: memory, names.CapCores: *resource.NewQuantity(0, resource.DecimalSI)}}
}

func TestASharedChipTakesSharesUntilItsMemoryIsUsedAndHandsEachItsShare(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "npu-0=Shared", VNPUsOff: true})
	share := func(id string, memory resource.Quantity) resourceapi.DeviceRequestAllocationResult {
		return n.share("npu-0", id, memory)
	}
	a := n.claimWithResults("a", []resourceapi.DeviceRequestAllocationResult{share("11111111-1111-1111-1111-111111111111", gi(16))})
	b := n.claimWithResults("b", []resourceapi.DeviceRequestAllocationResult{share("22222222-2222-2222-2222-222222222222", gi(40))})
	ra := n.mustPrepare(a)
	rb := n.mustPrepare(b)
	envA, envB := envMap(n.container(ra)), envMap(n.container(rb))
	require.Equal(t, "0", envA["ASCEND_VISIBLE_DEVICES"], "both see the physical chip, as the vendors' share modes give it")
	require.Equal(t, "0", envB["ASCEND_VISIBLE_DEVICES"])
	require.Equal(t, fmt.Sprint(int64(16)<<30), envA["DRA_DEVICE_NPU_0_MEMORY"])
	require.Equal(t, fmt.Sprint(int64(40)<<30), envB["DRA_DEVICE_NPU_0_MEMORY"])
	require.Equal(t, "11111111-1111-1111-1111-111111111111", envA["DRA_DEVICE_NPU_0_SHARE_ID"])
	require.Equal(t, []string{"/dev/davinci0", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, devicePaths(n.container(rb)))

	tooBig := n.claimWithResults("too-big", []resourceapi.DeviceRequestAllocationResult{share("33333333-3333-3333-3333-333333333333", gi(9))})
	require.Contains(t, n.prepare(tooBig)[string(tooBig.UID)].Error, "device npu-0 has 56Gi of its 64Gi memory prepared already (for other claims or this claim's other requests), no room for 9Gi more")
	exclusive := n.claimWithResults("exclusive", []resourceapi.DeviceRequestAllocationResult{share("44444444-4444-4444-4444-444444444444", gi(8))},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Exclusive"}}`))
	require.Contains(t, n.prepare(exclusive)[string(exclusive.UID)].Error,
		`status.allocation.devices.results[0]: device npu-0 is a share (8Gi of 64Gi memory) of a shared chip, but the config of request "accel" says sharing.strategy: Exclusive`)

	n.restart()
	require.Contains(t, n.prepare(tooBig)[string(tooBig.UID)].Error, "no room for 9Gi more", "the shares survive a restart")
	n.unprepare(a)
	n.mustPrepare(tooBig)
	n.unprepare(b, tooBig)
	require.Empty(t, n.cdiFiles())
}

func TestACorruptCheckpointRecoversPartitionsFromTheCDISpecsAndKeepsThem(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu370-x8", Vendor: cambricon.Vendor, ChipModes: string(partitions.ModePartitioned)})
	c := n.claim("serve", []string{"mlu-0-smlu-25p-0", "mlu-0-smlu-25p-1"})
	ids := n.mustPrepare(c)
	n.stop()
	path := filepath.Join(n.stateDir, driver.CheckpointFile)
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	n.commands.changes()
	n.start()
	require.Empty(t, n.commands.changes(), "the partitions known from the CDI spec are not orphans")
	require.Len(t, n.partitionsOnChips(), 2)
	require.Equal(t, ids, n.mustPrepare(c))
	n.unprepare(c)
	changes := n.commands.changes()
	require.Len(t, changes, 2)
	for _, cmd := range changes {
		require.True(t, strings.HasPrefix(cmd, "cnmon smlu -c 0 -D "), cmd)
	}
	require.Empty(t, n.partitionsOnChips())
}

func TestPublishedSlicesFollowTheChipModes(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "npu-1=Partitioned,npu-2=Shared"})
	require.Eventually(t, func() bool { return len(n.publishedDevices()) == 8+6 }, 30*time.Second, 50*time.Millisecond,
		"8 chips and the vNPUs of npu-1 are published, the others Whole by default")
	devs := n.publishedDevices()
	var partitioned []string
	for name, d := range devs {
		if *d.Attributes[names.AttrType].StringValue != names.TypeChip {
			partitioned = append(partitioned, name)
		}
	}
	require.Len(t, partitioned, 6, "only npu-1 has its 6 vNPUs: %v", partitioned)
	for _, p := range partitioned {
		require.True(t, strings.HasPrefix(p, "npu-1-"), p)
	}
	require.True(t, *devs["npu-2"].AllowMultipleAllocations, "npu-2 is shared")
	require.Nil(t, devs["npu-3"].AllowMultipleAllocations)
	require.Empty(t, devs["npu-3"].ConsumesCounters, "a Whole chip has no counters")
}

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

package ascend

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// discoverDCMI discovers a DCMI fixture node; fixtures without an npu-smi
// node of their own get a root written for them.
func discoverDCMI(t *testing.T, fixtureName string, extra ...string) ([]inventory.Chip, *dcmiLib) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return discoverDCMIWith(ctx, t, fixtureName, buildMockDCMI(t, fixtureName, extra...))
}

// discoverDCMIWith is discoverDCMI with a mock library already built.
func discoverDCMIWith(ctx context.Context, t *testing.T, fixtureName, lib string) ([]inventory.Chip, *dcmiLib) {
	t.Helper()
	var root string
	switch fixtureName {
	case "atlas-800-910a", "atlas-800t-a2", "atlas-300i-duo":
		root, _ = fixture(fixtureName)
	case "atlas-800t-a2-910b4":
		root = fakeRoot(t, []string{"0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0", "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"}, "0xd802")
	default:
		t.Fatalf("no root for %s", fixtureName)
	}
	b := New(Config{Root: root, Runner: discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}, Library: lib})
	inv, err := b.Discover(ctx)
	require.NoError(t, err)
	return inv.Chips, b.lib
}

func TestPartitionToolMakesVNPUsThroughDCMIOnEveryModel(t *testing.T) {
	for _, tc := range []struct {
		fixture  string
		chip     int
		template string
		firstID  int
	}{
		{"atlas-800-910a", 2, "vir16", 2*16 + 100},
		{"atlas-800t-a2", 7, "vir10_3c_32g", 7*16 + 100},
		{"atlas-800t-a2-910b4", 0, "vir05_1c_8g", 100},
		{"atlas-300i-duo", 3, "vir04_3c_ndvpp", 3*16 + 100},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			chips, lib := discoverDCMI(t, tc.fixture)
			c := chips[tc.chip]
			tpl, ok := templateOf(c, tc.template)
			require.True(t, ok)
			// An empty runner: npu-smi must not be run for vNPUs when DCMI is loaded.
			tool := VNPUs{}.NewTool(vendors.BackendConfig{Runner: discoverytest.MapRunner{}, Root: "/nonexistent", Library: lib.path})

			none, err := tool.List(ctx, c)
			require.NoError(t, err)
			require.Empty(t, none)
			first, err := tool.Create(ctx, c, tpl)
			require.NoError(t, err)
			require.Equal(t, vnpuInstance(c, tc.firstID, tc.template), first)
			second, err := tool.Create(ctx, c, tpl)
			require.NoError(t, err)
			require.Equal(t, tc.firstID+1, second.ID, "the lowest free id of the chip's range")
			require.Equal(t, "/dev/vdavinci"+strconv.Itoa(tc.firstID+1), second.DeviceNode)

			all, err := tool.List(ctx, c)
			require.NoError(t, err)
			require.Equal(t, []vendors.Instance{first, second}, all)

			require.NoError(t, tool.Destroy(ctx, c, first))
			require.NoError(t, tool.Destroy(ctx, c, first), "destroying a gone vNPU is no error, so unprepare can be retried")
			left, err := tool.List(ctx, c)
			require.NoError(t, err)
			require.Equal(t, []vendors.Instance{second}, left)
			// Other chips are untouched.
			other, err := tool.List(ctx, chips[(tc.chip+1)%len(chips)])
			require.NoError(t, err)
			require.Empty(t, other)
		})
	}
}

func TestPartitionToolListsVNPUsThatExistBeforeTheAgent(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	chips, lib := discoverDCMI(t, "atlas-800t-a2", "vdev 1 116 vir05_1c_16g", "vdev 1 118 vir10_3c_32g")
	tool := &PartitionTool{dcmi: lib}
	got, err := tool.List(ctx, chips[1])
	require.NoError(t, err)
	require.Equal(t, []vendors.Instance{vnpuInstance(chips[1], 116, "vir05_1c_16g"), vnpuInstance(chips[1], 118, "vir10_3c_32g")}, got)
	tpl, _ := templateOf(chips[1], "vir05_1c_16g")
	made, err := tool.Create(ctx, chips[1], tpl)
	require.NoError(t, err)
	require.Equal(t, 117, made.ID, "the lowest id not in use")
}

func TestPartitionToolThroughDCMISaysWhyACreateFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	// In an unprivileged container the library refuses 910B vNPUs
	// (dcmi_check_set_vnpu_permission).
	chips, lib := discoverDCMI(t, "atlas-800t-a2", "env container")
	tpl, _ := templateOf(chips[0], "vir05_1c_16g")
	_, err := (&PartitionTool{dcmi: lib}).Create(ctx, chips[0], tpl)
	require.ErrorContains(t, err, "creating a vir05_1c_16g vNPU on chip 0 through DCMI (DCMI makes 910B and 910_93 vNPUs only on the host or in a privileged container)")
	require.ErrorContains(t, err, "dcmi_create_vdevice returned -8002")
}

func TestPartitionToolThroughDCMIFailsWhenListingFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	chips, lib := discoverDCMI(t, "atlas-800t-a2", "fail dcmi_get_device_info -8005")
	_, err := (&PartitionTool{dcmi: lib}).List(ctx, chips[0])
	require.ErrorContains(t, err, "listing the vNPUs of chip 0 through DCMI: dcmi_get_device_info(VDEV_MNG, GET_TOTAL_RESOURCE) returned -8005")
}

func TestLibraryPartitionToolUsesNpuSmiWithoutALibrary(t *testing.T) {
	for _, library := range []string{"", "none", "/nonexistent/libdcmi.so"} {
		tool := VNPUs{}.NewTool(vendors.BackendConfig{Runner: discoverytest.MapRunner{}, Root: t.TempDir(), Library: library}).(*PartitionTool)
		require.Nil(t, tool.dcmi, "library %q", library)
	}
}

// DCMI records a vNPU in the host's /etc/vnpu.cfg under a lock in
// /run/vnpu_cfg_lock and undoes it where it cannot (VNPUHostFiles); the
// error names what the agent's container lacks.
func TestPartitionToolThroughDCMINamesTheMissingHostFiles(t *testing.T) {
	for _, tc := range []struct {
		name, missing, want string
	}{
		{name: "both mounted"},
		{name: "no lock directory", missing: "run/vnpu_cfg_lock",
			want: "creating a vir05_1c_16g vNPU on chip 0 through DCMI (the agent's container lacks the host's /run/vnpu_cfg_lock, " +
				"which DCMI needs to record a vNPU; the chart mounts them where nodeGroups[].partitionMode is not off): dcmi_create_vdevice returned -8020"},
		{name: "neither", missing: ".",
			want: "(the agent's container lacks the host's /run/vnpu_cfg_lock and /etc/vnpu.cfg, which DCMI needs to record a vNPU; " +
				"the chart mounts them where nodeGroups[].partitionMode is not off)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			chips, lib := discoverDCMI(t, "atlas-800t-a2")
			host := os.Getenv("ACCEL_DRA_DCMI_ROOT")
			if tc.missing != "" {
				require.NoError(t, os.RemoveAll(filepath.Join(host, tc.missing)))
			}
			tool := &PartitionTool{dcmi: lib, hostFiles: host}
			tpl, _ := templateOf(chips[0], "vir05_1c_16g")
			_, err := tool.Create(ctx, chips[0], tpl)
			left, lerr := tool.List(ctx, chips[0])
			require.NoError(t, lerr)
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, left, 1)
				cfg, err := os.ReadFile(filepath.Join(host, "etc", "vnpu.cfg"))
				require.NoError(t, err)
				require.Contains(t, string(cfg), "0:100:npu-smi set -t create-vnpu -i 0 -c 0 -f vir05_1c_16g -v 100\n")
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, left, "DCMI undoes a vNPU it cannot record")
		})
	}
}

// dcmi_create_vdevice takes vfg_id 0xFFFFFFFF for "any vGroup", as
// npu-smi and Huawei's device plugin pass it; the mock records the vGroup
// it picked in /etc/vnpu.cfg as the library does on 310P (-g).
func TestPartitionToolLetsDCMIPickTheVGroup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	chips, lib := discoverDCMI(t, "atlas-300i-duo")
	tool := &PartitionTool{dcmi: lib, hostFiles: os.Getenv("ACCEL_DRA_DCMI_ROOT")}
	tpl, _ := templateOf(chips[0], "vir02")
	for range 2 {
		_, err := tool.Create(ctx, chips[0], tpl)
		require.NoError(t, err)
	}
	cfg, err := os.ReadFile(filepath.Join(os.Getenv("ACCEL_DRA_DCMI_ROOT"), "etc", "vnpu.cfg"))
	require.NoError(t, err)
	var groups []string
	for _, l := range strings.Split(string(cfg), "\n") {
		if _, g, ok := strings.Cut(l, " -g "); ok {
			groups = append(groups, g)
		}
	}
	require.Equal(t, []string{"0", "1"}, groups, "each vNPU in a vGroup the library picked, none pinned to vGroup 0:\n%s", cfg)
}

// What the mock library does as the real one does (testdata/dcmi/mock_dcmi.c
// cites the source of each).
func TestMockDCMIBehavesAsTheLibrary(t *testing.T) {
	t.Run("no DDR memory call on 910B", func(t *testing.T) {
		_, lib := discoverDCMI(t, "atlas-800t-a2")
		var mem dcmiMemoryInfo
		err := lib.call("dcmi_get_device_memory_info_v3", func() int32 { return lib.getMemoryInfoV3(0, 0, &mem) })
		require.EqualError(t, err, "dcmi_get_device_memory_info_v3: not supported by this chip or driver (-8255)")
	})
	t.Run("an unknown card is an invalid parameter", func(t *testing.T) {
		_, lib := discoverDCMI(t, "atlas-800t-a2")
		_, err := lib.chip(9, 0)
		require.EqualError(t, err, "dcmi_get_device_logic_id returned -8001")
	})
	t.Run("create does not look at the vNPU mode", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		chips, lib := discoverDCMI(t, "atlas-800t-a2", "vnpu-mode vm")
		tpl, _ := templateOf(chips[0], "vir05_1c_16g")
		_, err := (&PartitionTool{dcmi: lib}).Create(ctx, chips[0], tpl)
		require.NoError(t, err, "npu-smi checks the mode before it calls DCMI; discovery offers no vNPUs here")
	})
}

// DCMI decides in dcmi_init whether it runs in a container, from its
// filesystem (dcmi_environment_judge.c:203-290). Our image has no shell,
// and under containerd its cgroup names no runtime, so only the empty
// /.dockerenv the image ships tells DCMI. Where DCMI takes a container for
// the host it renames /etc/vnpu.cfg before rewriting it
// (dcmi_inner_cfg_persist.c:524-542); a single-file bind mount cannot be
// renamed, so the record fails and the new vNPU is destroyed again
// (dcmi_virtual_intf.c:648-653).
func TestPartitionToolThroughDCMIMakesVNPUsInOurImagesContainer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dockerenv bool
		err       string
	}{
		{name: "our image: /.dockerenv", dockerenv: true},
		{name: "without /.dockerenv DCMI takes the container for the host", err: "dcmi_create_vdevice returned -8001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, "atlas-800t-a2")
			host := os.Getenv("ACCEL_DRA_DCMI_ROOT")
			containerLayout(t, host, tc.dockerenv)
			root, _ := fixture("atlas-800t-a2")
			b := New(Config{Root: root, Runner: discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}, Library: lib})
			inv, err := b.Discover(ctx)
			require.NoError(t, err)
			tool := &PartitionTool{dcmi: b.lib}
			tpl, _ := templateOf(inv.Chips[0], "vir05_1c_16g")
			made, err := tool.Create(ctx, inv.Chips[0], tpl)
			cfg := readFile(t, filepath.Join(host, "etc", "vnpu.cfg"))
			listed, listErr := tool.List(ctx, inv.Chips[0])
			require.NoError(t, listErr)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Empty(t, listed, "the library destroys the vNPU it could not record")
				require.Equal(t, "vnpu_config_recover:enable\n", cfg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []vendors.Instance{made}, listed)
			require.Equal(t, "vnpu_config_recover:enable\n0:100:npu-smi set -t create-vnpu -i 0 -c 0 -f vir05_1c_16g -v 100\n", cfg)
			require.NoError(t, tool.Destroy(ctx, inv.Chips[0], made))
			require.Equal(t, "vnpu_config_recover:enable\n", readFile(t, filepath.Join(host, "etc", "vnpu.cfg")))
		})
	}
}

// The image ships the empty /.dockerenv DCMI looks for: the Dockerfile
// (and hack/image, checked in its own tests) puts it there.
func TestOurImageShipsTheFileDCMIDetectsItsContainerBy(t *testing.T) {
	dockerfile := readFile(t, filepath.Join("..", "..", "..", "deployments", "container", "Dockerfile"))
	require.Regexp(t, `(?m)^COPY --from=build /out/dockerenv /\.dockerenv$`, dockerfile)
}

// Every template offered for a model is one DCMI's template table accepts
// on that chip (dcmi_virtual_intf.c:26-49, 160-201; the mock keeps the
// same tables): a template it refuses would make claims that fail at
// prepare.
func TestEveryOfferedTemplateIsOneDCMIMakes(t *testing.T) {
	for _, tc := range []struct {
		model, fixture string
		// chip line edit of the fixture: what a chip of the model reports
		old, new string
	}{
		{model: "Ascend910A", fixture: "atlas-800-910a"},
		{model: "Ascend910B2", fixture: "atlas-800t-a2", old: "910B3 20     65536", new: "910B2 24     65536"},
		{model: "Ascend910B3", fixture: "atlas-800t-a2"},
		{model: "Ascend910B4", fixture: "atlas-800t-a2-910b4"},
		{model: "Ascend310P3", fixture: "atlas-300i-duo"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, tc.fixture)
			if tc.old != "" {
				path := os.Getenv("ACCEL_DRA_DCMI_FIXTURE")
				edited := strings.ReplaceAll(readFile(t, path), tc.old, tc.new)
				require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
			}
			chips, dcmi := discoverDCMIWith(ctx, t, tc.fixture, lib)
			c := chips[0]
			require.Equal(t, tc.model, c.Model)
			m, ok := VNPUs{}.Model(c)
			require.True(t, ok)
			tool := &PartitionTool{dcmi: dcmi}
			for _, tpl := range m.Templates {
				made, err := tool.Create(ctx, c, tpl)
				require.NoError(t, err, "template %s", tpl.Name)
				require.NoError(t, tool.Destroy(ctx, c, made))
			}
		})
	}
}

package partitions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

func chip(v inventory.Vendor, model string, index, cores int, memory int64) inventory.Chip {
	nodes := []string{fmt.Sprintf("/dev/davinci%d", index)}
	if v == inventory.VendorCambricon {
		nodes = []string{fmt.Sprintf("/dev/cambricon_dev%d", index), fmt.Sprintf("/dev/cambricon_ipcm%d", index)}
	}
	return inventory.Chip{Vendor: v, Model: model, Index: index, Cores: cores, MemoryBytes: memory,
		DeviceNodes: nodes, Extra: map[string]inventory.Value{"logicId": inventory.IntValue(int64(index))}}
}

const gib = int64(1) << 30

func TestEveryModelPublishesAsManySlotsPerTemplateAsFitOnAnEmptyChip(t *testing.T) {
	tests := []struct {
		name string
		chip inventory.Chip
		want map[string]int // template -> slots
	}{
		{"910A: 30 AI cores take 15 vir02, 7 vir04, 3 vir08, 1 vir16",
			chip(inventory.VendorHuawei, "Ascend910A", 0, 30, 32*gib), map[string]int{"vir02": 15, "vir04": 7, "vir08": 3, "vir16": 1}},
		{"910B3: 4 vir05_1c_16g or 2 vir10_3c_32g",
			chip(inventory.VendorHuawei, "Ascend910B3", 0, 20, 64*gib), map[string]int{"vir05_1c_16g": 4, "vir10_3c_32g": 2}},
		{"910B4: 4 vir05_1c_8g or 2 vir10_3c_16g",
			chip(inventory.VendorHuawei, "Ascend910B4", 0, 20, 32*gib), map[string]int{"vir05_1c_8g": 4, "vir10_3c_16g": 2}},
		{"310P3: 7 AI CPUs allow 7 vir01, 3 vir02 and 1 vir04",
			chip(inventory.VendorHuawei, "Ascend310P3", 0, 8, 24*gib), map[string]int{"vir01": 7, "vir02": 3, "vir04": 1}},
		{"MLU370-X8: the driver's 1/4 and 1/2 sMLU profiles",
			chip(inventory.VendorCambricon, "MLU370-X8", 0, 16, 23308<<20), map[string]int{"25p.5827mb": 4, "50p.11654mb": 2}},
		{"MLU590: the same fractions of 96 GiB",
			chip(inventory.VendorCambricon, "MLU590", 0, 48, 96*gib), map[string]int{"25p.24576mb": 4, "50p.49152mb": 2}},
		{"MLU270: no sMLU before MLU3xx", chip(inventory.VendorCambricon, "MLU270-S4", 0, 16, 16*gib), map[string]int{}},
		{"an Ascend model without templates", chip(inventory.VendorHuawei, "Ascend910B2", 0, 24, 64*gib), map[string]int{}},
		{"unknown cores: no partitions", chip(inventory.VendorHuawei, "Ascend910B3", 0, 0, 64*gib), map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			names := map[string]bool{}
			for _, s := range partitions.Slots(tt.chip) {
				got[s.Template.Name]++
				name := partitions.DeviceName(tt.chip, s)
				require.False(t, names[name], "device name %s twice", name)
				names[name] = true
				require.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, name, "a DNS label")
				require.LessOrEqual(t, len(name), 63)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDeviceNamesReadAsChipTemplateAndNumber(t *testing.T) {
	c := chip(inventory.VendorHuawei, "Ascend910B3", 3, 20, 64*gib)
	slots := partitions.Slots(c)
	require.Equal(t, "npu-3-vir05-1c-16g-0", partitions.DeviceName(c, slots[0]))
	require.Equal(t, "npu-3-vir10-3c-32g-1", partitions.DeviceName(c, slots[len(slots)-1]))
	m := chip(inventory.VendorCambricon, "MLU370-X8", 7, 16, 23308<<20)
	require.Equal(t, "mlu-7-smlu-25p-0", partitions.DeviceName(m, partitions.Slots(m)[0]))
}

func TestPolicyGivesEachChipItsMode(t *testing.T) {
	npu0 := chip(inventory.VendorHuawei, "Ascend910B3", 0, 20, 64*gib)
	npu1 := chip(inventory.VendorHuawei, "Ascend910B3", 1, 20, 64*gib)
	mlu0 := chip(inventory.VendorCambricon, "MLU370-X8", 0, 16, 23308<<20)
	mlu270 := chip(inventory.VendorCambricon, "MLU270-S4", 1, 16, 16*gib)
	tests := []struct {
		spec string
		want [4]partitions.Mode // npu0, npu1, mlu0, mlu270
		err  string
	}{
		{"", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{" , ", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"npu-*=Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"mlu-0=Partitioned", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"Shared", [4]partitions.Mode{partitions.ModeShared, partitions.ModeShared, partitions.ModeShared, partitions.ModeShared}, ""},
		{"npu-1=Shared, mlu-*=Whole", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeShared, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"Partitioned,npu-1=Shared", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModeShared, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"Whole,npu-*=Shared,npu-0=Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModeShared, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"npu-0=Exclusive", [4]partitions.Mode{}, `chip modes entry 1 "npu-0=Exclusive": mode "Exclusive" is not one of Partitioned, Shared, Whole`},
		{"gpu-0=Shared", [4]partitions.Mode{}, `chip modes entry 1 "gpu-0=Shared": "gpu-0" is not a chip device name (npu-N, mlu-N, npu-* or mlu-*)`},
		{"npu-01=Shared", [4]partitions.Mode{}, `"npu-01" is not a chip device name`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, err := partitions.ParsePolicy(tt.spec)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got := [4]partitions.Mode{p.ModeOf(npu0), p.ModeOf(npu1), p.ModeOf(mlu0), p.ModeOf(mlu270)}
			require.Equal(t, tt.want, got)
			again, err := partitions.ParsePolicy(p.String())
			require.NoError(t, err)
			require.Equal(t, p, again, "String round-trips")
		})
	}
}

func TestChipsAreWholeUnlessThePolicyAsksForMore(t *testing.T) {
	npu := chip(inventory.VendorHuawei, "Ascend910B3", 0, 20, 64*gib)
	mlu := chip(inventory.VendorCambricon, "MLU370-X8", 0, 16, 23308<<20)
	tests := []struct {
		name   string
		policy partitions.Policy
		want   partitions.Mode
	}{
		{"the zero policy publishes whole chips", partitions.Policy{}, partitions.ModeWhole},
		{"an empty default is Whole", partitions.Policy{Chips: map[string]partitions.Mode{"npu-1": partitions.ModeShared}}, partitions.ModeWhole},
		{"a Partitioned default partitions", partitions.Policy{Default: partitions.ModePartitioned}, partitions.ModePartitioned},
		{"no partition tool makes Partitioned chips Whole", partitions.Policy{Default: partitions.ModePartitioned, NoPartitions: true}, partitions.ModeWhole},
		{"no partition tool leaves Shared chips shared", partitions.Policy{Default: partitions.ModeShared, NoPartitions: true}, partitions.ModeShared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.policy.ModeOf(npu), "npu-0")
			require.Equal(t, tt.want, tt.policy.ModeOf(mlu), "mlu-0")
		})
	}
}

// step is one command a tool is expected to run and the recording it gets.
type step struct {
	cmd  string
	file string
}

// scripted answers the expected commands in order with recorded output
// and fails the test on any other command.
type scripted struct {
	t     *testing.T
	dir   string
	steps []step
}

func (s *scripted) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	s.t.Helper()
	cmd := discovery.CommandLine(name, args...)
	require.NotEmpty(s.t, s.steps, "unexpected command %q", cmd)
	next := s.steps[0]
	s.steps = s.steps[1:]
	require.Equal(s.t, next.cmd, cmd)
	data, err := os.ReadFile(filepath.Join(s.dir, next.file))
	require.NoError(s.t, err)
	return data, nil
}

func (s *scripted) done() { require.Empty(s.t, s.steps, "commands not run") }

func TestAscendToolCreatesListsAndDestroysVNPUsWithNpuSmi(t *testing.T) {
	ctx := context.Background()
	c := chip(inventory.VendorHuawei, "Ascend910B4", 0, 20, 32*gib)
	vir10, ok := partitions.TemplateByName(c, "vir10_3c_16g")
	require.True(t, ok)
	run := &scripted{t: t, dir: "testdata/ascend", steps: []step{
		{"npu-smi info -m", "npu-smi_info_-m.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_100.txt"},
		{"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 101", "create-vnpu_ok.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_100_101.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_100_101.txt"},
		{"npu-smi set -t destroy-vnpu -i 0 -c 0 -v 101", "destroy-vnpu_101_ok.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_100.txt"},
	}}
	tool := &partitions.AscendTool{Runner: run}
	inst, err := tool.Create(ctx, c, vir10)
	require.NoError(t, err)
	require.Equal(t, partitions.Instance{Type: partitions.TypeVNPU, Chip: 0, Template: "vir10_3c_16g", ID: 101, DeviceNode: "/dev/vdavinci101"}, inst,
		"the lowest free id of the chip's range, passed with -v")
	require.NoError(t, tool.Destroy(ctx, c, inst))
	require.NoError(t, tool.Destroy(ctx, c, inst), "destroying a vNPU that is gone is not an error")
	run.done()

	edits, err := partitions.EditsOf(c, inst)
	require.NoError(t, err)
	require.Equal(t, partitions.Edits{DeviceNodes: []partitions.DeviceNode{{Path: "/dev/davinci101", HostPath: "/dev/vdavinci101"}}, VisibleID: 101, Virtual: true}, edits)
}

func TestParseVNPUInfoReadsBothLayoutsAndChecksTheCount(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []partitions.VNPU
	}{
		{"info-vnpu_none.txt", nil},
		{"info-vnpu_100_101.txt", []partitions.VNPU{{ID: 100, VGroup: 0, ContainerID: "ffffffffffff", Status: 1, Template: "vir10_3c_16g"}, {ID: 101, VGroup: 1, ContainerID: "000000000000", Status: 0, Template: "vir10_3c_16g"}}},
		{"info-vnpu_310p.txt", []partitions.VNPU{{ID: 212, VGroup: 0, ContainerID: "000000000000", Status: 0, Template: "vir04"}}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/ascend", tt.file))
			require.NoError(t, err)
			got, err := partitions.ParseVNPUInfo("npu-smi info -t info-vnpu", data)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	data, err := os.ReadFile("testdata/ascend/info-vnpu_100_101.txt")
	require.NoError(t, err)
	broken := strings.Replace(string(data), "Total number of vnpu: 2 ", "Total number of vnpu: 3 ", 1)
	_, err = partitions.ParseVNPUInfo("npu-smi info -t info-vnpu -i 0 -c 0", []byte(broken))
	require.ErrorContains(t, err, "parsing npu-smi info -t info-vnpu -i 0 -c 0: line 9: npu-smi counts 3 vNPUs but lists 2")
}

func TestAscendToolReportsAFailedCreate(t *testing.T) {
	ctx := context.Background()
	c := chip(inventory.VendorHuawei, "Ascend910B4", 0, 20, 32*gib)
	vir10, _ := partitions.TemplateByName(c, "vir10_3c_16g")
	full := &scripted{t: t, dir: "testdata/ascend", steps: []step{
		{"npu-smi info -m", "npu-smi_info_-m.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_none.txt"},
		{"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 100", "destroy-vnpu_101_ok.txt"},
		{"npu-smi info -t info-vnpu -i 0 -c 0", "info-vnpu_none.txt"},
	}}
	_, err := (&partitions.AscendTool{Runner: full}).Create(ctx, c, vir10)
	require.EqualError(t, err, "npu-smi reported vNPU 100 on chip 0 created, but does not list it")
}

func TestCambriconToolCreatesListsAndDestroysSMLUInstances(t *testing.T) {
	ctx := context.Background()
	c := chip(inventory.VendorCambricon, "MLU370-X8", 0, 16, 23308<<20)
	quarter, ok := partitions.TemplateByName(c, "25p.5827mb")
	require.True(t, ok)
	run := &scripted{t: t, dir: "testdata/cambricon", steps: []step{
		{"cnmon smlu -c 0 --create --profile 25p.5827mb", "smlu_create_2_ok.txt"},
		{"cnmon smlu -c 0 --list", "smlu_list_1_2.txt"},
		{"cnmon smlu -c 0 --list", "smlu_list_1_2.txt"},
		{"cnmon smlu -c 0 --destroy --instance 1", "smlu_destroy_1_ok.txt"},
		{"cnmon smlu -c 0 --list", "smlu_list_none.txt"},
	}}
	tool := &partitions.CambriconTool{Runner: run}
	inst, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, partitions.Instance{Type: partitions.TypeSMLU, Chip: 0, Template: "25p.5827mb", ID: 2,
		DeviceNode: "/dev/cambricon-caps/cap_dev0_mi2", UUID: "MLU-C0001012-1916-0000-0000-000000000000"}, inst)
	other := partitions.Instance{Type: partitions.TypeSMLU, Chip: 0, Template: "50p.11654mb", ID: 1}
	require.NoError(t, tool.Destroy(ctx, c, other))
	require.NoError(t, tool.Destroy(ctx, c, other), "gone already")
	run.done()

	edits, err := partitions.EditsOf(c, inst)
	require.NoError(t, err)
	require.Equal(t, partitions.Edits{VisibleID: 0, DeviceNodes: []partitions.DeviceNode{
		{Path: "/dev/cambricon_dev0", HostPath: "/dev/cambricon_dev0"},
		{Path: "/dev/cambricon_ipcm0", HostPath: "/dev/cambricon_ipcm0"},
		{Path: "/dev/cambricon-caps/cap_dev0_mi2", HostPath: "/dev/cambricon-caps/cap_dev0_mi2"},
	}}, edits, "the chip's nodes and the instance's capability node")
}

// needsRoot skips t, saying why, unless the test runs as root (make test
// does, as CI does).
func needsRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s", why)
	}
}

func TestTheFakeBehavesLikeTheToolsAndKeepsItsStateAcrossRestarts(t *testing.T) {
	needsRoot(t, "the fake tool makes each partition's device node with mknod")
	ctx := context.Background()
	root := t.TempDir()
	npu := chip(inventory.VendorHuawei, "Ascend310P3", 1, 8, 24*gib)
	mlu := chip(inventory.VendorCambricon, "MLU590", 2, 48, 96*gib)
	state := filepath.Join(t.TempDir(), partitions.FakeStateFile)
	newFake := func() *partitions.Fake {
		return &partitions.Fake{StatePath: state, Chips: []inventory.Chip{npu, mlu}, Root: root}
	}
	fake := newFake()
	ascendTool := &partitions.AscendTool{Runner: fake}
	vir04, _ := partitions.TemplateByName(npu, "vir04")
	vir02, _ := partitions.TemplateByName(npu, "vir02")
	a, err := ascendTool.Create(ctx, npu, vir04)
	require.NoError(t, err)
	require.Equal(t, 116, a.ID, "the id range of chip 1 starts at 1*16+100")
	b, err := ascendTool.Create(ctx, npu, vir02)
	require.NoError(t, err)
	require.Equal(t, 117, b.ID)
	_, err = ascendTool.Create(ctx, npu, vir02)
	require.ErrorContains(t, err, "not enough AI CPUs left on chip 1 for vir02: 6 of 7 in use", "the fake refuses what does not fit, like the driver")
	require.FileExists(t, filepath.Join(root, "dev/vdavinci116"))

	cambriconTool := &partitions.CambriconTool{Runner: fake}
	half, _ := partitions.TemplateByName(mlu, "50p.49152mb")
	m, err := cambriconTool.Create(ctx, mlu, half)
	require.NoError(t, err)
	require.Equal(t, "/dev/cambricon-caps/cap_dev2_mi1", m.DeviceNode)
	st, err := os.Stat(filepath.Join(root, m.DeviceNode))
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeCharDevice, "a character device node")

	// A new process sees the same partitions.
	restarted := &partitions.AscendTool{Runner: newFake()}
	list, err := restarted.List(ctx, npu)
	require.NoError(t, err)
	require.Equal(t, []partitions.Instance{a, b}, list)

	require.NoError(t, restarted.Destroy(ctx, npu, a))
	require.NoFileExists(t, filepath.Join(root, "dev/vdavinci116"))
	all, err := newFake().Instances()
	require.NoError(t, err)
	require.Equal(t, []partitions.Instance{m, b}, all)

	_, err = fake.Run(ctx, "npu-smi", "set", "-t", "create-vnpu", "-i", "1", "-c", "0", "-f", "vir16", "-v", "118")
	require.ErrorContains(t, err, "the vnpu template vir16 is not supported")
	_, err = fake.Run(ctx, "npu-smi", "set", "-t", "create-vnpu", "-i", "1", "-c", "0", "-f", "vir01", "-v", "99")
	require.ErrorContains(t, err, "the vnpu id 99 is out of range [116, 123]")
}

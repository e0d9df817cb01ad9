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
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// a950Buses are the PCI addresses of atlas-850.txt's chips, which DCMI
// answers only on a card's mainboard.
var a950Buses = []string{"0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0",
	"0000:81:00.0", "0000:82:00.0", "0000:83:00.0", "0000:84:00.0"}

// a950Root is a host root for atlas-850.txt with the driver's topology
// files named in files.
func a950Root(t *testing.T, files ...string) string {
	t.Helper()
	root := fakeRoot(t, a950Buses, "0xd806")
	for _, f := range files {
		p := filepath.Join(root, hcclTopo950Dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("{}\n"), 0o444))
	}
	return root
}

// A 950's library refuses dcmi_init; its chips are read through the v2
// calls by logic id: names, cores, memory, links (UB, one group), health.
func TestDiscoverReadsA950ThroughDCMIv2(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-850", "health 3 2", "error 3 0x80E18402", "health 5 4294967295")
	// No npu-smi recording: a fact DCMI v2 did not read would fail.
	inv, err := New(Config{Root: a950Root(t, "atlas_850_1.json"), Runner: discoverytest.MapRunner{}, Library: lib}).Discover(t.Context())
	require.NoError(t, err)
	require.NoError(t, inv.Validate())
	require.Len(t, inv.Chips, 8)
	for i, c := range inv.Chips {
		require.Equal(t, i, c.Index)
		require.Equal(t, "Ascend950DT", c.Model)
		require.Equal(t, "Ascend950DT", *c.Extra[ExtraChipName].String)
		require.Equal(t, 32, c.Cores, "DCMI's aicore_cnt, not the name's default")
		require.Equal(t, int64(147456)<<20, c.MemoryBytes)
		require.Equal(t, inventory.LinkHCCS, c.LinkType, "UB joins the chips as HCCS does")
		require.Equal(t, "hccs-0", c.LinkGroup)
		require.Empty(t, c.PCIBusID, "DCMI answers no PCIe address on a unified-bus board")
		require.NotContains(t, c.Extra, AttrModule)
		require.Equal(t, "libdcmi.so dcmiv2_get_device_chip_info", c.Sources[SourceModel])
		require.Equal(t, "libdcmi.so dcmiv2_get_device_list", c.Sources[SourceChips])
		require.Equal(t, "libdcmi.so dcmiv2_get_device_hbm_info", c.Sources[SourceMemory])
		require.Equal(t, "libdcmi.so dcmiv2_get_topo_info_by_device_id", c.Sources[SourceLinks])
	}
	require.False(t, inv.Chips[3].Healthy)
	require.Contains(t, inv.Chips[3].HealthMessage, "0x80E18402")
	require.Equal(t, "libdcmi.so dcmiv2_get_device_health, dcmiv2_get_device_error_code_list", inv.Chips[3].Sources[SourceHealth])
	require.False(t, inv.Chips[5].Healthy, "0xFFFFFFFF: the device does not exist")
	require.Equal(t, inventory.ReasonToolHealth(HealthUnknown), inv.Chips[5].HealthReason)
}

// loadDCMI picks the API the board takes, as mind-cluster does: v1 where
// dcmi_init answers, v2 where it answers "not supported" and dcmiv2_init
// takes the board; a failing dcmiv2_init is an error naming both.
func TestLoadingDCMIPicksTheAPITheBoardTakes(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		extra         []string
		v2            bool
		err           string
	}{
		{name: "a 910B: v1", fixture: "atlas-800t-a2"},
		{name: "a 950: v2", fixture: "atlas-850", v2: true},
		{name: "a 950 whose dcmiv2_init fails", fixture: "atlas-850", extra: []string{"fail dcmiv2_init -8005"},
			err: "dcmi_init: not supported by this chip or driver (-8255); dcmiv2_init returned -8005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, err := loadDCMI(buildMockDCMI(t, tc.fixture, tc.extra...), 0)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.v2, lib.v2 != nil)
			require.NotNil(t, lib.version, "the driver version through the API the board took")
			require.Equal(t, "25.3.0-rc1", lib.version.String())
		})
	}
}

// A 950 container gets HCCL_TOPO_FILE_PATH as Huawei's device plugin sets
// it: an Atlas 350 card's file by its board and mainboard, else by the
// super-pod type; none where neither decides, and never on other chips.
func TestDiscoverNamesTheHCCLTopologyFileOfA950Node(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		file  string
		log   string
	}{
		{name: "an 8P server", file: "atlas_850_1.json"},
		{name: "a 1D super pod", extra: []string{"spod 7 64 1 0 1"}, file: "atlas_950_1.json"},
		{name: "a 2D super pod", extra: []string{"spod 7 64 1 0 2"}, file: "atlas_950_2.json"},
		{name: "a 32P server", extra: []string{"spod 4294967295 4294967295 0 0 4"}, file: "atlas_850_3.json"},
		{name: "an Atlas 350 card", extra: []string{"board 1a", "mainboard 68"}, file: "atlas_350_1.json"},
		{name: "an Atlas 350 4P card", extra: []string{"board 1b", "mainboard 6c"}, file: "atlas_350_3.json"},
		{name: "a 2P card falls through to the super-pod type", extra: []string{"board 1c", "mainboard 6a"}, file: "atlas_850_1.json"},
		{name: "an unknown super-pod type", extra: []string{"spod 4294967295 4294967295 0 0 9"},
			log: "Cannot tell which HCCL topology file this Ascend 950 node has"},
		{name: "no super-pod info", extra: []string{"fail dcmiv2_get_device_info -8255"},
			log: "Cannot tell which HCCL topology file this Ascend 950 node has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
			lib := buildMockDCMI(t, "atlas-850", tc.extra...)
			root := a950Root(t)
			if tc.file != "" {
				root = a950Root(t, tc.file)
			}
			inv, err := New(Config{Root: root, Runner: discoverytest.MapRunner{}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			for _, c := range inv.Chips {
				env := Ascend{}.CDI().ChipEnv(c)
				if tc.file == "" {
					require.Empty(t, env)
					continue
				}
				require.Equal(t, map[string]string{EnvHCCLTopoFile: "/usr/local/Ascend/driver/topo/950/" + tc.file}, env)
			}
			require.Contains(t, logs.String(), tc.log)
		})
	}
	t.Run("a 910B has none", func(t *testing.T) {
		lib := buildMockDCMI(t, "atlas-800t-a2")
		root, _ := fixture("atlas-800t-a2")
		inv, err := New(Config{Root: root, Runner: recordings(t, "atlas-800t-a2"), Library: lib}).Discover(t.Context())
		require.NoError(t, err)
		for _, c := range inv.Chips {
			require.NotContains(t, c.Extra, ExtraHCCLTopoFile)
			require.Empty(t, Ascend{}.CDI().ChipEnv(c))
		}
	})
}

// A file the node lacks is still named, as the device plugin names it,
// and said once.
func TestAMissingHCCLTopologyFileIsNamedAndLogged(t *testing.T) {
	var logs bytes.Buffer
	ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
	inv, err := New(Config{Root: a950Root(t), Runner: discoverytest.MapRunner{}, Library: buildMockDCMI(t, "atlas-850")}).Discover(ctx)
	require.NoError(t, err)
	require.Equal(t, inventory.StringValue("/usr/local/Ascend/driver/topo/950/atlas_850_1.json"), inv.Chips[0].Extra[ExtraHCCLTopoFile])
	require.Contains(t, logs.String(), "The node lacks the HCCL topology file of its product")
}

// The public sources document no vNPU template of the 950 (DCMI's
// template table has none, dcmi_virtual_intf.c:241-255, and the 950 DCMI
// reference documents no vNPU creation): its models offer no shapes, a
// Partitioned chip is published Whole with the reason, and a Shared one
// keeps accounting-only shares.
func TestA950OffersNoVNPUTemplates(t *testing.T) {
	models := map[string]vendors.Model{}
	for _, m := range (Ascend{}).Models() {
		models[m.Name] = m
	}
	for _, name := range []string{"Ascend950PR", "Ascend950DT"} {
		require.Contains(t, models, name, "a per-model DeviceClass")
		require.Empty(t, models[name].Shapes)
	}
	chip := inventory.Chip{Vendor: Vendor, Model: "Ascend950DT", Index: 0, Cores: 32, MemoryBytes: 144 << 30}
	// No partition model: pkg/partitions publishes such a chip Whole,
	// saying "model Ascend950DT has no partition templates" (Policy.WhyWhole).
	_, ok := vendors.PartitionModelOf(Ascend{}, chip)
	require.False(t, ok)
	// No share grid: Shared, its shares are accounting only.
	_, _, ok = vendors.ShareGridOf(Ascend{}, chip)
	require.False(t, ok)
}

func TestHCCLTopoFile(t *testing.T) {
	notSupported := &DCMIError{Func: "dcmiv2_get_device_info", Code: dcmiErrNotSupported}
	for _, tc := range []struct {
		name        string
		board, main uint32
		boardErr    error
		spodType    uint32
		spodErr     error
		want        string
	}{
		{name: "server", board: 0x30, main: 0x25, want: "atlas_850_1.json"},
		{name: "16P server", board: 0x30, main: 0x25, spodType: 3, want: "atlas_850_2.json"},
		{name: "card 1P", board: 0x1a, main: 0x68, spodErr: notSupported, want: "atlas_350_1.json"},
		{name: "card, board unread", boardErr: notSupported, main: 0x68, spodType: 1, want: "atlas_950_1.json"},
		{name: "nothing known", boardErr: notSupported, spodErr: notSupported},
		{name: "the card keys are in the same table", spodType: 6, want: "atlas_350_3.json"},
		{name: "an unknown type", spodType: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hcclTopoFile(tc.board, tc.main, tc.boardErr, tc.spodType, tc.spodErr)
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Equal(t, "/usr/local/Ascend/driver/topo/950/"+tc.want, got)
		})
	}
}

// A 950's telemetry is read through the v2 calls by logic id, as the v1
// calls read the other chips: a failing call leaves only its figure out.
func TestTelemetryReadsA950ThroughDCMIv2(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-850", "health 1 1")
	tel := dcmiTelemetryOf(t, lib, "load 0 87 61 2315\nfail 2 dcmiv2_get_device_temperature -8020\n")
	samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0, 1, 2))
	require.NoError(t, err)
	hbm := float64(147456) * dcmiMiB
	used := float64(147456/20) * dcmiMiB // the mock's dcmiv2_get_device_hbm_info
	healthy, warning := true, false
	want := []vendors.ChipSample{
		{Index: 0, UUID: "uuid-0", UtilizationRatio: vendors.Value(0.87), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			TemperatureCelsius: vendors.Value(61), PowerWatts: vendors.Value(231.5), Healthy: &healthy},
		{Index: 1, UUID: "uuid-1", UtilizationRatio: vendors.Value(0), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			TemperatureCelsius: vendors.Value(40), PowerWatts: vendors.Value(70), Healthy: &warning},
		{Index: 2, UUID: "uuid-2", UtilizationRatio: vendors.Value(0), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			PowerWatts: vendors.Value(70), Healthy: &healthy},
	}
	require.Len(t, samples[2].Errors, 1)
	require.Equal(t, "dcmiv2_get_device_temperature", samples[2].Errors[0].Call)
	require.ErrorContains(t, samples[2].Errors[0], "dcmiv2_get_device_temperature returned -8020")
	samples[2].Errors = nil
	require.Equal(t, want, samples)
}

// The mock decides as the library does: dcmiv2_init refuses a board that
// is no 950 (dcmi_init_basic.c:1497-1502), dcmi_init a 950
// (1446-1452).
func TestMockDCMIv2RefusesOtherBoards(t *testing.T) {
	for _, tc := range []struct{ fixture, call string }{
		{"atlas-800t-a2", "dcmiv2_init"},
		{"atlas-850", "dcmi_init"},
	} {
		t.Run(tc.call+" on "+tc.fixture, func(t *testing.T) {
			h, err := dlopen(buildMockDCMI(t, tc.fixture), purego.RTLD_NOW|purego.RTLD_LOCAL)
			require.NoError(t, err)
			var initFn func() int32
			purego.RegisterLibFunc(&initFn, h, tc.call)
			require.Equal(t, int32(dcmiErrNotSupported), initFn())
		})
	}
}

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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// a3Buses are the PCI addresses of the A3 fixtures' dies.
var a3Buses = []string{"0000:9d:00.0", "0000:9f:00.0", "0000:99:00.0", "0000:9b:00.0"}

// withoutSources drops what only says who read a fact, to compare two
// backends' inventories.
func withoutSources(inv inventory.Inventory) inventory.Inventory {
	for i := range inv.Chips {
		inv.Chips[i].Sources = nil
	}
	return inv
}

func TestDiscoverThroughDCMIFindsWhatNpuSmiFinds(t *testing.T) {
	for node, tc := range map[string]struct {
		// npu-smi is asked only what DCMI cannot answer: the topology of
		// 310P (dcmi_get_topo_info_by_device_id answers -8255).
		npuSmi []string
		links  string
	}{
		"atlas-800-910a": {links: ringSource},
		"atlas-800t-a2":  {links: "libdcmi.so dcmi_get_topo_info_by_device_id"},
		"atlas-300i-duo": {npuSmi: []string{cmdTopo}, links: cmdTopo},
	} {
		t.Run(node, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, node)
			root, runner := fixture(node)
			viaTool, err := New(Config{Root: root, Runner: runner, Library: vendors.LibraryNone}).Discover(ctx)
			require.NoError(t, err)

			logged := &loggingRunner{next: runner}
			viaDCMI, err := New(Config{Root: root, Runner: logged, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.npuSmi, logged.ran)
			require.NoError(t, viaDCMI.Validate())

			if node == "atlas-800t-a2" {
				// DCMI also reads the RoCE addresses, which npu-smi does not print.
				require.Equal(t, "192.168.100.101/24", viaDCMI.Chips[0].DeviceIP)
				require.Equal(t, "libdcmi.so dcmi_get_device_ip", viaDCMI.Chips[0].Sources[SourceDeviceIP])
				for i := range viaDCMI.Chips {
					viaDCMI.Chips[i].DeviceIP = ""
				}
			}
			src := viaDCMI.Chips[0].Sources
			require.Equal(t, withoutSources(viaTool), withoutSources(viaDCMI))

			require.Equal(t, "libdcmi.so dcmi_get_device_chip_info_v2", src[SourceModel])
			require.Equal(t, "libdcmi.so dcmi_get_device_chip_info_v2", src[SourceCores], "DCMI says the AI core count")
			require.Equal(t, "libdcmi.so dcmi_get_device_pcie_info_v2, sysfs", src[SourcePCI])
			require.Equal(t, tc.links, src[SourceLinks])
			require.Equal(t, "libdcmi.so dcmi_get_vdevice_mode", src[SourcePartitionMode])
			if node == "atlas-300i-duo" {
				require.Equal(t, "libdcmi.so dcmi_get_device_memory_info_v3", src[SourceMemory], "310P3 has DDR, no HBM")
			} else {
				require.Equal(t, "libdcmi.so dcmi_get_device_hbm_info", src[SourceMemory])
			}
		})
	}
}

// fakeRoot writes a host root for the chips of a DCMI fixture that has no
// npu-smi node under testdata: device files and their PCI functions.
func fakeRoot(t *testing.T, buses []string, deviceID string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "bus", "pci", "devices"), 0o755))
	for i, bus := range buses {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", fmt.Sprintf("davinci%d", i)), nil, 0o644))
		dir := filepath.Join(root, "sys", "devices", "pci0000:00", bus)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, value := range map[string]string{"vendor": "0x19e5", "device": deviceID, "class": "0x120000", "numa_node": "0"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(value+"\n"), 0o644))
		}
		require.NoError(t, os.Symlink("../../../devices/pci0000:00/"+bus, filepath.Join(root, "sys", "bus", "pci", "devices", bus)))
	}
	for _, n := range sharedNodes {
		require.NoError(t, os.WriteFile(filepath.Join(root, n), nil, 0o644))
	}
	return root
}

func TestDiscoverThroughDCMIReadsModelsNpuSmiCannotTellApart(t *testing.T) {
	b4Buses := []string{"0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0", "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"}
	for _, tc := range []struct {
		fixture string
		buses   []string
		devID   string
		model   string
		cores   int
		memMiB  int64
		groups  []string
		vnpus   bool
	}{
		{"atlas-a3-20", a3Buses, "0xd803", "Ascend910_9372", 20, 65536, []string{"hccs-0", "hccs-0", "hccs-0", "hccs-0"}, false},
		{"atlas-a3-24", a3Buses, "0xd803", "Ascend910_9392", 24, 65536, []string{"hccs-0", "hccs-0", "hccs-0", "hccs-0"}, false},
		{"atlas-800t-a2-910b4", b4Buses, "0xd802", "Ascend910B4", 20, 32768,
			[]string{"hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0"}, true},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, tc.fixture)
			root := fakeRoot(t, tc.buses, tc.devID)
			runner := discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}
			inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, inv.Validate())
			require.Len(t, inv.Chips, len(tc.buses))
			var groups []string
			for i, c := range inv.Chips {
				require.Equal(t, tc.model, c.Model)
				require.Equal(t, tc.cores, c.Cores, "the A3 die's AI cores come from dcmi_chip_info.aicore_cnt")
				require.Equal(t, tc.memMiB<<20, c.MemoryBytes)
				require.Equal(t, tc.buses[i], c.PCIBusID)
				require.True(t, c.Healthy)
				groups = append(groups, c.LinkGroup)
				_, partitionable := c.Sources[SourcePartitionMode]
				require.Equal(t, tc.vnpus, partitionable)
			}
			require.Equal(t, tc.groups, groups, "SIO between dies and HCCS_SW between cards are one HCCS group")
		})
	}
}

func TestDiscoverThroughDCMIReportsUnhealthyChipsWithTheirErrorCodes(t *testing.T) {
	for health, want := range map[int]string{1: "Warning", 2: "Alarm", 3: "Critical", 7: "UNKNOWN"} {
		t.Run(want, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			fix, err := os.ReadFile("testdata/dcmi/atlas-800t-a2.txt")
			require.NoError(t, err)
			lib := buildMockDCMI(t, "atlas-800t-a2")
			// Chip 1 of the fixture, with the given health.
			edited := discoverytest.ReplaceOnce(t, string(fix), "0000:c2:00.0 d802  0", fmt.Sprintf("0000:c2:00.0 d802  %d", health))
			require.NoError(t, os.WriteFile(os.Getenv("ACCEL_DRA_DCMI_FIXTURE"), []byte(edited), 0o644))
			root, runner := fixture("atlas-800t-a2")
			inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			for _, c := range inv.Chips {
				require.Equal(t, c.Index != 1, c.Healthy, "chip %d", c.Index)
			}
			c := inv.Chips[1]
			require.Equal(t, inventory.ReasonToolHealth(want), c.HealthReason)
			require.Equal(t, "DCMI reports health "+want+", error codes 0xA4025021, 0x8C03A000, 0x8C084E00", c.HealthMessage)
			require.Equal(t, "libdcmi.so dcmi_get_device_health, dcmi_get_device_errorcode_v2", c.Sources[SourceHealth])
		})
	}
}

func TestDiscoverFallsBackToNpuSmiWithoutAUsableDCMI(t *testing.T) {
	root, _ := fixture("atlas-800t-a2")
	for _, tc := range []struct {
		name    string
		library func(t *testing.T) string
		log     string
	}{
		{"no library at the default paths", func(*testing.T) string { return "" }, "No libdcmi.so on this node"},
		{"DCMI switched off", func(*testing.T) string { return vendors.LibraryNone }, ""},
		{"a configured path without a library", func(t *testing.T) string { return filepath.Join(t.TempDir(), "libdcmi.so") }, "Cannot use libdcmi.so"},
		{"a file that is no library", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "libdcmi.so")
			require.NoError(t, os.WriteFile(p, []byte("placeholder\n"), 0o644))
			return p
		}, "Cannot use libdcmi.so"},
		{"a library whose dcmi_init fails", func(t *testing.T) string {
			return buildMockDCMI(t, "atlas-800t-a2", "fail dcmi_init -8005")
		}, "dcmi_init returned -8005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			_, runner := fixture("atlas-800t-a2")
			b := New(Config{Root: root, Runner: runner, Library: tc.library(t)})
			for range 2 {
				inv, err := b.Discover(ctx)
				require.NoError(t, err, "a node without DCMI is read with npu-smi, never a failed start")
				require.Len(t, inv.Chips, 8)
				require.Equal(t, cmdInfo, inv.Chips[0].Sources[SourceModel])
			}
			if tc.log != "" {
				require.Contains(t, logs(), tc.log)
				require.Equal(t, 1, countLines(logs(), "reading Ascend chips with npu-smi"), "said once")
			}
		})
	}
}

func countLines(text, sub string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

func TestDiscoverThroughDCMIReadsTheTopologyWithNpuSmiWhereDCMICannot(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lib := buildMockDCMI(t, "atlas-800t-a2", "fail dcmi_get_topo_info_by_device_id -8255")
	root, runner := fixture("atlas-800t-a2")
	inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
	require.NoError(t, err)
	require.Equal(t, "hccs-0", inv.Chips[7].LinkGroup)
	require.Equal(t, cmdTopo, inv.Chips[0].Sources[SourceLinks])
	require.Equal(t, "libdcmi.so dcmi_get_device_chip_info_v2", inv.Chips[0].Sources[SourceModel])
}

// The 910A's rings are the model's: no tool is asked, by either backend,
// and a node missing some chips keeps the rings of the chips it has.
func TestDiscoverGivesThe910ATheRingsOfItsModel(t *testing.T) {
	for _, library := range []string{vendors.LibraryNone, "mock"} {
		t.Run(library, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			if library == "mock" {
				library = buildMockDCMI(t, "atlas-800-910a")
			}
			root, runner := fixture("atlas-800-910a")
			logged := &loggingRunner{next: runner}
			inv, err := New(Config{Root: root, Runner: logged, Library: library}).Discover(ctx)
			require.NoError(t, err)
			require.NotContains(t, logged.ran, cmdTopo)
			for _, c := range inv.Chips {
				require.Equal(t, fmt.Sprintf("hccs-%d", c.Index/4), c.LinkGroup, "chip %d", c.Index)
				require.Equal(t, ringSource, c.Sources[SourceLinks])
			}
		})
	}
}

func TestDiscoverThroughDCMIFailsOnAFailingCardList(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lib := buildMockDCMI(t, "atlas-800t-a2", "fail dcmi_get_card_list -8005")
	root, runner := fixture("atlas-800t-a2")
	_, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
	require.EqualError(t, err, "listing Ascend chips through "+lib+": dcmi_get_card_list returned -8005")
}

// One chip's failing DCMI call never hides the node: a chip DCMI cannot
// identify is left out with a log line naming the call and its code, an
// identified chip whose later call fails is published unhealthy
// (ReasonLibraryError), and the other chips publish as they are.
func TestDiscoverThroughDCMIKeepsTheOtherChipsWhenOneChipsCallFails(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		chips      int
		unhealthy  map[int]string // index → health message
		log        string
	}{
		{name: "health -8012: the chip dropped off the card", line: "fail-chip 1 dcmi_get_device_health -8012", chips: 8,
			unhealthy: map[int]string{1: "DCMI: dcmi_get_device_health returned -8012: the chip dropped off the card (device not ready)"},
			log:       "A DCMI call failed for this Ascend chip alone, reporting it unhealthy"},
		{name: "PCI info fails", line: "fail-chip 5 dcmi_get_device_pcie_info_v2 -8005", chips: 8,
			unhealthy: map[int]string{5: "DCMI: dcmi_get_device_pcie_info_v2 returned -8005"}},
		{name: "the chip's name cannot be read", line: "fail-chip 2 dcmi_get_device_chip_info_v2 -8005", chips: 7,
			log: `Leaving out Ascend chips DCMI cannot identify, publishing the others chips="card 2 device 0" err="dcmi_get_device_chip_info returned -8005"`},
		{name: "every chip's name fails", line: "fail dcmi_get_device_chip_info_v2 -8005", chips: 0,
			log: `chips="card 7 device 0" err="dcmi_get_device_chip_info returned -8005"`},
		{name: "a card's device count fails", line: "fail dcmi_get_device_num_in_card -8005", chips: 0,
			log: `chips="card 3" err="dcmi_get_device_num_in_card returned -8005"`},
		{name: "a link fails: PCIe only", line: "fail-chip 4 dcmi_get_topo_info_by_device_id -8005", chips: 8,
			log: "Cannot read a link between two Ascend chips through DCMI, treating every chip as PCIe-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			lib := buildMockDCMI(t, "atlas-800t-a2", tc.line)
			root, runner := fixture("atlas-800t-a2")
			inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, tc.chips)
			require.NoError(t, inv.Validate())
			for _, c := range inv.Chips {
				msg, bad := tc.unhealthy[c.Index]
				require.Equal(t, !bad, c.Healthy, "chip %d", c.Index)
				if bad {
					require.Equal(t, inventory.ReasonLibraryError, c.HealthReason)
					require.Equal(t, msg, c.HealthMessage)
				}
				if strings.Contains(tc.line, "topo") {
					require.Equal(t, inventory.LinkPCIe, c.LinkType)
				}
			}
			require.Contains(t, logs(), tc.log)
		})
	}
}

// Every profile's chips report DCMI's health and error codes.
func TestDiscoverThroughDCMIReadsHealthOnEveryProfile(t *testing.T) {
	for _, fixtureName := range []string{"atlas-800-910a", "atlas-800t-a2", "atlas-800t-a2-910b4", "atlas-300i-duo", "atlas-a3-20", "atlas-a3-24"} {
		t.Run(fixtureName, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, fixtureName, "health 1 3", "error 1 80E18005")
			var root string
			switch fixtureName {
			case "atlas-800t-a2-910b4":
				root = fakeRoot(t, []string{"0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0", "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"}, "0xd802")
			case "atlas-a3-20", "atlas-a3-24":
				root = fakeRoot(t, []string{"0000:9d:00.0", "0000:9f:00.0", "0000:99:00.0", "0000:9b:00.0"}, "0xd803")
			default:
				root, _ = fixture(fixtureName)
			}
			inv, err := New(Config{Root: root, Runner: discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			for _, c := range inv.Chips {
				require.Equal(t, c.Index != 1, c.Healthy, "chip %d", c.Index)
			}
			require.Equal(t, inventory.ReasonToolHealth(HealthCritical), inv.Chips[1].HealthReason)
			require.Regexp(t, `^DCMI reports health Critical, error codes? (0x[0-9A-F]{8}, )*0x80E18005$`, inv.Chips[1].HealthMessage)
		})
	}
}

// TestAHungDCMICallFailsFastAndTheLibraryRecovers: the driver hangs in
// dcmi_get_device_health. Discovery fails after the call's deadline
// instead of hanging the agent, the next discovery fails at once naming
// the hung call, and once the call returns the library answers again.
func TestAHungDCMICallFailsFastAndTheLibraryRecovers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	hang := filepath.Join(t.TempDir(), "hang")
	require.NoError(t, os.WriteFile(hang, nil, 0o644))
	lib := buildMockDCMI(t, "atlas-800t-a2", "hang dcmi_get_device_health "+hang)
	root, runner := fixture("atlas-800t-a2")
	cfg := Config{Root: root, Runner: runner, Library: lib, LibraryCallTimeout: 200 * time.Millisecond}
	b := New(cfg)
	require.Nil(t, b.HungLibraryCall(), "not loaded yet")

	start := time.Now()
	_, err := b.Discover(ctx)
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.ErrorContains(t, err, "card 0 device 0: "+lib+": dcmi_get_device_health: vendor library wedged: no answer after 200ms")
	// Another backend of the process (the agent's liveness makes one)
	// sees the hung call of the library discovery loaded.
	hung := New(cfg).HungLibraryCall()
	require.NotNil(t, hung)
	require.Equal(t, lib, hung.Library)
	require.Equal(t, "dcmi_get_device_health", hung.Call)
	require.WithinRange(t, hung.Since, start, time.Now())
	require.Nil(t, New(Config{Root: root, Runner: runner, Library: vendors.LibraryNone}).HungLibraryCall(), "a backend without DCMI has no library call")
	_, err = b.Discover(ctx)
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.ErrorContains(t, err, "dcmi_get_card_list: vendor library wedged: dcmi_get_device_health has not returned", "fails at once, without calling the library")

	require.NoError(t, os.Remove(hang))
	require.Eventually(t, func() bool {
		_, err := b.Discover(ctx)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the library answers again once the hung call returned")
	require.Nil(t, b.HungLibraryCall())
}

// TestABogusDCMICountIsAnErrorNamingTheCall: a library that reports more
// cards than its list holds, or an absurd number of devices in a card,
// fails discovery with the call named, instead of slicing past the list
// (a panic) or looping billions of times.
func TestABogusDCMICountIsAnErrorNamingTheCall(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"count dcmi_get_card_list 100000", "dcmi_get_card_list reports 100000 cards, not within 0..64"},
		{"count dcmi_get_card_list -3", "dcmi_get_card_list reports -3 cards, not within 0..64"},
		{"count dcmi_get_device_num_in_card 2147483647", "card 0: dcmi_get_device_num_in_card reports 2147483647 devices, not within 0..4"},
	} {
		t.Run(tt.line, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := buildMockDCMI(t, "atlas-800t-a2", tt.line)
			root, runner := fixture("atlas-800t-a2")
			_, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.ErrorContains(t, err, "listing Ascend chips through "+lib+": "+tt.want)
		})
	}
}

// Topology codes after 5 are read by the library's driver version; an
// unknown one, or BUTT (what the library answers with rc 0 when its pair
// lookup fails), never joins chips into an HCCS group.
func TestDiscoverThroughDCMIReadsTopologyCodesByDriverVersion(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, driver, code string
		hccs                        bool
	}{
		{"6 is SIO since 25.3.rc1", "atlas-800t-a2", "25.3.rc1", "6", true},
		{"6 is BUTT on an older 910B", "atlas-800t-a2", "24.1.rc2", "6", false},
		{"9 is BUTT since 25.3.rc1", "atlas-800t-a2", "25.3.rc1", "9", false},
		{"8 is UB since 25.3.rc1, not HCCS", "atlas-800t-a2", "25.3.rc1", "8", false},
		{"8 is BUTT on an older 910_93", "atlas-a3-20", "24.1.rc3", "8", false},
		{"7 is HCCS_SW on an older 910_93", "atlas-a3-20", "24.1.rc3", "7", true},
		{"an unknown version reads the 910_93 reference on 910_93", "atlas-a3-20", "unknown", "6", true},
		{"an unknown version reads nothing after 5 elsewhere", "atlas-800t-a2", "unknown", "6", false},
		{"a code no generation has", "atlas-800t-a2", "25.3.rc1", "42", false},
		{"HCCS is 3 everywhere", "atlas-800t-a2", "23.0.rc3", "3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lines := []string{"topo-default " + tc.code}
			if tc.fixture == "atlas-a3-20" {
				lines = append(lines, "topo 0 1 "+tc.code, "topo 2 3 "+tc.code)
			}
			if tc.driver != "unknown" {
				lines = append(lines, "driver-version "+tc.driver)
			} else {
				lines = append(lines, "fail dcmi_get_driver_version -8255")
			}
			lib := buildMockDCMI(t, tc.fixture, lines...)
			var root string
			if tc.fixture == "atlas-a3-20" {
				root = fakeRoot(t, a3Buses, "0xd803")
			} else {
				root, _ = fixture(tc.fixture)
			}
			inv, err := New(Config{Root: root, Runner: discoverytest.MapRunner{}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, inv.Chips)
			for _, c := range inv.Chips {
				if tc.hccs {
					require.Equal(t, "hccs-0", c.LinkGroup, "chip %d", c.Index)
				} else {
					require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup, "chip %d", c.Index)
				}
			}
		})
	}
}

// The rings are the Atlas 800's eight 910A: a node of Atlas 300T cards
// (one PCIe 910A each) has no HCCS between them and is PCIe-only.
func TestDiscoverGivesNoRingsToA910ANodeThatIsNoAtlas800(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lib := buildMockDCMI(t, "atlas-800-910a")
	path := os.Getenv("ACCEL_DRA_DCMI_FIXTURE")
	var kept []string
	for _, l := range strings.Split(readFile(t, path), "\n") {
		if strings.HasPrefix(l, "chip ") && !strings.HasPrefix(l, "chip 0 ") && !strings.HasPrefix(l, "chip 1 ") {
			continue
		}
		kept = append(kept, l)
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644))
	root := fakeRoot(t, []string{"0000:61:00.0", "0000:db:00.0"}, "0xd801")
	// npu-smi refuses the matrix of a 910A on x86 (npu_info.c:1685-1691).
	inv, err := New(Config{Root: root, Runner: discoverytest.MapRunner{}, Library: lib}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 2)
	for _, c := range inv.Chips {
		require.Equal(t, inventory.LinkPCIe, c.LinkType, "chip %d", c.Index)
		require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup, "chip %d", c.Index)
		require.NotEqual(t, ringSource, c.Sources[SourceLinks])
	}
}

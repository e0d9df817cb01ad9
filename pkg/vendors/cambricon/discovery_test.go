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

package cambricon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

const mib = int64(1) << 20

func intp(i int) *int { return &i }

func ports(n int64) map[string]inventory.Value {
	return map[string]inventory.Value{ExtraMLULinkPorts: inventory.IntValue(n)}
}

func TestDiscoverReadsEveryFactOfAnMLU370X8Server(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, runner := fixture("mlu370-x8")

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)

	layout := []struct {
		bus, root string
		numa      int
	}{
		{"0000:1a:00.0", "pci0000:17", 0}, {"0000:1b:00.0", "pci0000:17", 0},
		{"0000:3d:00.0", "pci0000:3a", 0}, {"0000:3e:00.0", "pci0000:3a", 0},
		{"0000:88:00.0", "pci0000:85", 1}, {"0000:89:00.0", "pci0000:85", 1},
		{"0000:b1:00.0", "pci0000:ae", 1}, {"0000:b2:00.0", "pci0000:ae", 1},
	}
	var want []inventory.Chip
	for i, l := range layout {
		want = append(want, inventory.Chip{
			Vendor:        Vendor,
			Model:         "MLU370-X8",
			Index:         i,
			UUID:          fmt.Sprintf("54010%03d-2311-0000-0000-000000000000", i),
			MemoryBytes:   23308 * mib,
			Cores:         16,
			LinkType:      inventory.LinkMLULink,
			LinkGroup:     fmt.Sprintf("mlulink-%d", i/2), // the two chips of one board
			NUMANode:      intp(l.numa),
			PCIBusID:      l.bus,
			PCIeRoot:      l.root,
			DriverVersion: "5.10.26",
			Healthy:       true,
			Sources: map[string]string{
				"model": "cnmon info", "uuid": "cnmon info", "memory": "cnmon info", "driverVersion": "cnmon info",
				"health": "cnmon info, device files", "cores": "model table (models.go)",
				"linkGroup": "cnmon topo -m", "mluLinkPorts": "cnmon topo -m", "numaNode": "sysfs", "pcieRoot": "sysfs", "pciBusID": "cnmon info",
				"partitionMode": "/proc/driver/cambricon/mlus/" + l.bus + "/smlu",
			},
			DeviceNodes: []string{
				fmt.Sprintf("/dev/cambricon_dev%d", i),
				fmt.Sprintf("/dev/cambricon_ipcm%d", i),
				fmt.Sprintf("/dev/commu%d", i),
			},
			Extra: ports(1),
		})
	}
	require.Equal(t, inventory.Inventory{
		Chips:             want,
		SharedDeviceNodes: map[inventory.Vendor][]string{Vendor: {"/dev/cambricon_ctl"}},
	}, inv)
	require.NoError(t, inv.Validate())
}

func TestDiscoverFindsTheKeyFactsOfEachFixtureNode(t *testing.T) {
	type facts struct {
		model       string
		memory      int64
		cores       int
		linkType    inventory.LinkType
		groups      []string
		numa        []int
		pcieRoots   []string
		ports       []int64
		deviceNodes int
		driver      string
		// shared are the vendor's shared nodes: cambricon_ctl, and the
		// GPU-direct node on training nodes.
		shared []string
		// msgq says the chip has the cambr-msgq:N and cambr-rpc:N nodes
		// of newer drivers, last in its list.
		msgq bool
	}
	for _, tc := range []struct {
		name string
		node string
		want facts
	}{
		{
			name: "an MLU590 server is one MLU-Link group of eight chips",
			node: "mlu590",
			want: facts{
				model: "MLU590-M9", memory: 98304 * mib, cores: 48, linkType: inventory.LinkMLULink,
				groups:      []string{"mlulink-0", "mlulink-0", "mlulink-0", "mlulink-0", "mlulink-0", "mlulink-0", "mlulink-0", "mlulink-0"},
				numa:        []int{0, 0, 0, 0, 1, 1, 1, 1},
				pcieRoots:   []string{"pci0000:18", "pci0000:18", "pci0000:3a", "pci0000:3a", "pci0000:99", "pci0000:99", "pci0000:ba", "pci0000:ba"},
				ports:       []int64{7, 7, 7, 7, 7, 7, 7, 7},
				deviceNodes: 6, driver: "6.2.29",
				shared: []string{"/dev/cambricon_ctl", "/dev/cambricon_gdr"}, msgq: true,
			},
		},
		{
			name: "an MLU270 server has PCIe-only chips, each in a group of its own",
			node: "mlu270",
			want: facts{
				model: "MLU270-S4", memory: 16384 * mib, cores: 16, linkType: inventory.LinkPCIe,
				groups:      []string{"pcie-0", "pcie-1", "pcie-2"},
				numa:        []int{0, 0, 1},
				pcieRoots:   []string{"pci0000:00", "pci0000:00", "pci0000:80"},
				ports:       []int64{0, 0, 0},
				deviceNodes: 1, driver: "4.20.18", shared: []string{"/dev/cambricon_ctl"},
			},
		},
		{
			name: "an MLU370-X8 server pairs the two chips of each board",
			node: "mlu370-x8",
			want: facts{
				model: "MLU370-X8", memory: 23308 * mib, cores: 16, linkType: inventory.LinkMLULink,
				groups:      []string{"mlulink-0", "mlulink-0", "mlulink-1", "mlulink-1", "mlulink-2", "mlulink-2", "mlulink-3", "mlulink-3"},
				numa:        []int{0, 0, 0, 0, 1, 1, 1, 1},
				pcieRoots:   []string{"pci0000:17", "pci0000:17", "pci0000:3a", "pci0000:3a", "pci0000:85", "pci0000:85", "pci0000:ae", "pci0000:ae"},
				ports:       []int64{1, 1, 1, 1, 1, 1, 1, 1},
				deviceNodes: 3, driver: "5.10.26", shared: []string{"/dev/cambricon_ctl"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, runner := fixture(tc.node)
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, inv.Validate())
			require.Len(t, inv.Chips, len(tc.want.groups))
			require.Equal(t, tc.want.shared, inv.SharedDeviceNodes[Vendor])
			uuids := map[string]bool{}
			for i, c := range inv.Chips {
				require.Equal(t, i, c.Index)
				require.Equal(t, Vendor, c.Vendor)
				require.Equal(t, tc.want.model, c.Model)
				require.Equal(t, tc.want.memory, c.MemoryBytes)
				require.Equal(t, tc.want.cores, c.Cores)
				require.Equal(t, tc.want.linkType, c.LinkType)
				require.Equal(t, tc.want.groups[i], c.LinkGroup)
				require.Equal(t, intp(tc.want.numa[i]), c.NUMANode)
				require.Equal(t, tc.want.pcieRoots[i], c.PCIeRoot)
				require.Equal(t, inventory.IntValue(tc.want.ports[i]), c.Extra[ExtraMLULinkPorts])
				require.Len(t, c.DeviceNodes, tc.want.deviceNodes)
				require.Equal(t, fmt.Sprintf("/dev/cambricon_dev%d", i), c.DeviceNodes[0])
				if tc.want.msgq {
					require.Equal(t, []string{fmt.Sprintf("/dev/cambr-msgq:%d", i), fmt.Sprintf("/dev/cambr-rpc:%d", i)}, c.DeviceNodes[len(c.DeviceNodes)-2:])
				}
				require.Equal(t, tc.want.driver, c.DriverVersion)
				require.True(t, c.Healthy)
				require.NotEmpty(t, c.UUID)
				require.False(t, uuids[c.UUID], "UUID %s twice", c.UUID)
				uuids[c.UUID] = true
			}
		})
	}
}

func TestDiscoverWithoutCambriconDeviceFilesReturnsNothingAndNeverRunsCnmon(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
	}{
		{name: "a root without /dev"},
		{name: "a /dev without cambricon_devN", files: []string{"dev/davinci0", "dev/cambricon_ctl", "dev/cambricon_devX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root := t.TempDir()
			discoverytest.WriteFiles(t, root, tc.files...)
			inv, err := New(Config{Root: root, Runner: discoverytest.FailingRunner{T: t}}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, inventory.Inventory{}, inv)
		})
	}
}

func TestDiscoverReportsAListedChipWithoutDeviceFileUnhealthyAndSkipsUnlistedFiles(t *testing.T) {
	ctx, logs := discoverytest.BufferedContext(t)
	src, runner := fixture("mlu270")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Remove(filepath.Join(root, "dev", "cambricon_dev2")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "cambricon_dev9"), nil, 0o644))

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 3, "the unlisted cambricon_dev9 is skipped")
	require.True(t, inv.Chips[0].Healthy)
	require.True(t, inv.Chips[1].Healthy)
	require.False(t, inv.Chips[2].Healthy, "cnmon lists card 2 but /dev/cambricon_dev2 is missing")
	require.Equal(t, inventory.ReasonDeviceFileMissing, inv.Chips[2].HealthReason)

	require.Contains(t, logs(), "device file is missing")
	require.Contains(t, logs(), "/dev/cambricon_dev2")
	require.Contains(t, logs(), `device file that is not listed by="cnmon"`)
	require.Contains(t, logs(), "/dev/cambricon_dev9")
}

func TestDiscoverReportsChipsCnmonCallsUnhealthyUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, reason string
	}{
		{name: "device health is not Good", old: "Device                     : Good", new: "Device                     : Bad", reason: "HealthBad"},
		{name: "the driver is not running", old: "Driver                     : Running", new: "Driver                     : Stopped", reason: inventory.ReasonDriverNotRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture("mlu590")
			runner := discoverytest.MapRunner{
				"cnmon info":    discoverytest.ReplaceOnce(t, readRecording(t, "mlu590", "info"), tc.old, tc.new),
				"cnmon topo -m": readRecording(t, "mlu590", "topo", "-m"),
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.False(t, inv.Chips[0].Healthy)
			require.Equal(t, tc.reason, inv.Chips[0].HealthReason)
			for _, c := range inv.Chips[1:] {
				require.True(t, c.Healthy)
			}
		})
	}
}

func TestDiscoverRejectsAChipWhosePCIVendorIsNotCambricon(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("mlu270")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "devices", "pci0000:00", "0000:05:00.0", "vendor"), []byte("0x10de\n"), 0o644))

	_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.ErrorContains(t, err, "MLU card 1: PCI function 0000:05:00.0 has vendor id 0x10de, not Cambricon's 0xcabc")
}

func TestDiscoverReportsAChipMissingFromSysfsUnhealthy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("mlu270")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Remove(filepath.Join(root, "sys", "bus", "pci", "devices", "0000:83:00.0")))

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err, "one card off the bus must not stop the others from being served")
	require.Len(t, inv.Chips, 3)
	gone := inv.Chips[2]
	require.False(t, gone.Healthy)
	require.Equal(t, inventory.ReasonPCIDeviceMissing, gone.HealthReason)
	require.Equal(t, "PCI function 0000:83:00.0 is gone from sysfs", gone.HealthMessage)
	require.Equal(t, "0000:83:00.0", gone.PCIBusID, "the chip keeps its PCI address")
	require.True(t, inv.Chips[0].Healthy)
}

func TestDiscoverRejectsAChipWhosePCIFunctionCannotBeRead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("mlu270")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Remove(filepath.Join(root, "sys", "devices", "pci0000:80", "0000:83:00.0", "vendor")))

	_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.ErrorContains(t, err, "reading PCI facts of MLU card 2 (0000:83:00.0) from sysfs")
}

// TestABadRowOfCnmonOutputNeverHidesTheNode: a card block of cnmon info
// that cannot be read leaves that card out, a topology that cannot be
// read (or lacks a card's row) leaves the cards it does not cover on PCIe
// only, each with a log line naming the command; the other chips publish.
func TestABadRowOfCnmonOutputNeverHidesTheNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		info     func(string) string
		topo     func(string) string
		leftOut  []int
		pcieOnly []int
		log      string
	}{
		{
			name: "a garbled memory size in card 0's block of cnmon info",
			info: func(s string) string {
				return discoverytest.ReplaceOnce(t, s, "Total                      : 23308 MiB", "Total                      : lots MiB")
			},
			leftOut:  []int{0},
			pcieOnly: []int{1}, // its MLU-Link partner is gone
			log:      `Leaving out an MLU card whose cnmon listing cannot be read command="cnmon info" card=0 err="parsing cnmon info: line 18: memory size \"lots MiB\": \"lots\" is not a non-negative integer`,
		},
		{
			name: "card 0's block of cnmon info without its product name",
			info: func(s string) string {
				return discoverytest.ReplaceOnce(t, s, "    Product Name                   : MLU370-X8\n", "")
			},
			leftOut:  []int{0},
			pcieOnly: []int{1},
			log:      "card 0 has no Product Name (truncated output?)",
		},
		{
			name:     "a self code off the diagonal in cnmon topo -m",
			topo:     func(s string) string { return discoverytest.ReplaceOnce(t, s, "MLK1", "X") },
			pcieOnly: []int{0, 1, 2, 3, 4, 5, 6, 7},
			log:      `Cannot read the MLU-Link topology, publishing every MLU card on PCIe only command="cnmon topo -m"`,
		},
		{
			name:     "card 1 without a row or column in cnmon topo -m",
			topo:     withoutCard1,
			pcieOnly: []int{0, 1},
			log:      `An MLU card has no row in the topology matrix, publishing it on PCIe only command="cnmon topo -m" card=1`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("mlu370-x8")
			info, topo := readRecording(t, "mlu370-x8", "info"), readRecording(t, "mlu370-x8", "topo", "-m")
			if tc.info != nil {
				info = tc.info(info)
			}
			if tc.topo != nil {
				topo = tc.topo(topo)
			}
			inv, err := New(Config{Root: root, Runner: discoverytest.MapRunner{"cnmon info": info, "cnmon topo -m": topo}}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, inv.Validate())
			require.Contains(t, logs(), tc.log)
			require.Len(t, inv.Chips, 8-len(tc.leftOut))
			for _, c := range inv.Chips {
				require.NotContains(t, tc.leftOut, c.Index)
				require.True(t, c.Healthy, "chip %d", c.Index)
				if slices.Contains(tc.pcieOnly, c.Index) {
					require.Equal(t, inventory.LinkPCIe, c.LinkType, "chip %d", c.Index)
					require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup)
				} else {
					require.Equal(t, inventory.LinkMLULink, c.LinkType, "chip %d", c.Index)
				}
			}
		})
	}
}

// withoutCard1 drops MLU1's row and column from a cnmon topo -m matrix.
func withoutCard1(s string) string {
	var out []string
	for i, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0:
			f = slices.Delete(f, 1, 2)
		case len(f) > 2 && strings.HasPrefix(f[0], "MLU"):
			if f[0] == "MLU1" {
				continue
			}
			f = slices.Delete(f, 2, 3)
		default:
			out = append(out, line)
			continue
		}
		out = append(out, strings.Join(f, "    "))
	}
	return strings.Join(out, "\n")
}

// Output whose cards cannot be told apart still fails discovery, naming
// the command and line.
func TestDiscoverReturnsParseErrorsNamingCommandAndLine(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("mlu590")
	info := discoverytest.ReplaceOnce(t, readRecording(t, "mlu590", "info"), "Card 1", "Card one")
	_, err := New(Config{Root: root, Runner: discoverytest.MapRunner{"cnmon info": info, "cnmon topo -m": readRecording(t, "mlu590", "topo", "-m")}}).Discover(ctx)
	discoverytest.RequireParseError(t, err, "cnmon info", 34, `parsing cnmon info: line 34: card number "one" is not a non-negative integer`)
}

func TestDiscoverSaysWhatItWasDoingWhenCnmonFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("mlu590")
	_, err := New(Config{Root: root, Runner: discovery.RecordedRunner{Dir: t.TempDir()}}).Discover(ctx)
	require.ErrorIs(t, err, discovery.ErrNoRecording)
	require.ErrorContains(t, err, "listing MLU cards: running cnmon info")
}

func TestDiscoverUsesTheConfiguredCnmonCommand(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("mlu270")
	runner := discoverytest.MapRunner{
		"/usr/bin/cnmon info":    readRecording(t, "mlu270", "info"),
		"/usr/bin/cnmon topo -m": readRecording(t, "mlu270", "topo", "-m"),
	}
	inv, err := New(Config{Root: root, Runner: runner, Cnmon: "/usr/bin/cnmon"}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 3)
}

func TestDiscoverFailsWhenDevCannotBeListed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev"), nil, 0o644)) // a file where /dev belongs
	_, err := New(Config{Root: root, Runner: discoverytest.FailingRunner{T: t}}).Discover(ctx)
	require.ErrorContains(t, err, "looking for Cambricon device files")
}

func TestBackendIsNamedCambricon(t *testing.T) {
	require.Equal(t, "cambricon", New(Config{}).Name())
}

func TestDiscoverReadsTheSMLUModeOfEachChipFromProcfs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, runner := fixture("mlu590")
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	for i := 0; i < 6; i++ {
		require.Empty(t, inv.Chips[i].PartitionModeOff, "chip %d: smlu_enable:1", i)
	}
	require.Equal(t, "sMLU mode is off on card 6 (/proc/driver/cambricon/mlus/0000:bd:00.0/smlu; switch it on with cnmon set -c 6 -smlu on)",
		inv.Chips[6].PartitionModeOff)
	require.Equal(t, "sMLU mode unknown: /proc/driver/cambricon/mlus/0000:be:00.0/smlu is not readable (a driver without sMLU?)",
		inv.Chips[7].PartitionModeOff)

	// MLU270s have no sMLU: no mode to read, nothing to say.
	root, runner = fixture("mlu270")
	inv, err = New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	for _, c := range inv.Chips {
		require.Empty(t, c.PartitionModeOff)
		require.NotContains(t, c.Sources, "partitionMode")
	}
}

func TestParseSMLUModeReadsTheDriversLine(t *testing.T) {
	for _, tc := range []struct {
		text                string
		support, enable, ok bool
	}{
		{text: "smlu_support:1 smlu_enable:1\nsubsys[0]:mem total = 1, usage = 0, overcommit factor = 0\n", support: true, enable: true, ok: true},
		{text: "smlu_support:1 smlu_enable:0\n", support: true, ok: true},
		{text: "smlu_support:0 smlu_enable:0\n", ok: true},
		{text: "current_ns:0 not bind any smlu_cgroup.\n"},
		{text: "smlu_support:1\n"},
		{text: ""},
	} {
		s, e, ok := parseSMLUMode([]byte(tc.text))
		require.Equal(t, []bool{tc.support, tc.enable, tc.ok}, []bool{s, e, ok}, "%q", tc.text)
	}
}

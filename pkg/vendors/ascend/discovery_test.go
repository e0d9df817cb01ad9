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
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// pciSlot is where a fixture chip sits: bus id, root complex, NUMA node.
type pciSlot struct {
	bus, root string
	numa      int
}

// expectChips builds the chips a fixture node must produce: one per slot,
// index i, logic id i, the node's model facts, and the link group groupOf(i).
func expectChips(chipName string, memory int64, cores int, driver string, slots []pciSlot, groupOf func(i int) (inventory.LinkType, string)) []inventory.Chip {
	var out []inventory.Chip
	for i, s := range slots {
		lt, lg := groupOf(i)
		out = append(out, inventory.Chip{
			Vendor:        Vendor,
			Model:         "Ascend" + chipName,
			Index:         i,
			UUID:          "ascend-" + s.bus,
			MemoryBytes:   memory,
			Cores:         cores,
			LinkType:      lt,
			LinkGroup:     lg,
			NUMANode:      intp(s.numa),
			PCIBusID:      s.bus,
			PCIeRoot:      s.root,
			DriverVersion: driver,
			Healthy:       true,
			DeviceNodes:   []string{fmt.Sprintf("/dev/davinci%d", i)},
			Extra: map[string]inventory.Value{
				ExtraChipName: inventory.StringValue(chipName),
				ExtraLogicID:  inventory.IntValue(int64(i)),
			},
			Sources: toolSourcesWant(chipName),
		})
	}
	return out
}

// toolSourcesWant is what npu-smi discovery says read each fact of a
// healthy, partitionable fixture chip.
func toolSourcesWant(chipName string) map[string]string {
	links := cmdTopo
	if chipName == ringChipName {
		links = ringSource
	}
	return map[string]string{
		SourceChips: cmdInfo, SourceModel: cmdInfo, SourceMemory: cmdInfo, SourceHealth: cmdInfo,
		SourceLogicID: cmdMap, SourceLinks: links, SourcePCI: "sysfs",
		SourceCores:         "chip name " + chipName + " (built-in table)",
		SourceDriverVersion: "/usr/local/Ascend/driver/version.info",
		SourcePartitionMode: cmdVNPUMode,
	}
}

var allSharedNodes = map[inventory.Vendor][]string{
	Vendor: {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/dvpp_cmdlist"},
}

func TestDiscoverReadsEveryFactOfEachFixtureNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		node string
		want []inventory.Chip
	}{
		{
			name: "an Atlas 800 with eight 910A has two HCCS rings of four",
			node: "atlas-800-910a",
			want: expectChips("910A", 32768*mib, 30, "23.0.3", []pciSlot{
				{"0000:61:00.0", "pci0000:5d", 0}, {"0000:db:00.0", "pci0000:d7", 1},
				{"0000:b2:00.0", "pci0000:ae", 1}, {"0000:3e:00.0", "pci0000:3a", 0},
				{"0000:60:00.0", "pci0000:5d", 0}, {"0000:da:00.0", "pci0000:d7", 1},
				{"0000:b1:00.0", "pci0000:ae", 1}, {"0000:3d:00.0", "pci0000:3a", 0},
			}, func(i int) (inventory.LinkType, string) {
				return inventory.LinkHCCS, fmt.Sprintf("hccs-%d", i/4)
			}),
		},
		{
			name: "an Atlas 800T A2 with eight 910B3 is one HCCS mesh",
			node: "atlas-800t-a2",
			want: expectChips("910B3", 65536*mib, 20, "24.1.0", []pciSlot{
				{"0000:c1:00.0", "pci0000:c0", 6}, {"0000:c2:00.0", "pci0000:c0", 6},
				{"0000:81:00.0", "pci0000:80", 4}, {"0000:82:00.0", "pci0000:80", 4},
				{"0000:01:00.0", "pci0000:00", 0}, {"0000:02:00.0", "pci0000:00", 0},
				{"0000:41:00.0", "pci0000:40", 2}, {"0000:42:00.0", "pci0000:40", 2},
			}, func(int) (inventory.LinkType, string) { return inventory.LinkHCCS, "hccs-0" }),
		},
		{
			// Both chips of a card show the card's bus id, with 44280 and
			// 43693 MB (nvtop issue #421).
			name: "two Atlas 300I Duo cards give four PCIe-only 310P3 chips, two per PCI function",
			node: "atlas-300i-duo",
			want: func() []inventory.Chip {
				chips := expectChips("310P3", 0, 8, "23.0.3", []pciSlot{
					{"0000:01:00.0", "pci0000:00", 0}, {"0000:01:00.0", "pci0000:00", 0},
					{"0000:81:00.0", "pci0000:80", 2}, {"0000:81:00.0", "pci0000:80", 2},
				}, func(i int) (inventory.LinkType, string) { return inventory.LinkPCIe, fmt.Sprintf("pcie-%d", i) })
				for i := range chips {
					chips[i].UUID = fmt.Sprintf("%s-chip%d", chips[i].UUID, i%2)
					chips[i].MemoryBytes = []int64{44280, 43693}[i%2] * mib
				}
				return chips
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, runner := fixture(tc.node)
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, inventory.Inventory{Chips: tc.want, SharedDeviceNodes: allSharedNodes}, inv)
			require.NoError(t, inv.Validate())
		})
	}
}

func TestDiscoverWithoutAscendDeviceFilesReturnsNothingAndNeverRunsNpuSmi(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
	}{
		{name: "a root without /dev"},
		{name: "a /dev with only shared and foreign nodes", files: []string{"dev/davinci_manager", "dev/devmm_svm", "dev/hisi_hdc", "dev/cambricon_dev0", "dev/davinciX"}},
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
	src, runner := fixture("atlas-300i-duo")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Remove(filepath.Join(root, "dev", "davinci3")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "davinci9"), nil, 0o644))

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 4, "the unlisted davinci9 is skipped")
	for _, c := range inv.Chips[:3] {
		require.True(t, c.Healthy)
	}
	require.False(t, inv.Chips[3].Healthy, "npu-smi lists chip 3 but /dev/davinci3 is missing")
	require.Equal(t, inventory.ReasonDeviceFileMissing, inv.Chips[3].HealthReason)
	require.Equal(t, []string{"/dev/davinci3"}, inv.Chips[3].DeviceNodes)

	require.Contains(t, logs(), "device file is missing")
	require.Contains(t, logs(), "/dev/davinci3")
	require.Contains(t, logs(), "npu-smi does not list")
	require.Contains(t, logs(), "/dev/davinci9")
}

// alarmOn returns a node's recordings with NPU 1 (chip 0) reporting health
// in the table and in its health output, which is the recording of an
// alarming chip.
func alarmOn(t *testing.T, node, health string) discoverytest.MapRunner {
	t.Helper()
	runner := recordings(t, node)
	runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "| OK            | 92.0", "| "+fmt.Sprintf("%-14s", health)+"| 92.0")
	runner[cmdHealth(1, 0)] = discoverytest.ReplaceOnce(t, readRecording(t, node, healthArgs(1, 0)...), ": Alarm", ": "+health)
	return runner
}

func TestDiscoverReportsChipsNpuSmiCallsUnhealthyUnhealthyWithTheirErrorCodes(t *testing.T) {
	for health, reason := range map[string]string{"Warning": "HealthWarning", "Alarm": "HealthAlarm", "Critical": "HealthCritical", "UNKNOWN": "HealthUnknown"} {
		t.Run(health, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("atlas-800t-a2")
			inv, err := New(Config{Root: root, Runner: alarmOn(t, "atlas-800t-a2", health)}).Discover(ctx)
			require.NoError(t, err)
			for _, c := range inv.Chips {
				require.Equal(t, c.Index != 1, c.Healthy, "chip %d", c.Index)
			}
			require.Equal(t, reason, inv.Chips[1].HealthReason, "the reason, the taint's value, stays the table's health")
			require.Equal(t, "npu-smi reports health "+health+alarmCodesDescribe, inv.Chips[1].HealthMessage)
			require.Contains(t, logs(), "npu-smi tool reports an unhealthy Ascend chip")
			require.Contains(t, logs(), health)
			require.Contains(t, logs(), "0x8C084E00")
		})
	}
}

func TestDiscoverAsksNpuSmiForTheErrorCodesOfUnhealthyChipsOnly(t *testing.T) {
	root, recorded := fixture("atlas-800t-a2")
	noDev1 := discoverytest.CopyTree(t, root)
	require.NoError(t, os.Remove(filepath.Join(noDev1, "dev", "davinci1")))
	base := append(append([]string{cmdInfo, cmdMap}, cmdRemap(0, 1, 2, 3, 4, 5, 6, 7)...), cmdTopo, cmdVNPUMode)
	noDev1Base := append(append([]string{cmdInfo, cmdMap}, cmdRemap(0, 2, 3, 4, 5, 6, 7)...), cmdTopo, cmdVNPUMode)
	for _, tc := range []struct {
		name   string
		root   string
		runner discovery.CommandRunner
		want   []string
		reason string // of chip 1
	}{
		{name: "a healthy node runs the four queries of every poll", root: root, runner: recorded, want: base},
		{name: "one alarming chip adds one query, for that chip", root: root, runner: alarmOn(t, "atlas-800t-a2", "Alarm"),
			want: append(append([]string{cmdInfo, cmdMap}, cmdRemap(0, 1, 2, 3, 4, 5, 6, 7)...), cmdTopo, cmdHealth(1, 0), cmdVNPUMode), reason: "HealthAlarm"},
		{name: "an alarming chip without device file is reported for that, without asking", root: noDev1,
			runner: alarmOn(t, "atlas-800t-a2", "Alarm"), want: noDev1Base, reason: inventory.ReasonDeviceFileMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			runner := &loggingRunner{next: tc.runner}
			inv, err := New(Config{Root: tc.root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.want, runner.ran)
			require.Equal(t, tc.reason, inv.Chips[1].HealthReason)
		})
	}
}

func TestDiscoverReadsTheErrorCodesOfAnAlarmingChipFromItsRecording(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, _ := fixture("atlas-800t-a2")
	tools := discoverytest.CopyTree(t, filepath.Join("testdata", "atlas-800t-a2", "npu-smi"))
	info := filepath.Join(tools, discovery.RecordingName("npu-smi", "info"))
	table, err := os.ReadFile(info)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(info, []byte(discoverytest.ReplaceOnce(t, string(table), "| OK            | 92.0", "| Alarm         | 92.0")), 0o644))

	inv, err := New(Config{Root: src, Runner: discovery.RecordedRunner{Dir: tools}}).Discover(ctx)
	require.NoError(t, err)
	require.False(t, inv.Chips[1].Healthy)
	require.Equal(t, "HealthAlarm", inv.Chips[1].HealthReason)
	require.Equal(t, "npu-smi reports health Alarm"+alarmCodesDescribe, inv.Chips[1].HealthMessage)
}

func TestDiscoverKeepsAChipUnhealthyWhenItsErrorCodesCannotBeRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		output  *string // nil: the command fails
		message string
		warned  bool // logs that the codes could not be read
	}{
		{name: "npu-smi fails", warned: true, message: "npu-smi reports health Alarm; reading the error codes of NPU 1 chip 0: running npu-smi info -t health -i 1 -c 0: not found"},
		{name: "npu-smi prints its usage", warned: true, output: ptr("Invalid card id.\nError parameter of -i\n"),
			message: `npu-smi reports health Alarm; reading the error codes of NPU 1 chip 0: parsing npu-smi info -t health -i 1 -c 0: line 1: expected "Key : Value": "Invalid card id."`},
		{name: "the output is cut short", warned: true, output: ptr("\tHealth Status                  : Alarm\n"),
			message: `npu-smi reports health Alarm; reading the error codes of NPU 1 chip 0: parsing npu-smi info -t health -i 1 -c 0: no "Error Code" line in the output (truncated output?)`},
		{name: "the chip recovered in between", output: ptr("Health Status : OK\nError Code : NA\nError Information : NA\n"),
			message: "npu-smi reports health Alarm (OK when its error codes were read), no error code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := alarmOn(t, "atlas-800t-a2", "Alarm")
			delete(runner, cmdHealth(1, 0))
			if tc.output != nil {
				runner[cmdHealth(1, 0)] = *tc.output
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err, "the table's health is enough to report the chip")
			require.Len(t, inv.Chips, 8)
			require.False(t, inv.Chips[1].Healthy)
			require.Equal(t, "HealthAlarm", inv.Chips[1].HealthReason)
			require.Equal(t, tc.message, inv.Chips[1].HealthMessage)
			require.Equal(t, tc.warned, strings.Contains(logs(), "Cannot read the error codes of an unhealthy Ascend chip"))
		})
	}
}

func TestDiscoverFailsWhenThePollIsCancelledWhileReadingErrorCodes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	root, _ := fixture("atlas-800t-a2")
	answers := alarmOn(t, "atlas-800t-a2", "Alarm")
	runner := runnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if discovery.CommandLine(name, args...) == cmdHealth(1, 0) {
			cancel() // the poll's deadline passes while npu-smi runs
			return nil, fmt.Errorf("running %s: %w", discovery.CommandLine(name, args...), ctx.Err())
		}
		return answers.Run(ctx, name, args...)
	})
	_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "reading the error codes of NPU 1 chip 0: running npu-smi info -t health -i 1 -c 0")
}

func TestDiscoverReadsTheDriverVersionFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content *string // nil removes the file
		want    string
		errText string
	}{
		{name: "a release candidate becomes a semver pre-release", content: ptr("Version=23.0.rc3\npackage_version=23.0.rc3\n"), want: "23.0.0-rc3"},
		{name: "a missing file leaves the version empty", content: nil, want: ""},
		{name: "a file without a Version line is a parse error", content: ptr("package_version=23.0.3\n"), errText: `version.info: no "Version=" line`},
		{name: "a garbled version is a parse error naming the file and line", content: ptr("ascendhal_version=7.35.19\nVersion=twenty-three\n"), errText: `version.info: line 2: driver version "twenty-three" is not a version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			src, runner := fixture("atlas-800t-a2")
			root := discoverytest.CopyTree(t, src)
			path := filepath.Join(root, "usr", "local", "Ascend", "driver", "version.info")
			if tc.content == nil {
				require.NoError(t, os.Remove(path))
			} else {
				require.NoError(t, os.WriteFile(path, []byte(*tc.content), 0o644))
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			if tc.errText != "" {
				var perr *discovery.ParseError
				require.True(t, errors.As(err, &perr), "%v", err)
				require.Equal(t, path, perr.Source)
				require.ErrorContains(t, err, "reading the Ascend driver version: parsing ")
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			for _, c := range inv.Chips {
				require.Equal(t, tc.want, c.DriverVersion)
			}
			if tc.content == nil {
				require.Contains(t, logs(), "No Ascend driver version file")
			}
		})
	}
}

func TestDiscoverFailsWhenTheDriverVersionFileCannotBeRead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("atlas-800t-a2")
	root := discoverytest.CopyTree(t, src)
	path := filepath.Join(root, "usr", "local", "Ascend", "driver", "version.info")
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Mkdir(path, 0o755)) // a directory where the file belongs

	_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.ErrorContains(t, err, "reading the Ascend driver version: read ")
}

func ptr(s string) *string { return &s }

func TestDiscoverRejectsAChipWhosePCIVendorIsNotHuawei(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("atlas-800-910a")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "devices", "pci0000:d7", "0000:db:00.0", "vendor"), []byte("0x10de\n"), 0o644))

	_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.ErrorContains(t, err, "NPU 1 chip 0: PCI function 0000:db:00.0 has vendor id 0x10de, not Huawei's 0x19e5: npu-smi and sysfs disagree")
}

func TestDiscoverReportsAChipMissingFromSysfsUnhealthy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, runner := fixture("atlas-300i-duo")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Remove(filepath.Join(root, "sys", "bus", "pci", "devices", "0000:81:00.0")))

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err, "one card off the bus must not stop the others from being served")
	var gone []inventory.Chip
	for _, c := range inv.Chips {
		if !c.Healthy {
			gone = append(gone, c)
		}
	}
	require.Len(t, gone, 2, "both chips of the card share its PCI function")
	for _, c := range gone {
		require.Equal(t, inventory.ReasonPCIDeviceMissing, c.HealthReason)
		require.Equal(t, "PCI function 0000:81:00.0 is gone from sysfs", c.HealthMessage)
		require.Equal(t, "0000:81:00.0", c.PCIBusID, "the chip keeps its PCI address")
	}
}

func TestDiscoverReturnsParseErrorsNamingCommandAndLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		node    string
		cmd     string
		edit    func(t *testing.T, s string) string
		line    int
		message string
	}{
		{
			name: "a chip row that does not say which chip in npu-smi info",
			node: "atlas-800t-a2", cmd: cmdInfo,
			edit: func(t *testing.T, s string) string {
				return discoverytest.ReplaceOnce(t, s, "| 0                         | 0000:C1:00.0", "| zero                      | 0000:C1:00.0")
			},
			line:    8,
			message: `parsing npu-smi info: line 8: NPU 0: chip id "zero" is not a non-negative integer`,
		},
		{
			name: "a mapping row referencing an NPU the table does not list",
			node: "atlas-800-910a", cmd: cmdMap,
			edit: func(t *testing.T, s string) string {
				return s + "9                              0                              8                              Ascend 910A\n"
			},
			line:    10,
			message: `parsing npu-smi info -m: line 10: NPU 9 chip 0 is not in the table of npu-smi info`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture(tc.node)
			runner := recordings(t, tc.node)
			runner[tc.cmd] = tc.edit(t, runner[tc.cmd])
			_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			discoverytest.RequireParseError(t, err, tc.cmd, tc.line, tc.message)
		})
	}
}

// A chip without a usable row in npu-smi info -m has no logic id, so no
// runtime device number: that chip is left out with a log line naming the
// command, and the node's other chips publish.
func TestDiscoverLeavesOutAChipWithoutAUsableMappingRow(t *testing.T) {
	for _, tc := range []struct {
		name, node string
		edit       func(t *testing.T, s string) string
		missing    int
		log        string
	}{
		{
			name: "a chip the mapping does not list", node: "atlas-800-910a",
			edit: func(t *testing.T, s string) string {
				lines := strings.Split(s, "\n")
				return strings.Join(append(lines[:8], lines[9:]...), "\n") // drop NPU 7
			},
			missing: 7, log: "Leaving out an Ascend chip the mapping does not list: no logic id",
		},
		{
			name: "a garbled logic id", node: "atlas-300i-duo",
			edit: func(t *testing.T, s string) string {
				col := strings.Repeat(" ", 30)
				return discoverytest.ReplaceOnce(t, s, "1"+col+"1"+col+"1 ", "1"+col+"1"+col+"one ")
			},
			missing: 1, log: `logic id \"one\" is neither a non-negative integer nor \"-\"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture(tc.node)
			full, err := New(Config{Root: root, Runner: recordings(t, tc.node)}).Discover(ctx)
			require.NoError(t, err)
			runner := recordings(t, tc.node)
			runner[cmdMap] = tc.edit(t, runner[cmdMap])
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, inv.Validate())
			require.Len(t, inv.Chips, len(full.Chips)-1)
			for _, c := range inv.Chips {
				require.NotEqual(t, tc.missing, c.Index, "the chip without a logic id is left out")
				require.True(t, c.Healthy, "chip %d", c.Index)
			}
			require.Contains(t, logs(), tc.log)
		})
	}
}

// One chip's row of npu-smi info that does not parse costs that chip,
// published unhealthy with the parse error, not the node: a chip row that
// still says its chip, or an NPU row that still names its card (its
// health or power column is what does not parse).
func TestDiscoverPublishesAChipWhoseTableRowDoesNotParseUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, message string
		index                   int
	}{
		{
			name: "a chip row", old: "3318 / 65536", new: "lots / 65536", index: 0,
			message: `parsing npu-smi info: line 8: NPU 0 chip 0: HBM-Usage(MB) "lots / 65536": "lots" is not a non-negative number of MB: ` +
				`"| 0                         | 0000:C1:00.0  | 0           0    / 0          lots / 65536         |"`,
		},
		{
			name: "an NPU row", old: "| 1     910B3               | OK            |", new: "| 1     910B3               | Sick          |", index: 1,
			message: `parsing npu-smi info: line 10: NPU 1: health "Sick" is none of OK, Warning, Alarm, Critical, UNKNOWN: ` +
				`"| 1     910B3               | Sick          | 92.0        39                0    / 0             |"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], tc.old, tc.new)
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, 8)
			require.NoError(t, inv.Validate())
			for _, c := range inv.Chips {
				require.Equal(t, c.Index != tc.index, c.Healthy, "chip %d", c.Index)
				require.Equal(t, inv.Chips[0].Model, c.Model, "the NPU row's name still gives the model")
			}
			require.Equal(t, inventory.ReasonLibraryError, inv.Chips[tc.index].HealthReason)
			require.Equal(t, tc.message, inv.Chips[tc.index].HealthMessage)
			require.Contains(t, logs(), "The npu-smi table row of this Ascend chip does not parse, reporting it unhealthy")
		})
	}
}

func TestDiscoverRejectsOutputsThatDescribeDifferentChips(t *testing.T) {
	for _, tc := range []struct {
		name    string
		node    string
		cmd     string
		edit    func(t *testing.T, s string) string
		message string
	}{
		{
			// The "Device" column is the logic id (npu_info_print.c:272-283).
			name: "logic ids that contradict each other",
			node: "atlas-300i-duo", cmd: cmdInfo,
			edit: func(t *testing.T, s string) string {
				return discoverytest.ReplaceOnce(t, s, "| 1       1                     |", "| 1       0                     |")
			},
			message: "combining npu-smi info and npu-smi info -m: NPU 1 chip 1 has logic id 0 in one and 1 in the other",
		},
		{
			name: "two chips on one device file",
			node: "atlas-300i-duo", cmd: cmdMap,
			edit: func(t *testing.T, s string) string {
				s = discoverytest.ReplaceOnce(t, s, "Chip Name", "Chip Phy-ID    Chip Name")
				s = strings.ReplaceAll(s, "Ascend 310P3", "7    Ascend 310P3")
				return strings.ReplaceAll(s, "Mcu", "-    Mcu")
			},
			message: "combining npu-smi info and npu-smi info -m: NPU 1 chip 0 and NPU 1 chip 1 both map to /dev/davinci7",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture(tc.node)
			runner := recordings(t, tc.node)
			runner[tc.cmd] = tc.edit(t, runner[tc.cmd])
			_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.ErrorContains(t, err, tc.message)
		})
	}
}

func TestDiscoverIndexesChipsByThePhysicalIDNpuSmiPrints(t *testing.T) {
	// On an A3 server npu-smi prints "Chip Phy-ID"; the logic ids are what
	// the runtime counts, the physical ids name the device files.
	_, ctx := ktesting.NewTestContext(t)
	src, _ := fixture("atlas-300i-duo")
	root := discoverytest.CopyTree(t, src)
	for _, n := range []string{"davinci0", "davinci1", "davinci2", "davinci3"} {
		require.NoError(t, os.Remove(filepath.Join(root, "dev", n)))
	}
	for _, n := range []string{"davinci4", "davinci5", "davinci6", "davinci7"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", n), nil, 0o644))
	}
	runner := recordings(t, "atlas-300i-duo")
	info := discoverytest.ReplaceOnce(t, runner[cmdInfo], "| Chip    Device                |", "| Chip    Phy-ID                |")
	for chip, phy := range map[string]string{"0       0 ": "0       7 ", "1       1 ": "1       6 ", "0       2 ": "0       5 ", "1       3 ": "1       4 "} {
		info = discoverytest.ReplaceOnce(t, info, chip, phy)
	}
	runner[cmdInfo] = info

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	var got [][3]int64
	for _, c := range inv.Chips {
		got = append(got, [3]int64{int64(c.Index), *c.Extra[ExtraLogicID].Int, int64(len(c.DeviceNodes))})
		require.True(t, c.Healthy)
		require.Equal(t, fmt.Sprintf("/dev/davinci%d", c.Index), c.DeviceNodes[0])
		require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup)
	}
	require.Equal(t, [][3]int64{{4, 3, 1}, {5, 2, 1}, {6, 1, 1}, {7, 0, 1}}, got, "index, logic id, device nodes")
	require.Equal(t, "0000:81:00.0", inv.Chips[0].PCIBusID, "physical id 4 is NPU 2 chip 1")
	require.Equal(t, "ascend-0000:81:00.0-chip1", inv.Chips[0].UUID, "physical id 4 is NPU 2 chip 1")
}

func TestDiscoverMapsDeviceFilesByThePhysicalIDNpuSmiRemaps(t *testing.T) {
	// One Atlas 300I Duo whose chips are /dev/davinci2 and 3 while npu-smi
	// counts their logic ids 0 and 1: the table's "Device" column is the
	// logic id (npu_info_print.c:272-283), and only
	// `npu-smi info -t phyid-remap` names the chip behind a device file.
	src, _ := fixture("atlas-300i-duo")
	root := discoverytest.CopyTree(t, src)
	for _, n := range []string{"davinci0", "davinci1"} {
		require.NoError(t, os.Remove(filepath.Join(root, "dev", n)))
	}
	runner := recordings(t, "atlas-300i-duo")
	info := dropLines(t, runner[cmdInfo], "| 1       310P3", "| 0       0 ", "| 1       1 ")
	info = discoverytest.ReplaceOnce(t, info, "| 0       2 ", "| 0       0 ")
	runner[cmdInfo] = discoverytest.ReplaceOnce(t, info, "| 1       3 ", "| 1       1 ")
	runner[cmdMap] = "\tNPU ID   Chip ID   Chip Logic ID   Chip Name\n" +
		"\t2        0         0               Ascend 310P3\n" +
		"\t2        1         1               Ascend 310P3\n" +
		"\t2        2         -               Mcu\n"
	runner[cmdTopo] = readFile(t, "testdata/topo/300i-duo-one-card-npu2.txt")
	for phy, remap := range map[int][3]int{2: {0, 2, 0}, 3: {1, 2, 1}} {
		runner[cmdRemap(phy)[0]] = fmt.Sprintf("\t%-30s:%d\n\t%-30s:%d\n\t%-30s:%d\n\t%-30s:%d\n",
			"Chip Physical ID", phy, "Chip Logic ID", remap[0], "NPU ID", remap[1], "Chip ID", remap[2])
	}

	for _, tc := range []struct {
		name string
		edit func(discoverytest.MapRunner)
		want [][2]int64
		log  string
	}{
		{name: "npu-smi remaps the physical ids", edit: func(discoverytest.MapRunner) {},
			want: [][2]int64{{2, 0}, {3, 1}}},
		{name: "an npu-smi without the remap query leaves the logic ids standing in",
			edit: func(r discoverytest.MapRunner) { delete(r, cmdRemap(2)[0]) },
			want: [][2]int64{{0, 0}, {1, 1}}, log: "npu-smi cannot map device files to chips"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			r := discoverytest.MapRunner{}
			for k, v := range runner {
				r[k] = v
			}
			tc.edit(r)
			inv, err := New(Config{Root: root, Runner: r}).Discover(ctx)
			require.NoError(t, err)
			var got [][2]int64
			for _, c := range inv.Chips {
				got = append(got, [2]int64{int64(c.Index), *c.Extra[ExtraLogicID].Int})
				require.Equal(t, tc.log == "", c.Healthy, "the device file of index %d exists", c.Index)
			}
			require.Equal(t, tc.want, got, "index, logic id")
			if tc.log != "" {
				require.Contains(t, logs(), tc.log)
			}
		})
	}
}

func TestDiscoverTakesThePhysicalIDFromTheMappingWhenTheTableHasNone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	src, _ := fixture("atlas-800t-a2")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Rename(filepath.Join(root, "dev", "davinci7"), filepath.Join(root, "dev", "davinci15")))
	runner := recordings(t, "atlas-800t-a2")
	m := discoverytest.ReplaceOnce(t, runner[cmdMap], "Chip Name", "Chip Phy-ID  Chip Name")
	m = strings.ReplaceAll(m, "Mcu", "-  Mcu")
	lines := strings.Split(m, "\n")
	for i := 1; i < len(lines); i++ {
		if f := strings.Fields(lines[i]); len(f) > 3 && f[2] != "-" {
			phy := f[2]
			if phy == "7" {
				phy = "15"
			}
			lines[i] = strings.Replace(lines[i], "Ascend 910B3", phy+"  Ascend 910B3", 1)
		}
	}
	runner[cmdMap] = strings.Join(lines, "\n")

	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	last := inv.Chips[7]
	require.Equal(t, 15, last.Index)
	require.Equal(t, inventory.IntValue(7), last.Extra[ExtraLogicID])
	require.Equal(t, []string{"/dev/davinci15"}, last.DeviceNodes)
	require.True(t, last.Healthy)
	require.Equal(t, "hccs-0", last.LinkGroup, "the NPU7 row of the matrix is logic id 7")
}

func TestDiscoverReadsAnA3MatrixLabelledByPhysicalID(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("atlas-300i-duo")
	runner := recordings(t, "atlas-300i-duo")
	runner[cmdTopo] = "           Phy-ID0    Phy-ID1    Phy-ID2    Phy-ID3\n" +
		"Phy-ID0    X          SIO        HCCS_SW    HCCS_SW\n" +
		"Phy-ID1    SIO        X          HCCS_SW    HCCS_SW\n" +
		"Phy-ID2    HCCS_SW    HCCS_SW    X          SIO\n" +
		"Phy-ID3    HCCS_SW    HCCS_SW    SIO        X\n"
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	for _, c := range inv.Chips {
		require.Equal(t, inventory.LinkHCCS, c.LinkType)
		require.Equal(t, "hccs-0", c.LinkGroup)
	}
}

func TestDiscoverTreatsEveryChipAsPCIeOnlyWhenNpuSmiCannotReportTopology(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, recorded string) (string, bool)
		log    string
	}{
		{name: "refused", log: "cannot report the topology", answer: func(*testing.T, string) (string, bool) {
			return "This device does not support querying topo.\n", true
		}},
		{name: "a row cut short", log: "row NPU0 has 7 entries, the header has 8 columns", answer: func(t *testing.T, s string) (string, bool) {
			return discoverytest.ReplaceOnce(t, s, "NPU0       X          HCCS       HCCS       HCCS", "NPU0       X          HCCS"), true
		}},
		{name: "the query fails", log: "Cannot read the chip topology", answer: func(*testing.T, string) (string, bool) {
			return "", false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			if answer, ok := tc.answer(t, runner[cmdTopo]); ok {
				runner[cmdTopo] = answer
			} else {
				delete(runner, cmdTopo)
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, 8)
			for _, c := range inv.Chips {
				require.Equal(t, inventory.LinkPCIe, c.LinkType)
				require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup)
			}
			require.Contains(t, logs(), tc.log)
		})
	}
}

// A hung npu-smi is a failed poll, which keeps the last known links,
// not a node without links.
func TestDiscoverFailsWhenTheTopologyQueryHangs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("atlas-800t-a2")
	runner := recordings(t, "atlas-800t-a2")
	hung := runnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if discovery.CommandLine(name, args...) == cmdTopo {
			return nil, fmt.Errorf("running %s: %w after 1s (--tool-timeout)", cmdTopo, discovery.ErrToolTimeout)
		}
		return runner.Run(ctx, name, args...)
	})
	_, err := New(Config{Root: root, Runner: hung}).Discover(ctx)
	require.ErrorIs(t, err, discovery.ErrToolTimeout)
	require.ErrorContains(t, err, "reading HCCS topology: running npu-smi info -t topo: timed out")
}

func TestDiscoverNumbersHCCSGroupsByTheirLowestChip(t *testing.T) {
	// Cards 1 and 3 share HCCS, the others do not: the group of chip 1 is
	// hccs-0 and the other chips stay on PCIe.
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("atlas-800t-a2")
	runner := recordings(t, "atlas-800t-a2")
	runner[cmdTopo] = cardMatrix(8, func(a, b int) string {
		if a+b == 4 && a != b && a%2 == 1 {
			return "HCCS"
		}
		return "SYS"
	})
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	var groups []string
	for _, c := range inv.Chips {
		groups = append(groups, string(c.LinkType)+"/"+c.LinkGroup)
	}
	require.Equal(t, []string{"pcie/pcie-0", "hccs/hccs-0", "pcie/pcie-2", "hccs/hccs-0",
		"pcie/pcie-4", "pcie/pcie-5", "pcie/pcie-6", "pcie/pcie-7"}, groups)
}

// cardMatrix writes an `npu-smi info -t topo` matrix of cards 0…n-1 whose
// off-diagonal codes are code(a, b).
func cardMatrix(n int, code func(a, b int) string) string {
	var sb strings.Builder
	sb.WriteString("\t   ")
	for a := 0; a < n; a++ {
		fmt.Fprintf(&sb, "NPU%-8d", a)
	}
	sb.WriteString("CPU Affinity\n")
	for a := 0; a < n; a++ {
		fmt.Fprintf(&sb, "NPU%-8d", a)
		for b := 0; b < n; b++ {
			c := "X"
			if a != b {
				c = code(a, b)
			}
			fmt.Fprintf(&sb, "%-11s", c)
		}
		sb.WriteString("0-23\n")
	}
	return sb.String()
}

func TestDiscoverReadsTheMatrixByCard(t *testing.T) {
	// npu-smi prints one row per card, labelled by the card id
	// (npu_info.c:1739-1753 lists cards; npu_info_print_ext.c:175-183
	// prints them): both chips of a Duo card share its row.
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, root string, runner discoverytest.MapRunner)
		want []string
	}{
		{
			name: "two Atlas 300I Duo cards print NPU1 and NPU2",
			edit: func(*testing.T, string, discoverytest.MapRunner) {},
			want: []string{"0/pcie/pcie-0", "1/pcie/pcie-1", "2/pcie/pcie-2", "3/pcie/pcie-3"},
		},
		{
			name: "one Atlas 300I Duo card prints NPU2 alone, with NIC columns",
			edit: func(t *testing.T, root string, runner discoverytest.MapRunner) {
				runner[cmdTopo] = readFile(t, "testdata/topo/300i-duo-one-card-npu2.txt")
				runner[cmdInfo] = dropLines(t, runner[cmdInfo], "| 1       310P3", "| 0       0 ", "| 1       1 ")
				runner[cmdMap] = dropLines(t, runner[cmdMap], "\t1 ")
				require.NoError(t, os.Remove(filepath.Join(root, "dev", "davinci0")))
				require.NoError(t, os.Remove(filepath.Join(root, "dev", "davinci1")))
			},
			want: []string{"2/pcie/pcie-2", "3/pcie/pcie-3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			src, _ := fixture("atlas-300i-duo")
			root := discoverytest.CopyTree(t, src)
			runner := recordings(t, "atlas-300i-duo")
			tc.edit(t, root, runner)
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			var got []string
			for _, c := range inv.Chips {
				require.True(t, c.Healthy, c.HealthMessage)
				got = append(got, fmt.Sprintf("%d/%s/%s", c.Index, c.LinkType, c.LinkGroup))
			}
			require.Equal(t, tc.want, got)
			require.NotContains(t, logs(), "disagree")
		})
	}
}

func TestDiscoverTreatsEveryChipAsPCIeOnlyWhenTheMatrixAndTheChipsDisagree(t *testing.T) {
	for _, tc := range []struct {
		name, matrix, mismatch string
	}{
		{
			name:     "a card without a row",
			matrix:   cardMatrix(7, func(int, int) string { return "HCCS" }),
			mismatch: "NPU 7 chip 0 has no row NPU7",
		},
		{
			name:     "a row without a card",
			matrix:   cardMatrix(9, func(int, int) string { return "HCCS" }),
			mismatch: "row NPU8 names no listed chip",
		},
		{
			name: "a matrix by physical id missing a chip",
			matrix: "           Phy-ID0    Phy-ID1\n" +
				"Phy-ID0    X          HCCS\n" +
				"Phy-ID1    HCCS       X\n",
			mismatch: "NPU 2 chip 0 has no row Phy-ID2",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			runner[cmdTopo] = tc.matrix
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, 8)
			for _, c := range inv.Chips {
				require.True(t, c.Healthy)
				require.Equal(t, inventory.LinkPCIe, c.LinkType)
				require.Equal(t, fmt.Sprintf("pcie-%d", c.Index), c.LinkGroup)
			}
			require.Contains(t, logs(), "The topology matrix and the chip list disagree")
			require.Contains(t, logs(), tc.mismatch)
		})
	}
}

func TestDiscoverGivesChipsThatShareABusIDDistinctUUIDs(t *testing.T) {
	// npu-smi prints the card's address for both chips of an Atlas 300I
	// Duo (nvtop issue #421); a card whose chips have functions of their
	// own keeps plain UUIDs.
	_, ctx := ktesting.NewTestContext(t)
	src, _ := fixture("atlas-300i-duo")
	root := discoverytest.CopyTree(t, src)
	require.NoError(t, os.Symlink("../../../devices/pci0000:80/0000:81:00.0", filepath.Join(root, "sys", "bus", "pci", "devices", "0000:82:00.0")))
	runner := recordings(t, "atlas-300i-duo")
	runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "| 1       3                     | 0000:81:00.0", "| 1       3                     | 0000:82:00.0")
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	var uuids []string
	for _, c := range inv.Chips {
		uuids = append(uuids, c.UUID)
	}
	require.Equal(t, []string{"ascend-0000:01:00.0-chip0", "ascend-0000:01:00.0-chip1", "ascend-0000:81:00.0", "ascend-0000:82:00.0"}, uuids)
	require.Equal(t, inv.Chips[0].PCIBusID, inv.Chips[1].PCIBusID)
}

func TestDiscoverPublishesNoPCIFactsForAChipWithoutBusID(t *testing.T) {
	ctx, logs := discoverytest.BufferedContext(t)
	root, _ := fixture("atlas-300i-duo")
	runner := recordings(t, "atlas-300i-duo")
	runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "0000:81:00.0", "NA          ")
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	c := inv.Chips[2]
	require.Empty(t, c.PCIBusID)
	require.Empty(t, c.PCIeRoot)
	require.Nil(t, c.NUMANode)
	require.Equal(t, "ascend-npu2-chip0", c.UUID)
	require.Contains(t, logs(), "no PCI address")
}

func TestDiscoverPublishesZeroCoresAndWarnsForAnUnknownChipName(t *testing.T) {
	ctx, logs := discoverytest.BufferedContext(t)
	root, _ := fixture("atlas-800t-a2")
	runner := recordings(t, "atlas-800t-a2")
	runner[cmdInfo] = strings.ReplaceAll(runner[cmdInfo], "910B3 ", "910B9 ")
	inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	for _, c := range inv.Chips {
		require.Equal(t, "Ascend910B9", c.Model)
		require.Zero(t, c.Cores)
		require.Equal(t, inventory.StringValue("910B9"), c.Extra[ExtraChipName])
	}
	require.Contains(t, logs(), "No AI core count known")
}

func TestDiscoverPublishesOnlyTheSharedDeviceNodesThatExist(t *testing.T) {
	for _, tc := range []struct {
		name        string
		remove, add []string
		want        map[inventory.Vendor][]string
	}{
		{name: "without hisi_hdc", remove: []string{"hisi_hdc"}, want: map[inventory.Vendor][]string{Vendor: {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/dvpp_cmdlist"}}},
		{name: "without dvpp_cmdlist", remove: []string{"dvpp_cmdlist"}, want: map[inventory.Vendor][]string{Vendor: {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}}},
		{name: "without any", remove: []string{"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"}},
		// A 950 node's unified bus: every file of /dev/uburma and /dev/ummu,
		// not their subdirectories, as Huawei's device plugin mounts them.
		{name: "with the unified bus's device files", add: []string{"uburma/uburma0", "uburma/uburma1", "ummu/ummu0", "ummu/sub/x"},
			want: map[inventory.Vendor][]string{Vendor: {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/dvpp_cmdlist",
				"/dev/uburma/uburma0", "/dev/uburma/uburma1", "/dev/ummu/ummu0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			src, runner := fixture("atlas-300i-duo")
			root := discoverytest.CopyTree(t, src)
			for _, n := range tc.remove {
				require.NoError(t, os.Remove(filepath.Join(root, "dev", n)))
			}
			for _, n := range tc.add {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, "dev", n)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "dev", n), nil, 0o644))
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.want, inv.SharedDeviceNodes)
		})
	}
}

func TestDiscoverSaysWhatItWasDoingWhenNpuSmiFails(t *testing.T) {
	for _, tc := range []struct {
		missing string
		message string
	}{
		{missing: cmdInfo, message: "listing Ascend chips: running npu-smi info"},
		{missing: cmdMap, message: "reading Ascend chip logic ids: running npu-smi info -m"},
	} {
		t.Run(tc.missing, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			delete(runner, tc.missing)
			_, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.ErrorContains(t, err, tc.message)
		})
	}
}

func TestDiscoverReportsAMissingRecordingLikeAMissingTool(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("atlas-800t-a2")
	_, err := New(Config{Root: root, Runner: discovery.RecordedRunner{Dir: t.TempDir()}}).Discover(ctx)
	require.ErrorIs(t, err, discovery.ErrNoRecording)
	require.ErrorContains(t, err, "listing Ascend chips: running npu-smi info")
}

func TestDiscoverUsesTheConfiguredNpuSmiCommand(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, _ := fixture("atlas-300i-duo")
	rec := recordings(t, "atlas-300i-duo")
	runner := discoverytest.MapRunner{}
	for cmd, out := range rec {
		runner["/usr/local/bin/"+cmd] = out
	}
	inv, err := New(Config{Root: root, Runner: runner, NpuSmi: "/usr/local/bin/npu-smi"}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 4)
}

func TestDiscoverFailsWhenDevCannotBeListed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev"), nil, 0o644)) // a file where /dev belongs
	_, err := New(Config{Root: root, Runner: discoverytest.FailingRunner{T: t}}).Discover(ctx)
	require.ErrorContains(t, err, "looking for Ascend device files")
}

func TestNewFillsInDefaults(t *testing.T) {
	b := New(Config{})
	require.Equal(t, "/", b.root)
	require.Equal(t, "npu-smi", b.npuSmi)
	require.Equal(t, discovery.ExecRunner{}, b.runner)
}

func TestBackendIsNamedAscend(t *testing.T) {
	require.Equal(t, "ascend", New(Config{}).Name())
}

func TestModelNamePrefixesTheChipNameOnce(t *testing.T) {
	require.Equal(t, "Ascend910B3", modelName("910B3"))
	require.Equal(t, "Ascend910", modelName("Ascend910"))
}

// A chip whose DCMI health is 0xFFFFFFFF ("device does not exist", rc 0)
// gets its chip row printed without its NPU row (npu_info_print.c:230-238,
// 405-415). That chip is published unhealthy, named from `npu-smi info -m`,
// with the bus id its chip row says where one row fits; the node's other
// chips are published as they are.
func TestDiscoverPublishesAChipNpuSmiPrintsWithoutItsNPURowUnhealthy(t *testing.T) {
	for _, tc := range []struct {
		name, node string
		drop       []string
		chips      int
		dead       map[int]string // index → bus id
	}{
		{name: "910B, one card", node: "atlas-800t-a2", drop: []string{"| 1     910B3 "}, chips: 8,
			dead: map[int]string{1: "0000:c2:00.0"}},
		{name: "910B, two cards: which row is which is unknown", node: "atlas-800t-a2",
			drop: []string{"| 1     910B3 ", "| 2     910B3 "}, chips: 8, dead: map[int]string{1: "", 2: ""}},
		{name: "310P, a card's second chip and the next card's first", node: "atlas-300i-duo",
			drop:  []string{"| 1       310P3                 | OK              | NA           50", "| 2       310P3                 | OK              | NA           52"},
			chips: 4, dead: map[int]string{1: "0000:01:00.0", 2: "0000:81:00.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, _ := fixture(tc.node)
			runner := recordings(t, tc.node)
			runner[cmdInfo] = dropLines(t, runner[cmdInfo], tc.drop...)
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, tc.chips)
			require.NoError(t, inv.Validate())
			for _, c := range inv.Chips {
				bus, dead := tc.dead[c.Index]
				require.Equal(t, !dead, c.Healthy, "chip %d", c.Index)
				require.Equal(t, inv.Chips[0].Model, c.Model, "chip %d: -m names it", c.Index)
				if !dead {
					continue
				}
				require.Equal(t, inventory.ReasonToolHealth(HealthUnknown), c.HealthReason, "chip %d", c.Index)
				require.Contains(t, c.HealthMessage, "npu-smi reports health UNKNOWN: it prints the chip without its NPU row")
				require.Equal(t, bus, c.PCIBusID, "chip %d", c.Index)
				require.Equal(t, "npu-smi info -m", c.Sources[SourceModel])
				require.Equal(t, "npu-smi info", c.Sources[SourceHealth], "no error codes are asked for")
			}
			require.Contains(t, logs(), "The npu-smi tool prints no NPU row for this Ascend chip, reporting it unhealthy")
		})
	}
}

// Health 0xFFFFFFFF read through DCMI and through npu-smi makes the same
// chip unhealthy for the same reason.
func TestBothReadersPublishAChipThatDoesNotExistAsUnknown(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	fix := readFile(t, "testdata/dcmi/atlas-800t-a2.txt")
	lib := buildMockDCMI(t, "atlas-800t-a2")
	edited := discoverytest.ReplaceOnce(t, fix, "0000:c2:00.0 d802  0", "0000:c2:00.0 d802  4294967295")
	require.NoError(t, os.WriteFile(os.Getenv("ACCEL_DRA_DCMI_FIXTURE"), []byte(edited), 0o644))
	root, _ := fixture("atlas-800t-a2")
	runner := recordings(t, "atlas-800t-a2")
	viaDCMI, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
	require.NoError(t, err)
	runner[cmdInfo] = dropLines(t, runner[cmdInfo], "| 1     910B3 ")
	viaTool, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
	require.NoError(t, err)
	require.Len(t, viaDCMI.Chips, 8)
	require.Len(t, viaTool.Chips, 8)
	for i := range viaDCMI.Chips {
		d, n := viaDCMI.Chips[i], viaTool.Chips[i]
		require.Equal(t, d.Healthy, n.Healthy, "chip %d", i)
		require.Equal(t, d.HealthReason, n.HealthReason, "chip %d", i)
		require.Equal(t, d.PCIBusID, n.PCIBusID, "chip %d", i)
	}
	require.False(t, viaTool.Chips[1].Healthy)
}

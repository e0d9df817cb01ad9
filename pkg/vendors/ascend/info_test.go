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
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func TestParseInfoReadsEveryChipOfATrainingServerTable(t *testing.T) {
	chips, err := ParseInfo(cmdInfo, []byte(readRecording(t, "atlas-800-910a", "info")))
	require.NoError(t, err)
	buses := []string{"0000:61:00.0", "0000:db:00.0", "0000:b2:00.0", "0000:3e:00.0", "0000:60:00.0", "0000:da:00.0", "0000:b1:00.0", "0000:3d:00.0"}
	var want []ChipInfo
	for i, bus := range buses {
		want = append(want, ChipInfo{NPU: i, Chip: 0, PhysicalID: -1, LogicID: -1, Name: "910A", Health: HealthOK, BusID: bus, MemoryMB: 32768, HBM: true, Line: 7 + 3*i})
	}
	require.Equal(t, want, chips)
}

func TestParseInfoReadsTheInferenceCardLayoutWithDeviceColumnAndNoHBM(t *testing.T) {
	chips, err := ParseInfo(cmdInfo, []byte(readRecording(t, "atlas-300i-duo", "info")))
	require.NoError(t, err)
	require.Equal(t, []ChipInfo{
		// Both chips of a card at the card's bus id, 44280 and 43693 MB:
		// nvtop issue #421 (one Atlas 300I Duo, npu-smi 25.2.0).
		{NPU: 1, Chip: 0, PhysicalID: -1, LogicID: 0, Name: "310P3", Health: HealthOK, BusID: "0000:01:00.0", MemoryMB: 44280, Line: 7},
		{NPU: 1, Chip: 1, PhysicalID: -1, LogicID: 1, Name: "310P3", Health: HealthOK, BusID: "0000:01:00.0", MemoryMB: 43693, Line: 10},
		{NPU: 2, Chip: 0, PhysicalID: -1, LogicID: 2, Name: "310P3", Health: HealthOK, BusID: "0000:81:00.0", MemoryMB: 44280, Line: 13},
		{NPU: 2, Chip: 1, PhysicalID: -1, LogicID: 3, Name: "310P3", Health: HealthOK, BusID: "0000:81:00.0", MemoryMB: 43693, Line: 16},
	}, chips)
}

func TestParseInfoAcceptsTheLayoutVariantsNpuSmiPrints(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []ChipInfo
	}{
		{
			// npu-smi 25.x on an A3 server: "Chip Phy-ID", the NPU row
			// repeated per die, "-" for the power of the second die
			// (vllm-ascend issue #2534).
			name: "two dies per NPU with Phy-ID and a running process",
			text: "" +
				"+------------------------------------------------------------------------------------------------+\n" +
				"| npu-smi 25.2.1                   Version: 25.2.1                                               |\n" +
				"+---------------------------+---------------+----------------------------------------------------+\n" +
				"| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n" +
				"| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n" +
				"+===========================+===============+====================================================+\n" +
				"| 0     Ascend910           | OK            | 166.5       38                0    / 0             |\n" +
				"| 0     0                   | 0000:9D:00.0  | 0           0    / 0          3131 / 65536         |\n" +
				"+------------------------------------------------------------------------------------------------+\n" +
				"| 0     Ascend910           | OK            | -           37                0    / 0             |\n" +
				"| 1     1                   | 0000:9F:00.0  | 0           0    / 0          2886 / 65536         |\n" +
				"+===========================+===============+====================================================+\n" +
				"+---------------------------+---------------+----------------------------------------------------+\n" +
				"| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n" +
				"+===========================+===============+====================================================+\n" +
				"| 0       0                 | 139667        | python                   | 30780                   |\n" +
				"+===========================+===============+====================================================+\n",
			want: []ChipInfo{
				{NPU: 0, Chip: 0, PhysicalID: 0, LogicID: -1, Name: "Ascend910", Health: HealthOK, BusID: "0000:9d:00.0", MemoryMB: 65536, HBM: true, Line: 7},
				{NPU: 0, Chip: 1, PhysicalID: 1, LogicID: -1, Name: "Ascend910", Health: HealthOK, BusID: "0000:9f:00.0", MemoryMB: 65536, HBM: true, Line: 10},
			},
		},
		{
			// 1Panel issue #9472 (910B4): a five-digit used figure runs into
			// the slash; CRLF line ends and a lower-case health word.
			name: "a compact usage pair, CRLF line ends and lower-case health",
			text: "" +
				"| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\r\n" +
				"| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\r\n" +
				"+===========================+===============+====================================================+\r\n" +
				"| 0     910B4               | warning       | 88.2        30                0    / 0             |\r\n" +
				"| 0                         | 0000:C1:00.0  | 0           0    / 0          26838/ 32768         |\r\n" +
				"+===========================+===============+====================================================+\r\n",
			want: []ChipInfo{
				{NPU: 0, Chip: 0, PhysicalID: -1, LogicID: -1, Name: "910B4", Health: HealthWarning, BusID: "0000:c1:00.0", MemoryMB: 32768, HBM: true, Line: 4},
			},
		},
		{
			// A SoC board (Atlas 200I A2, Huawei npu-smi reference) has no
			// PCIe address.
			name: "a SoC board without bus id",
			text: "" +
				"| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |\n" +
				"| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |\n" +
				"+===============================+=================+======================================================+\n" +
				"| 0       310B4                 | Alarm           | 0.0          65                15    / 15            |\n" +
				"| 0       0                     | NA              | 0            3628 / 15609                            |\n" +
				"+===============================+=================+======================================================+\n",
			want: []ChipInfo{
				{NPU: 0, Chip: 0, PhysicalID: -1, LogicID: 0, Name: "310B4", Health: HealthAlarm, MemoryMB: 15609, Line: 4},
			},
		},
		{
			name: "an HBM column whose total is zero falls back to the memory total",
			text: "" +
				"| NPU   Name           | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n" +
				"| Chip                 | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n" +
				"+======================+===============+====================================================+\n" +
				"| 0     310P3          | Critical      | 12.8        73                0    / 0             |\n" +
				"| 0                    | 0000:89:00.0  | 0           2703 / 8192       0    / 0             |\n",
			want: []ChipInfo{
				{NPU: 0, Chip: 0, PhysicalID: -1, LogicID: -1, Name: "310P3", Health: HealthCritical, BusID: "0000:89:00.0", MemoryMB: 8192, Line: 4},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chips, err := ParseInfo(cmdInfo, []byte(tc.text))
			require.NoError(t, err)
			require.Equal(t, tc.want, chips)
		})
	}
}

// goodTable is a complete two-chip table; the malformed cases below break
// one line of it (line numbers are 1-based).
var goodTable = []string{
	"+------------------------------------------------------------------------------------------------+", // 1
	"| npu-smi 24.1.0                   Version: 24.1.0                                               |", // 2
	"+---------------------------+---------------+----------------------------------------------------+", // 3
	"| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|", // 4
	"| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |", // 5
	"+===========================+===============+====================================================+", // 6
	"| 0     910B3               | OK            | 101.8       43                0    / 0             |", // 7
	"| 0                         | 0000:C1:00.0  | 0           0    / 0          3318 / 65536         |", // 8
	"+===========================+===============+====================================================+", // 9
	"| 1     910B3               | OK            | 92.0        39                0    / 0             |", // 10
	"| 0                         | 0000:C2:00.0  | 0           0    / 0          3314 / 65536         |", // 11
	"+===========================+===============+====================================================+", // 12
}

func TestParseInfoReadsTheGoodTable(t *testing.T) {
	chips, err := ParseInfo(cmdInfo, []byte(strings.Join(goodTable, "\n")))
	require.NoError(t, err)
	require.Len(t, chips, 2)
}

func TestParseInfoRejectsGarbledOutputNamingCommandAndLine(t *testing.T) {
	edit := func(line int, text string) string {
		lines := append([]string(nil), goodTable...)
		lines[line-1] = text
		return strings.Join(lines, "\n")
	}
	drop := func(line int) string {
		lines := append([]string(nil), goodTable[:line-1]...)
		return strings.Join(append(lines, goodTable[line:]...), "\n")
	}
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a non-numeric HBM total", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           0    / 0          3318 / 64G           |"), line: 8, msg: `NPU 0 chip 0: HBM-Usage(MB) "3318 / 64G": "64G" is not a non-negative number of MB`},
		{name: "a non-numeric memory figure", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           x    / 0          3318 / 65536         |"), line: 8, msg: `NPU 0 chip 0: Memory-Usage(MB) "x    / 0": "x" is not a non-negative number of MB`},
		{name: "a missing HBM pair", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           0    / 0                               |"), line: 8, msg: `NPU 0 chip 0: usage "0           0    / 0" is not AICore(%) followed by Memory-Usage(MB) and HBM-Usage(MB) as "<used> / <total>"`},
		{name: "text between the usage pairs", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           0    / 0   and    3318 / 65536         |"), line: 8, msg: `is not AICore(%) followed by Memory-Usage(MB) and HBM-Usage(MB)`},
		{name: "text after the usage pairs", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           0    / 0          3318 / 65536  MB     |"), line: 8, msg: `is not AICore(%) followed by Memory-Usage(MB) and HBM-Usage(MB)`},
		{name: "an empty usage column", text: edit(8, "| 0                         | 0000:C1:00.0  |                                                    |"), line: 8, msg: "NPU 0 chip 0: the AICore/memory column is empty"},
		{name: "a chip row with a column too many", text: edit(8, "| 0                         | 0000:C1:00.0  | 0           | 0    / 0          3318 / 65536  |"), line: 8, msg: "NPU 0: chip row has 4 columns, expected 3"},
		{name: "a chip row cut short", text: edit(8, "| 0                         | 0000:C1:00.0"), line: 8, msg: "NPU 0: chip row has 2 columns, expected 3"},
		{name: "an NPU row with a column too few", text: edit(7, "| 0     910B3               | OK 101.8 43 0 / 0                                                  |"), line: 7, msg: "NPU row has 2 columns, expected 3"},
		{name: "an NPU ID that is not a number", text: edit(7, "| O     910B3               | OK            | 101.8       43                0    / 0             |"), line: 7, msg: `NPU ID "O" is not a non-negative integer`},
		{name: "an NPU row without a name", text: edit(7, "| 0                         | OK            | 101.8       43                0    / 0             |"), line: 7, msg: `NPU row starts with "0", expected "<NPU ID> <Name>"`},
		{name: "a health word npu-smi does not print", text: edit(7, "| 0     910B3               | 0K            | 101.8       43                0    / 0             |"), line: 7, msg: `NPU 0: health "0K" is none of OK, Warning, Alarm, Critical, UNKNOWN`},
		{name: "an empty power column", text: edit(7, "| 0     910B3               | OK            |                                                    |"), line: 7, msg: "NPU 0: the Power/Temp/Hugepages column is empty"},
		{name: "a chip id that is not a number", text: edit(8, "| a                         | 0000:C1:00.0  | 0           0    / 0          3318 / 65536         |"), line: 8, msg: `NPU 0: chip id "a" is not a non-negative integer`},
		{name: "a chip row with an id too many", text: edit(8, "| 0     0                   | 0000:C1:00.0  | 0           0    / 0          3318 / 65536         |"), line: 8, msg: `NPU 0: chip row starts with "0     0", expected "<Chip>"`},
		{name: "a bus id that is not hex", text: edit(8, "| 0                         | 0000:CG:00.0  | 0           0    / 0          3318 / 65536         |"), line: 8, msg: `NPU 0 chip 0: PCI bus id "0000:cg:00.0": bad bus`},
		{name: "an NPU listed twice", text: edit(11, "| 0                         | 0000:C2:00.0  | 0           0    / 0          3314 / 65536         |") + "\n" + strings.Join(goodTable[6:9], "\n"), line: 14, msg: "NPU 0 chip 0 is listed twice"},
		{name: "an NPU row without its chip row", text: drop(8), line: 7, msg: "NPU 0 has no chip row under it"},
		{name: "two chips without a separator", text: drop(9), line: 9, msg: "expected a separator line before the next NPU row"},
		{name: "a line that is no table row", text: edit(9, "NPU 1 follows"), line: 9, msg: `expected a table row "| … |" or a separator "+---"`},
		{name: "a second header row with a wrong first column", text: edit(5, "| Card                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"), line: 5, msg: `second header row starts with "Card"`},
		{name: "a second header row without Bus-Id", text: edit(5, "| Chip                      | Bus           | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"), line: 5, msg: `second header column is "Bus", expected "Bus-Id"`},
		{name: "a second header row with unknown usage columns", text: edit(5, "| Chip                      | Bus-Id        | AICore(%)   DDR-Usage(MB)                          |"), line: 5, msg: `usage columns are "AICore(%)   DDR-Usage(MB)"`},
		{name: "a second header row with a column too few", text: edit(5, "| Chip                      | Bus-Id AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)                 |"), line: 5, msg: "second header row has 2 columns, expected 3"},
		{name: "no second header row", text: drop(5), line: 5, msg: `expected the second header row "Chip | Bus-Id | AICore(%) …"`},
		{name: "output truncated after an NPU row", text: strings.Join(goodTable[:10], "\n"), line: 10, msg: "NPU 1 has no chip row under it (truncated output?)"},
		{name: "the process table right after an NPU row", text: strings.Join(goodTable[:10], "\n") + "\n| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |", line: 10, msg: "NPU 1 has no chip row under it"},
		{name: "a table without chips", text: strings.Join(goodTable[:6], "\n"), line: 0, msg: "the NPU table lists no chip"},
		{name: "output without a table", text: "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi model initialized failed, because the device is used. ret is -8020\n", line: 0, msg: "no NPU table in the output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireInfoError(t, tc.text, tc.line, tc.msg)
		})
	}
}

// requireInfoError asserts that npu-smi info text fails to parse at line
// with msg: the whole table where it cannot tell which chip the line is,
// else that chip alone (ChipInfo.RowError), the others parsed.
func requireInfoError(t *testing.T, text string, line int, msg string) {
	t.Helper()
	chips, err := ParseInfo(cmdInfo, []byte(text))
	if err != nil {
		discoverytest.RequireParseError(t, err, cmdInfo, line, msg)
		return
	}
	var bad []ChipInfo
	for _, c := range chips {
		if c.RowError != "" {
			bad = append(bad, c)
		}
	}
	require.Len(t, bad, 1, "one chip's row does not parse")
	require.Contains(t, bad[0].RowError, fmt.Sprintf("parsing %s: line %d: ", cmdInfo, line))
	require.Contains(t, bad[0].RowError, msg)
	require.Len(t, chips, strings.Count(text, "0000:"), "every other chip parses")
}

func TestParseInfoRejectsAChipRowWithoutThePhysicalIDItsHeaderPromises(t *testing.T) {
	text := "" +
		"| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n" +
		"| Chip  Phy-ID              | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n" +
		"+===========================+===============+====================================================+\n" +
		"| 0     Ascend910           | OK            | 166.5       38                0    / 0             |\n"
	for _, tc := range []struct {
		row, msg string
	}{
		{row: "| 0                         | 0000:9D:00.0  | 0           0    / 0          3131 / 65536         |", msg: `NPU 0: chip row starts with "0", expected "<Chip> <Phy-ID>"`},
		{row: "| 0     x                   | 0000:9D:00.0  | 0           0    / 0          3131 / 65536         |", msg: `NPU 0 chip 0: Phy-ID "x" is not a non-negative integer`},
	} {
		requireInfoError(t, text+tc.row+"\n", 5, tc.msg)
	}
}

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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func TestParseMappingReadsTheFixedWidthLayout(t *testing.T) {
	rows, err := ParseMapping(cmdMap, []byte(readRecording(t, "atlas-800-910a", "info", "-m")))
	require.NoError(t, err)
	require.Len(t, rows, 8)
	require.Equal(t, ChipMapping{
		NPU: 3, Chip: 0, LogicID: 3, PhysicalID: -1, Name: "Ascend 910A", Line: 5,
		Text: "3                              0                              3                              Ascend 910A",
	}, rows[3])
}

func TestParseMappingSkipsManagementChipsOfTheTabIndentedLayout(t *testing.T) {
	rows, err := ParseMapping(cmdMap, []byte(readRecording(t, "atlas-800t-a2", "info", "-m")))
	require.NoError(t, err)
	var got [][3]int
	for _, r := range rows {
		require.Equal(t, "Ascend 910B3", r.Name)
		got = append(got, [3]int{r.NPU, r.Chip, r.LogicID})
	}
	require.Equal(t, [][3]int{{0, 0, 0}, {1, 0, 1}, {2, 0, 2}, {3, 0, 3}, {4, 0, 4}, {5, 0, 5}, {6, 0, 6}, {7, 0, 7}}, got, "the Mcu rows are gone")
	require.Equal(t, 4, rows[1].Line)
}

func TestParseMappingReadsThePhysicalIDColumn(t *testing.T) {
	text := "NPU ID  Chip ID  Chip Logic ID  Chip Phy-ID Chip Name\r\n" +
		"8 0 0 12 Ascend910\r\n" +
		"8 1 1 13 Ascend910\r\n" +
		"8 2 - - Mcu\r\n"
	rows, err := ParseMapping(cmdMap, []byte(text))
	require.NoError(t, err)
	require.Equal(t, []ChipMapping{
		{NPU: 8, Chip: 0, LogicID: 0, PhysicalID: 12, Name: "Ascend910", Line: 2, Text: "8 0 0 12 Ascend910"},
		{NPU: 8, Chip: 1, LogicID: 1, PhysicalID: 13, Name: "Ascend910", Line: 3, Text: "8 1 1 13 Ascend910"},
	}, rows)
}

// A row whose NPU and chip ids parse but whose ids after them do not is
// kept with its error, so discovery leaves out that chip alone.
func TestParseMappingKeepsARowWithBadIDsAfterItsChipWithTheError(t *testing.T) {
	const header = "NPU ID   Chip ID   Chip Logic ID   Chip Name\n"
	const phyHeader = "NPU ID   Chip ID   Chip Logic ID   Chip Phy-ID   Chip Name\n"
	for _, tc := range []struct {
		name, text, msg string
	}{
		{name: "a logic id that is not a number", text: header + "0   0   0x1 Ascend 910B3\n1   0   1   Ascend 910B3\n",
			msg: `parsing npu-smi info -m: line 2: NPU 0 chip 0: logic id "0x1" is neither a non-negative integer nor "-"`},
		{name: "a Phy-ID that is not a number", text: phyHeader + "0   0   0   x   Ascend910\n1   0   1   9   Ascend910\n",
			msg: `parsing npu-smi info -m: line 2: NPU 0 chip 0: Phy-ID "x" is not a non-negative integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ParseMapping(cmdMap, []byte(tc.text))
			require.NoError(t, err)
			require.Len(t, rows, 2)
			require.Equal(t, [2]int{0, 0}, [2]int{rows[0].NPU, rows[0].Chip})
			require.Contains(t, rows[0].RowError, tc.msg)
			require.Empty(t, rows[1].RowError)
			require.Equal(t, 1, rows[1].LogicID)
		})
	}
}

func TestParseMappingRejectsGarbledOutputNamingCommandAndLine(t *testing.T) {
	const header = "NPU ID   Chip ID   Chip Logic ID   Chip Name\n"
	const phyHeader = "NPU ID   Chip ID   Chip Logic ID   Chip Phy-ID   Chip Name\n"
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a header npu-smi does not print", text: "NPU  Chip  Logic  Name\n0 0 0 Ascend 910B3\n", line: 1, msg: `expected the header "NPU ID  Chip ID  Chip Logic ID  [Chip Phy-ID]  Chip Name"`},
		{name: "a row with a column too few", text: header + "0   0   0\n", line: 2, msg: "row has 3 columns, expected 4"},
		{name: "a Phy-ID row with a column too few", text: phyHeader + "0   0   0   Ascend910\n", line: 2, msg: "row has 4 columns, expected 5"},
		{name: "an NPU ID that is not a number", text: header + "x   0   0   Ascend 910B3\n", line: 2, msg: `NPU ID "x" is not a non-negative integer`},
		{name: "a chip id that is not a number", text: header + "0   -   0   Ascend 910B3\n", line: 2, msg: `NPU 0: chip id "-" is not a non-negative integer`},
		{name: "a chip listed twice", text: header + "0   0   0   Ascend 910B3\n0   0   1   Ascend 910B3\n", line: 3, msg: "NPU 0 chip 0 is listed twice (first on line 2)"},
		{name: "a logic id given twice", text: header + "0   0   0   Ascend 910B3\n1   0   0   Ascend 910B3\n", line: 3, msg: "logic id 0 is given twice (first on line 2)"},
		{name: "only management chips", text: header + "0   1   -   Mcu\n", line: 0, msg: "the mapping lists no compute chip"},
		{name: "empty output", text: "\n", line: 0, msg: "no chip mapping in the output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMapping(cmdMap, []byte(tc.text))
			discoverytest.RequireParseError(t, err, cmdMap, tc.line, tc.msg)
		})
	}
}

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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func TestParseTopoReadsTheMatrixOfAnMLU370X8Server(t *testing.T) {
	topo, err := ParseTopo("cnmon topo -m", []byte(readRecording(t, "mlu370-x8", "topo", "-m")))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, topo.Cards)
	require.Equal(t, "MLK1", topo.Codes[0][1])
	require.Equal(t, "CPU", topo.Codes[0][2])
	require.Equal(t, "SYS", topo.Codes[3][4])
	require.Equal(t, "32-63,96-127", topo.CPUAffinity[6])
	linked, links := topo.MLULink(6, 7)
	require.True(t, linked)
	require.Equal(t, 1, links)
	linked, _ = topo.MLULink(1, 2)
	require.False(t, linked)
	require.Equal(t, 1, topo.MLULinkPorts(5))
}

func TestParseTopoCountsBondedAndSwitchedMLULinks(t *testing.T) {
	text := "" +
		"        MLU0    MLU1    MLU2    MLU3    CPU Affinity\n" +
		"MLU0    X       MLK2    MLK[S]  SYS     0-15\n" +
		"MLU1    MLK2    X       MLK4    SGL     0-15\n" +
		"MLU2    MLK[S]  MLK4    X       MUL     16-31\n" +
		"MLU3    SYS     SGL     MUL     X\n" +
		"\nLegend:\n\n  X    = Self\n  MLK# = all devices in a bonded set of # MLU-Links\n"
	topo, err := ParseTopo("cnmon topo -m", []byte(text))
	require.NoError(t, err)
	require.Equal(t, 2, topo.MLULinkPorts(0), "MLK[S] says linked but not over how many ports")
	require.Equal(t, 6, topo.MLULinkPorts(1))
	require.Equal(t, 4, topo.MLULinkPorts(2))
	require.Equal(t, 0, topo.MLULinkPorts(3))
	linked, links := topo.MLULink(0, 2)
	require.True(t, linked)
	require.Zero(t, links)
	require.Equal(t, "", topo.CPUAffinity[3])
}

func TestParseTopoSkipsNICsAndUnknownCodesOfNewerCnmon(t *testing.T) {
	// The mlu590 fixture is a training node: Mellanox NICs as mlx<N>
	// columns and rows, ITN between a chip and its NIC.
	topo, err := ParseTopo("cnmon topo -m", []byte(readRecording(t, "mlu590", "topo", "-m")))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, topo.Cards)
	require.Len(t, topo.Codes[0], 8, "NIC columns are not cards")
	require.Equal(t, 7, topo.MLULinkPorts(0))
	require.Equal(t, "32-63,96-127", topo.CPUAffinity[7], "the affinity follows the NIC columns")
	require.Equal(t, []string{"column mlx0", "column mlx1", "column mlx2", "column mlx3", "row mlx0", "row mlx1", "row mlx2", "row mlx3"}, topo.Skipped)

	const header = "        MLU0    MLU1    mlx5_0  CPU Affinity\n"
	for _, tc := range []struct {
		name    string
		text    string
		code    string
		skipped []string
	}{
		{name: "ITN between chips", text: header + "MLU0    X       ITN     ITN     0-15\nMLU1    ITN     X       SYS     0-15\n", code: "ITN",
			skipped: []string{"column mlx5_0"}},
		{name: "a code of a future cnmon", text: header + "MLU0    X       NV1     PIX     0-15\nMLU1    NV1     X       SYS     0-15\n", code: "?",
			skipped: []string{"column mlx5_0", `code "NV1" of MLU0→MLU1`, `code "NV1" of MLU1→MLU0`}},
		{name: "an MLU-Link count that is not a number", text: header + "MLU0    X       MLKx    PIX     0-15\nMLU1    MLK1    X       SYS     0-15\n", code: "?",
			skipped: []string{"column mlx5_0", `code "MLKx" of MLU0→MLU1`}},
		{name: "a row of another device", text: header + "MLU0    X       SYS     PIX     0-15\nGPU0    X       SYS     SYS\nMLU1    SYS     X       SYS     0-15\n", code: "SYS",
			skipped: []string{"column mlx5_0", "row GPU0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := ParseTopo("cnmon topo -m", []byte(tc.text))
			require.NoError(t, err)
			require.Equal(t, tc.code, topo.Codes[0][1])
			linked, _ := topo.MLULink(0, 1)
			require.False(t, linked)
			require.Equal(t, "0-15", topo.CPUAffinity[0])
			require.Equal(t, tc.skipped, topo.Skipped)
		})
	}
}

func TestParseTopoRejectsGarbledOutputNamingCommandAndLine(t *testing.T) {
	const header = "        MLU0    MLU1    CPU Affinity\n"
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a row for a card the header lacks", text: header + "MLU5    X       SYS     0-15\n", line: 2, msg: "row MLU5 has no column in the header"},
		{name: "a row with too few entries", text: header + "MLU0    X\n", line: 2, msg: "row MLU0 has 1 entries, the header has 2 columns"},
		{name: "a self entry off the diagonal", text: header + "MLU0    SYS     X       0-15\n", line: 2, msg: `MLU0→MLU0: "SYS" on the wrong side of the diagonal`},
		{name: "a row listed twice", text: header + "MLU0    X       SYS\nMLU0    X       SYS\n", line: 3, msg: "row MLU0 appears twice"},
		{name: "a header listing a card twice", text: "    MLU0    MLU0\n", line: 1, msg: "MLU0 appears twice in the header"},
		{name: "a first line that is no header", text: "Topology of MLU cards\n", line: 1, msg: `expected a header row "MLU0 MLU1 …"`},
		{name: "output truncated before the last row", text: header + "MLU0    X       SYS     0-15\n", line: 0, msg: "no row for MLU1 (truncated output?)"},
		{name: "empty output", text: "", line: 0, msg: "no connection matrix in the output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopo("cnmon topo -m", []byte(tc.text))
			discoverytest.RequireParseError(t, err, "cnmon topo -m", tc.line, tc.msg)
		})
	}
}

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

func TestParseTopoReadsTheMeshOfAn910B3Server(t *testing.T) {
	topo, err := ParseTopo(cmdTopo, []byte(readRecording(t, "atlas-800t-a2", "info", "-t", "topo")))
	require.NoError(t, err)
	for _, a := range topo.IDs {
		for _, b := range topo.IDs {
			require.Equal(t, a != b, topo.HCCS(a, b), "NPU%d→NPU%d", a, b)
		}
	}
	require.Equal(t, "144-167", topo.CPUAffinity[0])
}

func TestParseTopoReadsPhysicalIDLabelsAndSwitchedLinks(t *testing.T) {
	text := "           Phy-ID12   Phy-ID13   Phy-ID14\n" +
		"Phy-ID12   X          SIO        HCCS_SW\n" +
		"Phy-ID13   SIO        X          NA\n" +
		"Phy-ID14   HCCS_SW    NA         X          NA\n" +
		"\nLegend:\n\n  SIO  = Path traversing the SIO bus\n  HCCS_SW = Connection traversing HCCS through a switch\n"
	topo, err := ParseTopo(cmdTopo, []byte(text))
	require.NoError(t, err)
	require.True(t, topo.ByPhysicalID)
	require.Equal(t, []int{12, 13, 14}, topo.IDs)
	require.True(t, topo.HCCS(12, 13), "SIO joins the two dies of a card")
	require.True(t, topo.HCCS(12, 14), "HCCS_SW goes through a switch")
	require.False(t, topo.HCCS(13, 14))
	require.Equal(t, "", topo.CPUAffinity[12])
	require.Equal(t, "NA", topo.CPUAffinity[14], "NA where the CPU list belongs is not a matrix entry")
}

func TestParseTopoAcceptsDevicesThatCannotReportTopology(t *testing.T) {
	topo, err := ParseTopo(cmdTopo, []byte("\nThis device does not support querying topo.\n"))
	require.NoError(t, err)
	require.False(t, topo.Supported)
	require.False(t, topo.HCCS(0, 1))
}

func TestParseTopoRejectsGarbledOutputNamingCommandAndLine(t *testing.T) {
	const header = "\t   NPU0       NPU1       CPU Affinity\n"
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a row too narrow", text: header + "NPU0       X          0-23\n", line: 2, msg: "row NPU0 has 1 entries before its CPU list, the header has 2 columns"},
		{name: "a row with too few entries", text: header + "NPU0       X\n", line: 2, msg: "row NPU0 has 1 entries, the header has 2 columns"},
		{name: "a row too wide", text: header + "NPU0       X          HCCS       HCCS       0-23\n", line: 2, msg: "row NPU0 has 4 entries, the header has 2 columns"},
		{name: "a row listed twice", text: header + "NPU0       X          HCCS\nNPU0       X          HCCS\n", line: 3, msg: "row NPU0 appears twice"},
		{name: "a self entry off the diagonal", text: header + "NPU0       HCCS       X          0-23\n", line: 2, msg: `NPU0→NPU0: "HCCS" on the wrong side of the diagonal`},
		{name: "a header listing a chip twice", text: "   NPU0   NPU0\n", line: 1, msg: "NPU0 appears twice in the header"},
		{name: "a header mixing label kinds", text: "   NPU0   Phy-ID1\n", line: 1, msg: "header mixes NPU and Phy-ID labels"},
		{name: "a label with a number too large", text: "   NPU0   NPU99999999999999999999\n", line: 1, msg: `label "NPU99999999999999999999" has no usable number`},
		{name: "a first line that is no header", text: "Topology of the NPUs\n", line: 1, msg: `expected a header row "NPU0 NPU1 … CPU Affinity"`},
		{name: "output truncated before the last row", text: header + "NPU0       X          HCCS       0-23\n", line: 0, msg: "no row for NPU1 (truncated output?)"},
		{name: "empty output", text: "", line: 0, msg: "no connection matrix in the output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopo(cmdTopo, []byte(tc.text))
			discoverytest.RequireParseError(t, err, cmdTopo, tc.line, tc.msg)
		})
	}
}

// Newer npu-smi releases print the node's RoCE NICs as NIC<N> columns and
// rows, and UB links on unified-bus chips; a code npu-smi adds later must
// not cost the node its chips either.
func TestParseTopoSkipsNICsAndUnknownCodes(t *testing.T) {
	text := "        NPU0    NPU1    NPU2    NIC0    NIC1    CPU Affinity\n" +
		"NPU0    X       HCCS    UB      PIX     SYS     0-23\n" +
		"NPU1    HCCS    X       NV2     SYS     PIX     24-47\n" +
		"NPU2    UB      NV2     X       SYS     SYS     48-71\n" +
		"NIC0    PIX     SYS     SYS     X       SYS\n" +
		"NIC1    SYS     PIX     SYS     SYS     X\n" +
		"\nLegend:\n\n  X    = Self\n  UB   = Connection traversing the unified bus\n"
	topo, err := ParseTopo(cmdTopo, []byte(text))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 2}, topo.IDs)
	require.Len(t, topo.Codes, 3, "no NIC rows")
	require.Len(t, topo.Codes[0], 3, "no NIC columns")
	require.True(t, topo.HCCS(0, 1))
	require.Equal(t, "UB", topo.Codes[0][2])
	require.False(t, topo.HCCS(0, 2), "UB is no HCCS link")
	require.Equal(t, "NA", topo.Codes[1][2], "an unknown code reads as no link")
	require.Equal(t, "24-47", topo.CPUAffinity[1])
	require.Equal(t, []string{
		"npu-smi info -t topo line 1: column NIC0 names no NPU, skipped",
		"npu-smi info -t topo line 1: column NIC1 names no NPU, skipped",
		`npu-smi info -t topo line 3: NPU1→NPU2: unknown connection code "NV2", read as no link`,
		`npu-smi info -t topo line 4: NPU2→NPU1: unknown connection code "NV2", read as no link`,
		"npu-smi info -t topo line 5: row NIC0 names no NPU<N>, skipped",
		"npu-smi info -t topo line 6: row NIC1 names no NPU<N>, skipped",
	}, topo.Skipped)
}

func TestParseTopoSkipsRowsOfChipsTheHeaderLacks(t *testing.T) {
	text := "   NPU0   NPU1   CPU Affinity\n" +
		"NPU0   X      HCCS   0-23\n" +
		"NPU1   HCCS   X      0-23\n" +
		"NPU5   HCCS   HCCS   0-23\n" +
		"Phy-ID0 X     HCCS   0-23\n"
	topo, err := ParseTopo(cmdTopo, []byte(text))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, topo.IDs)
	require.Len(t, topo.Skipped, 2)
	require.Contains(t, topo.Skipped[0], "row NPU5 has no column in the header")
	require.Contains(t, topo.Skipped[1], "row Phy-ID0 names no NPU<N>")
}

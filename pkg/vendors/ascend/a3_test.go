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
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// An A3 (910_93) die is "Ascend910" to npu-smi's table and to DCMI's
// chip_name, like every 910. Its model is the SoC name CANN gives it,
// "Ascend910_" and the die's variant (DCMI's npu_name, npu-smi's "NPU
// Name"), and the two dies of a module (NPU) share accel-dra.dev/module.
func TestDiscoverNamesA3DiesAsCANNDoesAndPairsThemByModule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture string
		model   string
	}{
		{name: "DCMI, 20-core dies", fixture: "atlas-a3-20", model: "Ascend910_9372"},
		{name: "DCMI, 24-core dies", fixture: "atlas-a3-24", model: "Ascend910_9392"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := buildMockDCMI(t, tc.fixture)
			runner := discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}
			inv, err := New(Config{Root: fakeRoot(t, a3Buses, "0xd803"), Runner: runner, Library: lib}).Discover(t.Context())
			require.NoError(t, err)
			var modules []string
			for _, c := range inv.Chips {
				require.Equal(t, tc.model, c.Model)
				require.Equal(t, "Ascend910", *c.Extra[ExtraChipName].String, "the chip name stays what the tools print")
				require.Equal(t, "libdcmi.so dcmi_get_device_chip_info_v2", c.Sources[SourceModel])
				modules = append(modules, *c.Extra[AttrModule].String)
			}
			require.Equal(t, []string{"module-0", "module-0", "module-1", "module-1"}, modules)
		})
	}
	t.Run("a 910B has no module", func(t *testing.T) {
		lib := buildMockDCMI(t, "atlas-800t-a2")
		root, _ := fixture("atlas-800t-a2")
		inv, err := New(Config{Root: root, Runner: recordings(t, "atlas-800t-a2"), Library: lib}).Discover(t.Context())
		require.NoError(t, err)
		for _, c := range inv.Chips {
			require.NotContains(t, c.Extra, AttrModule)
			require.Equal(t, "Ascend910B3", c.Model)
		}
	})
}

// Without DCMI the die's variant is the "NPU Name" of `npu-smi info -t
// board`; where that query fails the model is the plain name, said once.
func TestDiscoverReadsTheA3DiesVariantThroughNpuSmi(t *testing.T) {
	const board = "npu-smi info -t board -i 0 -c 0"
	for _, tc := range []struct {
		name, board, model, source, log string
	}{
		{name: "the board query", board: readFile(t, filepath.Join("testdata", "board", "a3-die.txt")),
			model: "Ascend910_9392", source: "npu-smi info, " + board},
		{name: "no NPU Name line", board: "\tNPU ID                         : 0\n", model: "Ascend910", source: "npu-smi info",
			log: `Cannot read which A3 die this is, publishing the model npu-smi prints`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "| 0     910B3 ", "| 0     Ascend910 ")
			runner[board] = tc.board
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.model, inv.Chips[0].Model)
			require.Equal(t, tc.source, inv.Chips[0].Sources[SourceModel])
			require.Equal(t, inventory.StringValue("module-0"), inv.Chips[0].Extra[AttrModule])
			require.Equal(t, "Ascend910B3", inv.Chips[1].Model, "the other chips are asked nothing")
			require.NotContains(t, inv.Chips[1].Extra, AttrModule)
			if tc.log != "" {
				require.Contains(t, logs.String(), tc.log)
			}
		})
	}
}

func TestParseNPUName(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "the recording", in: readFile(t, filepath.Join("testdata", "board", "a3-die.txt")), want: "9392"},
		{name: "no line", in: "\tChip Name                      : Ascend910\n", err: `no "NPU Name" line`},
		{name: "not a word", in: "\tNPU Name                       : 93 92\n", err: "not a word of letters and digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNPUName("npu-smi info -t board", []byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

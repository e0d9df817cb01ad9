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
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

func TestParseVNPUModeReadsTheMode(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"vnpu-mode : docker\n", VNPUModeDocker},
		{"   vnpu-mode                      : docker   \n", VNPUModeDocker},
		{"vnpu-mode : 0\n", VNPUModeDocker},
		{"vnpu-mode : 1\n", "vm"},
		{"vnpu-mode : VM\n", "vm"},
	} {
		got, err := ParseVNPUMode(cmdVNPUMode, []byte(tc.text))
		require.NoError(t, err, tc.text)
		require.Equal(t, tc.want, got, tc.text)
	}
	_, err := ParseVNPUMode(cmdVNPUMode, []byte("Error: unknown type vnpu-mode\n"))
	discoverytest.RequireParseError(t, err, cmdVNPUMode, 0, `no "vnpu-mode : <mode>" line`)
	_, err = ParseVNPUMode(cmdVNPUMode, []byte("vnpu-mode :\n"))
	discoverytest.RequireParseError(t, err, cmdVNPUMode, 1, "the vnpu-mode is empty")
}

func TestDiscoverPublishesChipsWholeOutsideVNPUDockerMode(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{name: "docker mode", answer: "vnpu-mode : docker\n"},
		{name: "vm mode", answer: "vnpu-mode : vm\n",
			want: `the node is not in vNPU docker mode (npu-smi info -t vnpu-mode says "vm"; ` + "`npu-smi set -t vnpu-mode -d 0` switches it on)"},
		{name: "an npu-smi without the query", answer: "",
			want: "cannot read the vNPU mode: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			if tc.answer == "" {
				delete(runner, cmdVNPUMode)
			} else {
				runner[cmdVNPUMode] = tc.answer
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err, "a node outside docker mode still serves its chips whole")
			require.Len(t, inv.Chips, 8)
			for _, c := range inv.Chips {
				if tc.want == "" {
					require.Empty(t, c.PartitionModeOff)
				} else {
					require.Contains(t, c.PartitionModeOff, tc.want)
				}
				require.Equal(t, cmdVNPUMode, c.Sources[SourcePartitionMode])
			}
		})
	}
}

func TestDiscoverReadsTheAICoreCountOfA3Dies(t *testing.T) {
	// An A3 die prints "Ascend910" whether it has 20 or 24 AI cores; the
	// count comes from `npu-smi info -t common` per chip.
	for _, tc := range []struct {
		name   string
		common string
		want   int
	}{
		{name: "24 cores", common: "        Aicore Count                   : 24\n", want: 24},
		{name: "20 cores", common: "        Aicore Count                   : 20\n", want: 20},
		{name: "unreadable, the name's usual count", common: "", want: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "| 0     910B3 ", "| 0     Ascend910 ")
			if tc.common != "" {
				runner["npu-smi info -t common -i 0 -c 0"] = tc.common
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Equal(t, "Ascend910", inv.Chips[0].Model)
			require.Equal(t, tc.want, inv.Chips[0].Cores)
			if tc.common != "" {
				require.Equal(t, "npu-smi info -t common -i 0 -c 0", inv.Chips[0].Sources[SourceCores])
			}
		})
	}
}

func TestParseSetResultRejectsCreateOutsideDockerMode(t *testing.T) {
	// Outside docker mode create-vnpu says so and exits 0.
	_, err := parseSetResult("npu-smi set -t create-vnpu", []byte("The vnpu is not in docker mode.\n"))
	require.ErrorContains(t, err, "npu-smi set -t create-vnpu: The vnpu is not in docker mode.")
}

func TestVNPUTemplatesOfEveryModel(t *testing.T) {
	for _, tc := range []struct {
		model  string
		cores  int64
		memMiB int64
		want   map[string]int // template → how many fit on an empty chip
	}{
		{"Ascend910A", 30, 32768, map[string]int{"vir02": 15, "vir04": 7, "vir08": 3, "vir16": 1}},
		{"Ascend910B2", 24, 65536, map[string]int{"vir03_1c_8g": 6, "vir06_1c_16g": 4, "vir12_3c_32g": 2}},
		{"Ascend910B3", 20, 65536, map[string]int{"vir05_1c_16g": 4, "vir10_3c_32g": 2}},
		{"Ascend910B4", 20, 32768, map[string]int{"vir05_1c_8g": 4, "vir10_3c_16g": 2}},
		{"Ascend310P3", 8, 44280, map[string]int{"vir01": 7, "vir02": 3, "vir02_1c": 4, "vir04": 1, "vir04_3c": 2,
			"vir04_3c_ndvpp": 2, "vir04_4c_dvpp": 1}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, ok := vnpuModels[tc.model]
			require.True(t, ok)
			c := vendors.Counters{Cores: tc.cores, MemoryBytes: tc.memMiB * mebibyte, AICPUs: m.AICPUs}
			got := map[string]int{}
			for _, tpl := range m.Templates {
				got[tpl.Name] = c.Fits(tpl)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

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
	"strings"
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
			want: "the vNPU mode is unknown (npu-smi info -t vnpu-mode: reading the vNPU mode: running npu-smi info -t vnpu-mode: not found); " +
				"if the node is in vNPU docker mode (`npu-smi info -t vnpu-mode` on the host says docker), declare it with nodeGroups[].partitionMode: on"},
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
	// create-vnpu prints these and exits 0: outside docker mode, and when
	// its mode query is refused (in a container), npucli/src/npu_set_print.c:212-221.
	for _, out := range []string{
		"The vnpu is not in docker mode, does not support setting create-vnpu.",
		"Failed to get vnpu mode.",
	} {
		_, err := parseSetResult("npu-smi set -t create-vnpu", []byte(out+"\n"))
		require.EqualError(t, err, "npu-smi set -t create-vnpu: "+out)
	}
}

// The declared partition mode wins; the node's answer to the mode query,
// where it gives one, is a cross-check (partitionmode.go).
func TestDiscoverTakesTheDeclaredPartitionModeAndChecksItWhereTheNodeAnswers(t *testing.T) {
	const (
		fromDCMI = "libdcmi.so dcmi_get_vdevice_mode"
		unknown  = "the vNPU mode is unknown (libdcmi.so dcmi_get_vdevice_mode: dcmi_get_vdevice_mode returned -8002: " +
			"DCMI answers it only as root on the host, or for 910B in a privileged container); if the node is in vNPU docker mode " +
			"(`npu-smi info -t vnpu-mode` on the host says docker), declare it with nodeGroups[].partitionMode: on"
	)
	for _, tc := range []struct {
		name, fixture, declared string
		fixtureLines            []string
		off, source, log        string
	}{
		{name: "on the host, docker mode", fixture: "atlas-800t-a2", declared: "auto", fixtureLines: []string{"env physical"},
			source: fromDCMI},
		{name: "a container refuses the query: the mode is unknown, not off", fixture: "atlas-800t-a2", declared: "",
			fixtureLines: []string{"env container"}, off: unknown, source: fromDCMI,
			log: "Cannot read the vNPU mode here and no partition mode is declared, offering no vNPUs"},
		{name: "a container refuses the query, the admin declares on", fixture: "atlas-800t-a2", declared: "on",
			fixtureLines: []string{"env container"}, source: sourceDeclared,
			log: "Cannot read the vNPU mode here, offering vNPUs as the declared partition mode says"},
		{name: "a privileged container answers for 910B", fixture: "atlas-800t-a2", declared: "auto",
			fixtureLines: []string{"env privileged"}, source: fromDCMI},
		{name: "but not for 310P", fixture: "atlas-300i-duo", declared: "auto",
			fixtureLines: []string{"env privileged"}, off: unknown, source: fromDCMI},
		{name: "declared on, the node says vm", fixture: "atlas-800t-a2", declared: "on",
			fixtureLines: []string{"env physical", "vnpu-mode vm"}, source: fromDCMI,
			off: `the node is not in vNPU docker mode (libdcmi.so dcmi_get_vdevice_mode says "vm"; ` +
				"`npu-smi set -t vnpu-mode -d 0` switches it on); nodeGroups[].partitionMode declares on",
			log: "The node's vNPU mode contradicts the declared partition mode, offering no vNPUs"},
		{name: "declared off is not asked", fixture: "atlas-800t-a2", declared: "off", fixtureLines: []string{"fail dcmi_get_vdevice_mode -8005"},
			off: "vNPUs are switched off for this node (nodeGroups[].partitionMode: off)", source: sourceDeclared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			lib := buildMockDCMI(t, tc.fixture, tc.fixtureLines...)
			root, runner := fixture(tc.fixture)
			b := New(Config{Root: root, Runner: runner, Library: lib, PartitionMode: tc.declared})
			for range 2 {
				inv, err := b.Discover(ctx)
				require.NoError(t, err)
				for _, c := range inv.Chips {
					require.Equal(t, tc.off, c.PartitionModeOff, "chip %d", c.Index)
					require.Equal(t, tc.source, c.Sources[SourcePartitionMode], "chip %d", c.Index)
				}
			}
			if tc.log != "" {
				require.Equal(t, 1, strings.Count(logs(), tc.log), "logged once over two polls:\n%s", logs())
			}
		})
	}
}

func TestDiscoverRejectsAnUnknownPartitionMode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	root, runner := fixture("atlas-800t-a2")
	_, err := New(Config{Root: root, Runner: runner, PartitionMode: "sometimes"}).Discover(ctx)
	require.EqualError(t, err, `partition mode "sometimes" is not one of auto, on, off`)
}

func TestVNPUTemplatesOfEveryModel(t *testing.T) {
	for _, tc := range []struct {
		model  string
		cores  int64
		memMiB int64
		want   map[string]int // template → how many fit on an empty chip
	}{
		{"Ascend910A", 30, 32768, map[string]int{"vir02": 15, "vir04": 7, "vir08": 3, "vir16": 1}},
		{"Ascend910B2", 24, 65536, map[string]int{"vir06_1c_16g": 4, "vir12_3c_32g": 2}},
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

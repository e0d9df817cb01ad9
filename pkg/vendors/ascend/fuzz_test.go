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

// Fuzz targets of the npu-smi and version.info parsers. The seed corpus is
// the recorded output of every fixture node plus the edge cases below;
// testdata/fuzz/<target> keeps the inputs fuzzing once broke a parser with.
// Run one for a while with
//
//	go test -run x -fuzz FuzzParseInfo -fuzztime 60s -parallel 1 ./pkg/vendors/ascend

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
)

func FuzzParseInfo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/npu-smi/npu-smi_info.txt",
		"",
		"| NPU Name | Health | Power |\n| Chip Phy-ID | Bus-Id | AICore(%) Memory-Usage(MB) |\n+==+\n| 0 910B3 | ok | 1 |\n| 0 0 | 0000:c1:00.0 | 0 1/2 |\n+==+\n| 0 910B3 | OK | 1 |\n| 0 1 | 0000:c1:00.0 | 0 1/2 |\n",
		"| NPU Name | Health | Power |\n| Chip | Bus-Id | AICore(%) Memory-Usage(MB) |\n+==+\n| 0 910B3 | OK | 1 |\n",
		// A chip row without its NPU row (health 0xFFFFFFFF), then a card.
		"| NPU Name | Health | Power |\n| Chip Device | Bus-Id | AICore(%) Memory-Usage(MB) |\n+==+\n| 0 0 | 0000:01:00.0 | 0 1/2 |\n+--+\n| 1 310P3 | OK | 1 |\n| 1 1 | 0000:01:00.0 | 0 1/2 |\n",
	)
	discoverytest.FuzzParser(f, "npu-smi info", ParseInfo, func(t *testing.T, data []byte, chips []ChipInfo) {
		require.NotEmpty(t, chips)
		seen := map[[2]int]bool{}
		for _, c := range chips {
			require.GreaterOrEqual(t, c.Chip, 0)
			require.GreaterOrEqual(t, c.PhysicalID, -1)
			if c.NoNPURow {
				// A chip row without its NPU row: no name, health UNKNOWN,
				// its card unknown (-1) unless it follows its card's chip.
				require.GreaterOrEqual(t, c.NPU, -1)
				require.Empty(t, c.Name)
				require.Equal(t, HealthUnknown, c.Health)
				require.Greater(t, c.Line, 0)
				continue
			}
			require.GreaterOrEqual(t, c.NPU, 0)
			require.False(t, seen[[2]int{c.NPU, c.Chip}], "NPU %d chip %d twice", c.NPU, c.Chip)
			seen[[2]int{c.NPU, c.Chip}] = true
			require.NotEmpty(t, c.Name)
			require.Contains(t, healthValues, strings.ToLower(c.Health))
			// Memory is published in bytes: MB << 20 must not overflow.
			require.GreaterOrEqual(t, c.MemoryMB, int64(0))
			require.LessOrEqual(t, c.MemoryMB, int64(math.MaxInt64>>20))
			if c.BusID != "" {
				norm, err := pci.NormalizeBusID(c.BusID)
				require.NoError(t, err)
				require.Equal(t, norm, c.BusID, "bus id is normalized")
			}
			require.Greater(t, c.Line, 0)
		}
		// The usage of the same table: one entry per chip, no value negative.
		usage, err := ParseInfoUsage("npu-smi info", data)
		require.NoError(t, err)
		keys := map[[2]int]bool{}
		for _, c := range chips {
			if c.RowError == "" {
				keys[[2]int{c.NPU, c.Chip}] = true
			}
		}
		require.Len(t, usage, len(keys), "no usage of a chip whose row does not parse")
		for _, u := range usage {
			for _, v := range []*float64{u.PowerW, u.TempC, u.AICorePercent, u.MemoryUsedMB, u.MemoryTotalMB} {
				if v != nil {
					require.GreaterOrEqual(t, *v, 0.0)
				}
			}
		}
	})
}

func FuzzParseMapping(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/npu-smi/npu-smi_info_-m.txt",
		"",
		"NPU ID Chip ID Chip Logic ID Chip Name\n0 0 - Mcu\n",
		"NPU ID Chip ID Chip Logic ID Chip Phy-ID Chip Name\n0 0 0 0 Ascend 910\n0 1 1 1 Ascend 910\n",
		"NPU ID Chip ID Chip Logic ID Chip Name\n0 0 0 Ascend 910B3\n1 0 0 Ascend 910B3\n",
	)
	discoverytest.FuzzParser(f, "npu-smi info -m", ParseMapping, func(t *testing.T, _ []byte, rows []ChipMapping) {
		require.NotEmpty(t, rows)
		chips, logic := map[[2]int]bool{}, map[int]bool{}
		for _, m := range rows {
			require.GreaterOrEqual(t, m.NPU, 0)
			require.GreaterOrEqual(t, m.Chip, 0)
			require.GreaterOrEqual(t, m.LogicID, 0)
			require.GreaterOrEqual(t, m.PhysicalID, -1)
			require.False(t, chips[[2]int{m.NPU, m.Chip}], "NPU %d chip %d twice", m.NPU, m.Chip)
			require.False(t, logic[m.LogicID], "logic id %d twice", m.LogicID)
			chips[[2]int{m.NPU, m.Chip}], logic[m.LogicID] = true, true
		}
	})
}

func FuzzParseTopo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/npu-smi/npu-smi_info_-t_topo.txt",
		"",
		"This device does not support querying topo.",
		"NPU0 NPU1 CPU Affinity\nNPU0 X HCCS 0-23\nNPU1 PIX X 0-23\n",
		"Phy-ID12 Phy-ID13 CPU Affinity\nPhy-ID12 X SIO NA\nPhy-ID13 SIO X\n",
		"NPU0 NPU99999999999999999999\nNPU0 X HCCS\n",
	)
	discoverytest.FuzzParser(f, "npu-smi info -t topo", ParseTopo, func(t *testing.T, data []byte, topo Topology) {
		if !topo.Supported {
			require.Empty(t, topo.IDs)
			return
		}
		require.NotEmpty(t, topo.IDs)
		require.Len(t, topo.Codes, len(topo.IDs), "one row per column")
		for i, id := range topo.IDs {
			require.GreaterOrEqual(t, id, 0)
			if i > 0 {
				require.Less(t, topo.IDs[i-1], id, "ids sorted and unique")
			}
			require.Len(t, topo.Codes[id], len(topo.IDs), "row %d is complete", id)
			label := "NPU"
			if topo.ByPhysicalID {
				label = "Phy-ID"
			}
			require.Contains(t, string(data), fmt.Sprintf("%s%d", label, id), "ids are the labels' numbers")
			for _, other := range topo.IDs {
				code := topo.Codes[id][other]
				require.True(t, topoCodes[code], "code %q", code)
				require.Equal(t, id == other, code == "X", "X exactly on the diagonal")
			}
		}
	})
}

func FuzzParseHealth(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/npu-smi/npu-smi_info_-t_health_*.txt")
	discoverytest.AddFileSeeds(f, "testdata/health/*.txt",
		"",
		"Health Status : OK\nError Code : NA\n",
		"Health Status : Alarm\nError Code : 0x1 ffffffff 100000000\nError Information : a\n : b\n",
		"Error Information : x\n : y\nHealth Status : UNKNOWN\nError Code : 80E18005\n",
	)
	discoverytest.FuzzParser(f, cmdHealth(0, 0), ParseHealth, func(t *testing.T, _ []byte, h ChipHealth) {
		require.Contains(t, healthValues, strings.ToLower(h.Health))
		described := h.Describe()
		for _, c := range h.Codes {
			require.Regexp(t, `^0x[0-9A-F]+$`, c)
			_, err := strconv.ParseUint(strings.TrimPrefix(c, "0x"), 16, 32)
			require.NoError(t, err, "code %s fits 32 bits", c)
			require.Contains(t, described, c)
		}
		for _, info := range h.Info {
			require.NotEmpty(t, info)
			require.NotContains(t, info, "\n")
			require.NotEqual(t, "na", strings.ToLower(info))
			require.Contains(t, described, info)
		}
	})
}

func FuzzParseVersionInfo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/root"+VersionInfoPath, "", "Version=24.1.rc2.2\n", "Version=23.0.3.1", "Version=23.0.3\nVersion=23.0.3\n", "Version=v\n", "x")
	discoverytest.FuzzParser(f, "/usr/local/Ascend/driver/version.info", ParseVersionInfo, func(t *testing.T, _ []byte, v string) {
		requireSemver(t, v)
	})
}

// FuzzDiscover feeds the three npu-smi outputs, mutated together, to the
// backend over the Atlas 800 fixture root: whatever they say, it fails with
// an error naming the command or returns a consistent inventory.
func FuzzDiscover(f *testing.F) {
	for _, node := range []string{"atlas-800-910a", "atlas-800t-a2", "atlas-300i-duo"} {
		rec := func(args ...string) []byte { return []byte(discoverytest.ReadRecording(f, node, "npu-smi", args...)) }
		f.Add(rec("info"), rec("info", "-m"), rec("info", "-t", "topo"))
	}
	root, _ := fixture("atlas-800-910a")
	f.Fuzz(func(t *testing.T, info, mapping, topo []byte) {
		runner := discoverytest.MapRunner{cmdInfo: string(info), cmdMap: string(mapping), cmdTopo: string(topo)}
		// Every error says which output or which chip it is about.
		discoverytest.RequireDiscovered(t, New(Config{Root: root, Runner: runner}), `npu-smi|NPU \d+`)
	})
}

// requireSemver asserts that v is in the form SemverFromVendor returns:
// it converts to itself.
func requireSemver(t *testing.T, v string) {
	t.Helper()
	again, err := discovery.SemverFromVendor(v)
	require.NoError(t, err)
	require.Equal(t, v, again)
}

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

// Fuzz targets of the cnmon parsers. The seed corpus is the recorded output
// of every fixture node plus the edge cases below; testdata/fuzz/<target>
// keeps the inputs fuzzing once broke a parser with. Run one for a while
// with
//
//	go test -run x -fuzz FuzzParseInfo -fuzztime 60s -parallel 1 ./pkg/vendors/cambricon

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
)

func FuzzParseInfo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/cnmon/cnmon_info.txt",
		"",
		"Card 0\nCard 0\n",
		"Card -1\n",
		"  Product Name : x\n",
	)
	discoverytest.FuzzParser(f, "cnmon info", ParseInfo, func(t *testing.T, data []byte, cards []CardInfo) {
		require.NotEmpty(t, cards)
		seen := map[int]bool{}
		for _, c := range cards {
			require.GreaterOrEqual(t, c.Card, 0)
			require.False(t, seen[c.Card], "card %d twice", c.Card)
			seen[c.Card] = true
			require.NotEmpty(t, c.ProductName)
			require.GreaterOrEqual(t, c.MemoryBytes, int64(0))
			norm, err := pci.NormalizeBusID(c.PCIBusID)
			require.NoError(t, err)
			require.Equal(t, norm, c.PCIBusID, "bus id is normalized")
			again, err := discovery.SemverFromVendor(c.DriverVersion)
			require.NoError(t, err)
			require.Equal(t, c.DriverVersion, again)
			require.True(t, c.UUID != "" || c.SerialNumber != "")
		}
		// The usage of the same output: cards only, no value negative.
		usage, err := ParseInfoUsage("cnmon info", data)
		require.NoError(t, err)
		for card, u := range usage {
			require.True(t, seen[card], "usage of card %d, which ParseInfo does not list", card)
			for _, v := range []*float64{u.UtilizationPercent, u.MemoryUsedBytes, u.MemoryTotalBytes, u.TempC, u.PowerW} {
				if v != nil {
					require.GreaterOrEqual(t, *v, 0.0)
				}
			}
		}
	})
}

func FuzzParseTopo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/*/cnmon/cnmon_topo_-m.txt",
		"",
		"MLU0 MLU1\nMLU0 X MLK[S]\nMLU1 SYS X\n",
	)
	discoverytest.FuzzParser(f, "cnmon topo -m", ParseTopo, func(t *testing.T, data []byte, topo Topology) {
		require.NotEmpty(t, topo.Cards)
		require.Len(t, topo.Codes, len(topo.Cards), "one row per column")
		for i, a := range topo.Cards {
			require.GreaterOrEqual(t, a, 0)
			if i > 0 {
				require.Less(t, topo.Cards[i-1], a, "cards sorted and unique")
			}
			require.Len(t, topo.Codes[a], len(topo.Cards), "row MLU%d is complete", a)
			require.Contains(t, string(data), fmt.Sprintf("MLU%d", a), "cards are the labels' numbers")
			require.GreaterOrEqual(t, topo.MLULinkPorts(a), 0)
			for _, b := range topo.Cards {
				require.Equal(t, a == b, topo.Codes[a][b] == "X", "X exactly on the diagonal")
				_, links := topo.MLULink(a, b)
				require.GreaterOrEqual(t, links, 0)
			}
		}
	})
}

// FuzzDiscover feeds both cnmon outputs, mutated together, to the backend
// over the MLU370-X8 fixture root: whatever they say, it fails with an
// error or returns a consistent inventory.
func FuzzDiscover(f *testing.F) {
	for _, node := range []string{"mlu370-x8", "mlu590", "mlu270"} {
		f.Add([]byte(discoverytest.ReadRecording(f, node, "cnmon", "info")), []byte(discoverytest.ReadRecording(f, node, "cnmon", "topo", "-m")))
	}
	root, _ := fixture("mlu370-x8")
	f.Fuzz(func(t *testing.T, info, topo []byte) {
		runner := discoverytest.MapRunner{"cnmon info": string(info), "cnmon topo -m": string(topo)}
		discoverytest.RequireDiscovered(t, New(Config{Root: root, Runner: runner}), `cnmon|card \d+`)
	})
}

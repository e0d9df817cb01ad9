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

package bench_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/test/scale"
)

// peerCluster is nodes nodes of the peer's slices, as its kubelet plugin
// publishes them (one pool per node).
func peerCluster(nodes int, p scale.Peer) cluster {
	var c cluster
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		c.nodes = append(c.nodes, benchNode(name))
		c.slices = append(c.slices, resourceslices.SliceObjects(name, map[string]resourceslice.DriverResources{p.Driver: p.Resources(name, i)})...)
	}
	return c
}

// peerRun is one side of BenchmarkPeers: its cluster, its classes and
// its two claims.
type peerRun struct {
	name   string
	c      cluster
	in     *simulate.Inputs
	claims []*resourceapi.ResourceClaim
}

// peerRuns are the peer sides' Whole claims and ours on a cluster of one
// vendor: the same two shapes (one chip by model, four in one link),
// every node alike.
func peerRuns(tb testing.TB, nodes int) []peerRun {
	tb.Helper()
	ours, ourClaims := loadClaims(tb)
	peers, peerClaims := loadInputs(tb, "../scale/testdata/peers.yaml")
	pick := func(byName map[string]*resourceapi.ResourceClaim, names ...string) []*resourceapi.ResourceClaim {
		var out []*resourceapi.ResourceClaim
		for _, n := range names {
			require.Contains(tb, byName, n)
			out = append(out, byName[n])
		}
		return out
	}
	return []peerRun{
		{"ours-atlas-800t-a2", wholeCluster(tb, nodes, []string{scale.OneVendorProfile}, nil), ours, pick(ourClaims, scale.OneVendorTemplates...)},
		{"nvidia", peerCluster(nodes, scale.NVIDIAGPUs), peers, pick(peerClaims, scale.NVIDIAGPUs.Templates...)},
		{"huawei", peerCluster(nodes, scale.HuaweiNPUs), peers, pick(peerClaims, scale.HuaweiNPUs.Templates...)},
	}
}

// BenchmarkPeers is bench-scale's peer sides in process: our claims (a)
// and (b) on 1000 nodes of 8 × 910B3 each, next to the NVIDIA- and
// Huawei-shaped slices with their claims of the same shapes, every claim
// allocated on every node per op as the scheduler's Filter does.
func BenchmarkPeers(b *testing.B) {
	for _, r := range peerRuns(b, 1000) {
		b.Run(r.name, func(b *testing.B) {
			cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
			b.ReportAllocs()
			fits := 0
			for b.Loop() {
				fits = 0
				for _, claim := range r.claims {
					fits += allocateOnEveryNode(b, r.c, r.in, cache, claim)
				}
			}
			b.ReportMetric(float64(fits), "nodes-fit")
		})
	}
}

// TestPeersSetup: each side's two claims fit on every node, so the
// sub-benchmarks do the same work.
func TestPeersSetup(t *testing.T) {
	for _, r := range peerRuns(t, 4) {
		cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
		for _, claim := range r.claims {
			require.Equal(t, 4, allocateOnEveryNode(t, r.c, r.in, cache, claim), "%s: claim %s", r.name, claim.Name)
		}
	}
}

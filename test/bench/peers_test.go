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
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/test/scale"
)

// oneVendorCluster is nodes nodes of hardware profile ref, chips Whole: the
// cluster the peer sides run on, every node alike.
func oneVendorCluster(tb testing.TB, nodes int, ref string) cluster {
	tb.Helper()
	policy, err := partitions.ParsePolicy(registry, string(partitions.ModeWhole))
	require.NoError(tb, err)
	p, err := profile.Load(registry, ref)
	require.NoError(tb, err)
	var c cluster
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		inv, err := profilenode.New(registry, name, p).Discover(context.Background())
		require.NoError(tb, err)
		c.nodes = append(c.nodes, benchNode(name))
		c.slices = append(c.slices, resourceslices.SlicesFor(registry, name, inv, resourceslices.Options{Policy: policy})...)
	}
	return c
}

// peerCluster is nodes nodes of the peer's slices, as its kubelet plugin
// publishes them (one pool per node).
func peerCluster(nodes int, p scale.Peer) cluster {
	var c cluster
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		c.nodes = append(c.nodes, benchNode(name))
		for _, pool := range p.Resources(name, i).Pools {
			for _, s := range pool.Slices {
				c.slices = append(c.slices, &resourceapi.ResourceSlice{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, len(c.slices))},
					Spec: resourceapi.ResourceSliceSpec{Driver: p.Driver, NodeName: ptr.To(name),
						Pool:    resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: int64(len(pool.Slices))},
						Devices: s.Devices, SharedCounters: s.SharedCounters},
				})
			}
		}
	}
	return c
}

func benchNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// peerRuns are the peer sides' Whole claims and ours on a cluster of one
// vendor: the same two shapes (one chip by model, four in one link),
// every node alike.
func peerRuns(tb testing.TB, nodes int) []struct {
	name   string
	c      cluster
	in     *simulate.Inputs
	claims []*resourceapi.ResourceClaim
} {
	tb.Helper()
	ours, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/claims.yaml"})
	require.NoError(tb, err)
	peers, err := simulate.Load([]string{"../scale/testdata/peers.yaml"})
	require.NoError(tb, err)
	pick := func(in *simulate.Inputs, names ...string) []*resourceapi.ResourceClaim {
		var out []*resourceapi.ResourceClaim
		for _, n := range names {
			for _, c := range in.Claims {
				if c.Name == n {
					out = append(out, c)
				}
			}
		}
		require.Len(tb, out, len(names))
		return out
	}
	type run = struct {
		name   string
		c      cluster
		in     *simulate.Inputs
		claims []*resourceapi.ResourceClaim
	}
	return []run{
		{"ours-atlas-800t-a2", oneVendorCluster(tb, nodes, scale.OurProfiles[0]), ours, pick(ours, scale.OurTemplates[:2]...)},
		{"nvidia", peerCluster(nodes, scale.NVIDIAGPUs), peers, pick(peers, scale.NVIDIAGPUs.Templates...)},
		{"huawei", peerCluster(nodes, scale.HuaweiNPUs), peers, pick(peers, scale.HuaweiNPUs.Templates...)},
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

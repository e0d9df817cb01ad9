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

// Package bench_test measures what our ResourceSlice schema costs the
// upstream structured allocator, the code the kube-scheduler runs, next to
// a baseline in the same run (docs/benchmarks.md). The other benchmarks
// (prepare, publication, memory) are in test/plugin/bench_test.go, on the
// tier-3 harness.
package bench_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

// nodeProfiles alternate over the cluster: the synthetic 16-chip nodes of
// the plugin benchmarks.
var nodeProfiles = []string{"../plugin/testdata/16-npu-910b3.yaml", "../plugin/testdata/16-mlu370.yaml"}

// cluster is what the scheduler's allocator sees: nodes and all slices.
type cluster struct {
	nodes  []*v1.Node
	slices []*resourceapi.ResourceSlice
}

// clusters are the three sides of the allocation ratio, on the same nodes
// with the same devices (the devices the chip modes publish, partitions
// included):
//   - ours: our real slices;
//   - shared: the same devices with only the docs/architecture.md shared keys
//     (accel-dra.dev/*) and capacities, no vendor extras, no counters,
//     what the fixed contract alone costs;
//   - baseline: the same devices carrying only a model attribute.
type clusters struct{ ours, shared, baseline cluster }

// buildCluster publishes nodes nodes with our real slices in chip modes
// modes (partitions.ParsePolicy syntax) and derives the other two sides.
func buildCluster(tb testing.TB, nodes int, modes string) clusters {
	tb.Helper()
	policy, err := partitions.ParsePolicy(registry, modes)
	require.NoError(tb, err)
	var c clusters
	for i := range nodes {
		p, err := profile.Load(registry, nodeProfiles[i%len(nodeProfiles)])
		require.NoError(tb, err)
		name := fmt.Sprintf("node-%04d", i)
		inv, err := profilenode.New(registry, name, p).Discover(context.Background())
		require.NoError(tb, err)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		c.ours.nodes = append(c.ours.nodes, node)
		c.shared.nodes = append(c.shared.nodes, node)
		c.baseline.nodes = append(c.baseline.nodes, node)
		slices := resourceslices.SlicesFor(registry, name, inv, resourceslices.Options{Policy: policy})
		c.ours.slices = append(c.ours.slices, slices...)
		c.shared.slices = append(c.shared.slices, stripped(slices, true, func(n resourceapi.QualifiedName) bool {
			return strings.HasPrefix(string(n), names.Domain+"/")
		})...)
		c.baseline.slices = append(c.baseline.slices, stripped(slices, false, func(n resourceapi.QualifiedName) bool {
			return n == names.AttrModel
		})...)
	}
	return c
}

// stripped copies one node's slices keeping the attributes keep selects
// and, with capacity, the capacities; counters are dropped, and with them
// the slices of counter sets only (the pools' slice counts follow).
func stripped(slices []*resourceapi.ResourceSlice, capacity bool, keep func(resourceapi.QualifiedName) bool) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	perPool := map[string]int64{}
	for _, s := range slices {
		if len(s.Spec.Devices) == 0 {
			continue
		}
		s = s.DeepCopy()
		s.Spec.SharedCounters = nil
		for j, d := range s.Spec.Devices {
			nd := resourceapi.Device{Name: d.Name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}}
			for n, a := range d.Attributes {
				if keep(n) {
					nd.Attributes[n] = a
				}
			}
			if capacity {
				nd.Capacity = d.Capacity
			}
			s.Spec.Devices[j] = nd
		}
		perPool[s.Spec.Driver+"/"+s.Spec.Pool.Name]++
		out = append(out, s)
	}
	for _, s := range out {
		s.Spec.Pool.ResourceSliceCount = perPool[s.Spec.Driver+"/"+s.Spec.Pool.Name]
	}
	return out
}

// loadClaims returns the chart's DeviceClasses with the benchmark's
// baseline classes, and the claims by name.
func loadClaims(tb testing.TB) (*simulate.Inputs, map[string]*resourceapi.ResourceClaim) {
	tb.Helper()
	return loadInputs(tb, "../../deployments/helm/accel-dra/deviceclasses", "testdata/claims.yaml")
}

// loadInputs reads the DeviceClasses and claims of paths, the claims also
// by name.
func loadInputs(tb testing.TB, paths ...string) (*simulate.Inputs, map[string]*resourceapi.ResourceClaim) {
	tb.Helper()
	in, err := simulate.Load(paths)
	require.NoError(tb, err)
	byName := map[string]*resourceapi.ResourceClaim{}
	for _, c := range in.Claims {
		byName[c.Name] = c
	}
	return in, byName
}

// allocateOnEveryNode does what the scheduler does for one pending claim:
// one allocator over all slices (PreFilter), then Allocate on each node
// (Filter). It returns the number of nodes where the claim fits.
func allocateOnEveryNode(tb testing.TB, c cluster, classes structured.DeviceClassLister, cache *cel.Cache, claim *resourceapi.ResourceClaim) int {
	ctx := context.Background()
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	a, err := structured.NewAllocator(ctx, simulate.Features, state, classes, c.slices, cache)
	require.NoError(tb, err)
	fits := 0
	for _, node := range c.nodes {
		out, err := a.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		if err != nil && !errors.Is(err, structured.ErrFailedAllocationOnNode) {
			require.NoError(tb, err, "claim %s on node %s", claim.Name, node.Name)
		}
		if err == nil && len(out) == 1 {
			fits++
		}
	}
	return fits
}

var benchClaims = []string{"a-one-by-model", "b-four-in-a-link-group", "c-first-available"}

// benchModes are the chip modes measured: with partitions, and Whole (the
// default); their ratio is what offering partitions costs the scheduler.
var benchModes = []string{string(partitions.ModePartitioned), string(partitions.ModeWhole)}

// BenchmarkAllocationOn1000Nodes times one claim over 1000 nodes × 16
// chips (half Ascend 910B3, half MLU370-X8) on our slices, with the chips
// Partitioned (both models: the chip and 6 partition slots, 7 devices per
// chip) and Whole (the default), and in the same iteration on the two other
// sides of the same devices (clusters). ns/op is all three; ours-ms,
// shared-ms and baseline-ms are per claim; ratio is ours/baseline,
// shared-ratio shared/baseline (what the contract's keys cost) and
// extras-ratio ours/shared (what our vendor extras and counters add).
func BenchmarkAllocationOn1000Nodes(b *testing.B) {
	in, claims := loadClaims(b)
	for _, modes := range benchModes {
		c := buildCluster(b, 1000, modes)
		for _, name := range benchClaims {
			b.Run(fmt.Sprintf("modes=%s/%s", modes, name), func(b *testing.B) {
				cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
				// Each side's time and heap allocations (runtime.MemStats
				// counts them exactly, so the allocation ratios hold on a
				// loaded machine where the time ratios are noisy).
				var ours, shared, base sideCost
				var fits, sharedFits, baseFits int
				b.ReportAllocs()
				for b.Loop() {
					ours.measure(func() { fits = allocateOnEveryNode(b, c.ours, in, cache, claims[name]) })
					shared.measure(func() { sharedFits = allocateOnEveryNode(b, c.shared, in, cache, claims[name]) })
					base.measure(func() { baseFits = allocateOnEveryNode(b, c.baseline, in, cache, claims[name+"-baseline"]) })
				}
				perClaim := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
				b.ReportMetric(perClaim(ours.time), "ours-ms")
				b.ReportMetric(perClaim(shared.time), "shared-ms")
				b.ReportMetric(perClaim(base.time), "baseline-ms")
				b.ReportMetric(float64(ours.time)/float64(base.time), "ratio")
				b.ReportMetric(float64(shared.time)/float64(base.time), "shared-ratio")
				b.ReportMetric(float64(ours.time)/float64(shared.time), "extras-ratio")
				b.ReportMetric(float64(ours.allocs)/float64(base.allocs), "allocs-ratio")
				b.ReportMetric(float64(shared.allocs)/float64(base.allocs), "shared-allocs-ratio")
				b.ReportMetric(float64(ours.allocs)/float64(shared.allocs), "extras-allocs-ratio")
				b.ReportMetric(float64(fits), "nodes-fit")
				b.ReportMetric(float64(sharedFits), "shared-nodes-fit")
				b.ReportMetric(float64(baseFits), "baseline-nodes-fit")
			})
		}
	}
}

// sideCost sums what one side of the ratio cost over the iterations.
type sideCost struct {
	time   time.Duration
	allocs uint64
}

func (c *sideCost) measure(run func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	run()
	c.time += time.Since(start)
	runtime.ReadMemStats(&after)
	c.allocs += after.Mallocs - before.Mallocs
}

// TestAllocationBenchmarkSetup runs the benchmark's claims once on four
// nodes: each fits on the same nodes on all three sides (the Ascend nodes
// for a and b, the Cambricon ones for c), so they do the same work, and
// the sides have the same devices.
func TestAllocationBenchmarkSetup(t *testing.T) {
	in, claims := loadClaims(t)
	want := map[string]int{"a-one-by-model": 2, "b-four-in-a-link-group": 2, "c-first-available": 2}
	for _, modes := range benchModes {
		c := buildCluster(t, 4, modes)
		require.Equal(t, deviceNames(c.ours), deviceNames(c.baseline), "modes %q: the baseline has our devices", modes)
		require.Equal(t, deviceNames(c.ours), deviceNames(c.shared), "modes %q: the shared-keys side has our devices", modes)
		for _, d := range devices(c.baseline) {
			require.Len(t, d.Attributes, 1, "modes %q: baseline device %s carries only its model", modes, d.Name)
			require.Contains(t, d.Attributes, names.AttrModel)
		}
		for _, d := range devices(c.shared) {
			require.Len(t, d.Attributes, 11, "modes %q: device %s carries the 11 shared keys of docs/architecture.md", modes, d.Name)
		}
		cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
		for _, name := range benchClaims {
			require.Equal(t, want[name], allocateOnEveryNode(t, c.ours, in, cache, claims[name]), "modes %q: %s on our slices", modes, name)
			require.Equal(t, want[name], allocateOnEveryNode(t, c.shared, in, cache, claims[name]), "modes %q: %s on the shared keys", modes, name)
			require.Equal(t, want[name], allocateOnEveryNode(t, c.baseline, in, cache, claims[name+"-baseline"]), "modes %q: %s on the baseline", modes, name)
		}
	}
}

func devices(c cluster) []resourceapi.Device {
	var out []resourceapi.Device
	for _, s := range c.slices {
		out = append(out, s.Spec.Devices...)
	}
	return out
}

// deviceNames lists the devices of a cluster as driver/pool/device.
func deviceNames(c cluster) []string {
	var out []string
	for _, s := range c.slices {
		for _, d := range s.Spec.Devices {
			out = append(out, s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name)
		}
	}
	return out
}

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
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/discovery/simulated"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
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

// buildCluster publishes nodes nodes with our real slices in chip modes
// modes (partitions.ParsePolicy syntax) and, for the same nodes, the
// baseline: every chip as a device with only its model attribute.
func buildCluster(tb testing.TB, nodes int, modes string) (ours, baseline cluster) {
	tb.Helper()
	policy, err := partitions.ParsePolicy(modes)
	require.NoError(tb, err)
	whole, err := partitions.ParsePolicy(string(partitions.ModeWhole))
	require.NoError(tb, err)
	for i := range nodes {
		p, err := profile.Load(nodeProfiles[i%len(nodeProfiles)])
		require.NoError(tb, err)
		name := fmt.Sprintf("node-%04d", i)
		inv, err := simulated.New(name, p).Discover(context.Background())
		require.NoError(tb, err)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		ours.nodes = append(ours.nodes, node)
		baseline.nodes = append(baseline.nodes, node)
		ours.slices = append(ours.slices, resourceslices.SlicesFor(name, inv, resourceslices.Options{Policy: policy})...)
		for _, s := range resourceslices.SlicesFor(name, inv, resourceslices.Options{Policy: whole}) {
			for j, d := range s.Spec.Devices {
				s.Spec.Devices[j] = resourceapi.Device{Name: d.Name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					names.AttrModel: d.Attributes[names.AttrModel],
				}}
			}
			baseline.slices = append(baseline.slices, s)
		}
	}
	return ours, baseline
}

// loadClaims returns the chart's DeviceClasses with the benchmark's
// baseline classes, and the claims by name.
func loadClaims(tb testing.TB) (*simulate.Inputs, map[string]*resourceapi.ResourceClaim) {
	tb.Helper()
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/claims.yaml"})
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

// BenchmarkAllocationOn1000Nodes times one claim over 1000 nodes × 16
// chips (half Ascend 910B3, half MLU370-X8) on our slices, in the default
// chip modes (910B3 chips Partitioned: 7 devices per chip) and in Whole,
// and in the same iteration on the model-only baseline. ns/op is both;
// ours-ms and baseline-ms are per claim, ratio is ours/baseline.
func BenchmarkAllocationOn1000Nodes(b *testing.B) {
	in, claims := loadClaims(b)
	for _, modes := range []string{"", string(partitions.ModeWhole)} {
		ours, baseline := buildCluster(b, 1000, modes)
		for _, name := range benchClaims {
			label := "default"
			if modes != "" {
				label = modes
			}
			b.Run(fmt.Sprintf("modes=%s/%s", label, name), func(b *testing.B) {
				cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
				var oursTime, baseTime time.Duration
				var fits, baseFits int
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					fits = allocateOnEveryNode(b, ours, in, cache, claims[name])
					oursTime += time.Since(start)
					start = time.Now()
					baseFits = allocateOnEveryNode(b, baseline, in, cache, claims[name+"-baseline"])
					baseTime += time.Since(start)
				}
				b.ReportMetric(float64(oursTime.Microseconds())/1000/float64(b.N), "ours-ms")
				b.ReportMetric(float64(baseTime.Microseconds())/1000/float64(b.N), "baseline-ms")
				b.ReportMetric(float64(oursTime)/float64(baseTime), "ratio")
				b.ReportMetric(float64(fits), "nodes-fit")
				b.ReportMetric(float64(baseFits), "baseline-nodes-fit")
			})
		}
	}
}

// TestAllocationBenchmarkSetup runs the benchmark's claims once on four
// nodes: each fits on the same nodes on our slices and on the baseline
// (the Ascend nodes for a and b, the Cambricon ones for c), so the two
// sides of the ratio do the same work.
func TestAllocationBenchmarkSetup(t *testing.T) {
	in, claims := loadClaims(t)
	want := map[string]int{"a-one-by-model": 2, "b-four-in-a-link-group": 2, "c-first-available": 2}
	for _, modes := range []string{"", string(partitions.ModeWhole)} {
		ours, baseline := buildCluster(t, 4, modes)
		require.Len(t, baseline.slices, 4, "one slice of 16 model-only devices per node")
		cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
		for _, name := range benchClaims {
			require.Equal(t, want[name], allocateOnEveryNode(t, ours, in, cache, claims[name]), "modes %q: %s on our slices", modes, name)
			require.Equal(t, want[name], allocateOnEveryNode(t, baseline, in, cache, claims[name+"-baseline"]), "modes %q: %s on the baseline", modes, name)
		}
	}
}

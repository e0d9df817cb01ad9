package simulate_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

func demoCluster(t *testing.T) *simulate.Cluster {
	data, err := os.ReadFile("../../demo/cluster.yaml")
	require.NoError(t, err)
	c, err := v1alpha1.ParseSimulatedCluster("cluster.yaml", data)
	require.NoError(t, err)
	cl, err := simulate.BuildCluster(context.Background(), c)
	require.NoError(t, err)
	return cl
}

func TestEveryDemoClaimIsAllocatedOnTheExpectedNode(t *testing.T) {
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "../../demo/workloads"})
	require.NoError(t, err)
	res, err := simulate.Run(context.Background(), demoCluster(t), in, simulate.Options{})
	require.NoError(t, err)
	nodes := map[string]string{}
	for _, c := range res.Claims {
		require.True(t, c.Allocated, "%s: %s", c.Name, c.Reason)
		nodes[c.Name] = c.Node
	}
	require.Equal(t, "a2-0", nodes["mindspore-train"], "8 in one HCCS domain only fits the 910B mesh")
	require.Equal(t, "mixed", nodes["ascend-plus-mlu"], "one claim with both vendors needs the mixed node")
	require.Equal(t, "mixed", nodes["b3-else-mlu370"], "the first choice (910B) is preferred over a fallback node")
}

func TestAnImpossibleClaimIsReportedNotAllocated(t *testing.T) {
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/five-in-a-ring.yaml"})
	require.NoError(t, err)
	res, err := simulate.Run(context.Background(), demoCluster(t), in, simulate.Options{})
	require.NoError(t, err)
	require.Len(t, res.Claims, 1)
	require.False(t, res.Claims[0].Allocated)
	require.Empty(t, res.Claims[0].Devices)
	require.Contains(t, res.Claims[0].Reason, `request "npus" needs 5: class ascend.accel-dra.dev matches 32 devices, 16 pass the request's selectors, 16 of those are free; constraint matchAttribute accel-dra.dev/linkGroup: the largest free group on one node has 4 (train-0 hccs-0)`)
}

func TestInvalidInputNamesTheFileObjectAndField(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"CEL that does not compile", []string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/bad-cel.yaml"},
			"testdata/bad-cel.yaml: claim default/broken: spec.devices.requests[0].exactly.selectors[0].cel.expression"},
		{"unknown DeviceClass", []string{"testdata/five-in-a-ring.yaml"},
			`claim default/five-in-a-ring: spec.devices.requests[0].exactly.deviceClassName: unknown DeviceClass "ascend.accel-dra.dev"`},
		{"missing file", []string{"testdata/nope.yaml"}, "nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulate.Load(tc.paths)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestExplainShowsCandidatesBeforeEachClaimWasAllocated(t *testing.T) {
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "../../demo/workloads"})
	require.NoError(t, err)
	res, err := simulate.Run(context.Background(), demoCluster(t), in, simulate.Options{Explain: true})
	require.NoError(t, err)
	byName := map[string]simulate.ClaimResult{}
	for _, c := range res.Claims {
		require.True(t, c.Allocated, "%s: %s", c.Name, c.Reason)
		require.NotEmpty(t, c.Explanation, "claim %s", c.Name)
		byName[c.Name] = c
	}
	// The firstAvailable claim explains each alternative separately.
	why := byName["b3-else-mlu370"].Explanation
	require.Len(t, why, 2)
	require.Contains(t, why[0], `request "accel/ascend910b"`)
	require.Contains(t, why[1], `request "accel/mlu370"`)

	plain, err := simulate.Run(context.Background(), demoCluster(t), in, simulate.Options{})
	require.NoError(t, err)
	for _, c := range plain.Claims {
		require.Nil(t, c.Explanation, "without Explain, claim %s has no explanation", c.Name)
	}
}

// BenchmarkAllocateDemoClaimsOn1000Nodes allocates the demo claims over a
// 1000-node cluster (half 910B servers, half MLU370-X8 servers), the
// scale DESIGN.md asks allocation time for. ns/op covers all claims.
func BenchmarkAllocateDemoClaimsOn1000Nodes(b *testing.B) {
	c, err := v1alpha1.ParseSimulatedCluster("bench", []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: SimulatedCluster
nodes:
- {name: a2, profile: atlas-800t-a2, count: 499}
- {name: x8, profile: mlu370-x8, count: 500}
- {name: mixed, profile: mixed-910b-mlu370}
`))
	require.NoError(b, err)
	cluster, err := simulate.BuildCluster(context.Background(), c)
	require.NoError(b, err)
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "../../demo/workloads"})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		res, err := simulate.Run(context.Background(), cluster, in, simulate.Options{})
		require.NoError(b, err)
		require.True(b, res.Claims[0].Allocated)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Claims)), "ns/claim")
}

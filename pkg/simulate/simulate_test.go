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

package simulate_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

func demoCluster(t *testing.T) *simulate.Cluster {
	data, err := os.ReadFile("../../demo/cluster.yaml")
	require.NoError(t, err)
	c, err := v1alpha1.ParseSimulatedCluster("cluster.yaml", data)
	require.NoError(t, err)
	cl, err := simulate.BuildCluster(context.Background(), c, simulate.ClusterOptions{Registry: registry})
	require.NoError(t, err)
	return cl
}

// clusterOf builds a cluster of the real vendors' chips from an inline
// cluster file.
func clusterOf(t *testing.T, doc string, opts simulate.ClusterOptions) (*simulate.Cluster, error) {
	t.Helper()
	opts.Registry = registry
	c, err := v1alpha1.ParseSimulatedCluster("cluster.yaml", []byte("apiVersion: accel-dra.dev/v1alpha1\nkind: SimulatedCluster\n"+doc))
	require.NoError(t, err)
	return simulate.BuildCluster(context.Background(), c, opts)
}

func TestPartitionClaimsFitOnlyWherePartitionsArePublished(t *testing.T) {
	partitioned := simulate.ClusterOptions{Policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned}}
	tests := []struct {
		name    string
		nodes   string
		opts    simulate.ClusterOptions
		want    map[string]string // claim -> node, "" for not allocated
		reasons []string          // in the reasons of the claims not allocated
	}{{
		name:  "whole chips by default: no node offers a vNPU or an sMLU, and the reason says where they would be",
		nodes: "nodes:\n- {name: duo, profile: atlas-300i-duo}\n- {name: x8, profile: mlu370-x8}\n",
		want:  map[string]string{"one-vnpu": "", "one-smlu": ""},
		reasons: []string{
			`request "vnpu" needs 1: class ascend-vnpu.accel-dra.dev matches 0 devices, 0 pass the request's selectors, 0 of those are free; 24 partition devices would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes), on duo`,
			`request "smlu" needs 1: class cambricon-partition.accel-dra.dev matches 0 devices, 0 pass the request's selectors, 0 of those are free; 48 partition devices would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes), on x8`,
		},
	}, {
		name:  "a Whole node is passed over for the Partitioned one",
		nodes: "nodes:\n- {name: whole, profile: atlas-300i-duo}\n- {name: parted, profile: atlas-300i-duo, chipModes: Partitioned}\n- {name: x8, profile: mlu370-x8, chipModes: \"mlu-*=Partitioned\"}\n",
		want:  map[string]string{"one-vnpu": "parted", "one-smlu": "x8"},
	}, {
		name:  "one chip Partitioned is enough",
		nodes: "nodes:\n- {name: duo, profile: atlas-300i-duo, chipModes: npu-2=Partitioned}\n- {name: x8, profile: mlu370-x8, chipModes: \"Shared,mlu-7=Partitioned\"}\n",
		want:  map[string]string{"one-vnpu": "duo", "one-smlu": "x8"},
	}, {
		name:  "--chip-modes Partitioned for the nodes that set no chipModes",
		nodes: "nodes:\n- {name: whole, profile: atlas-300i-duo, chipModes: Whole}\n- {name: x8, profile: mlu370-x8}\n",
		opts:  partitioned,
		want:  map[string]string{"one-vnpu": "", "one-smlu": "x8"},
		reasons: []string{
			`class ascend-vnpu.accel-dra.dev matches 0 devices, 0 pass the request's selectors, 0 of those are free; 24 partition devices would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes), on whole`,
		},
	}}
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses", "testdata/partition-claims.yaml"})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, err := clusterOf(t, tt.nodes, tt.opts)
			require.NoError(t, err)
			res, err := simulate.Run(context.Background(), cluster, in, simulate.Options{})
			require.NoError(t, err)
			got := map[string]string{}
			var reasons []string
			for _, c := range res.Claims {
				got[c.Name] = c.Node
				require.Equal(t, c.Node != "", c.Allocated, c.Name)
				if !c.Allocated {
					require.Empty(t, c.Devices)
					reasons = append(reasons, c.Reason)
					continue
				}
				require.Len(t, c.Devices, 1)
				require.Contains(t, c.Devices[0].Device, "-", "%s gets a partition device, not a chip", c.Name)
			}
			require.Equal(t, tt.want, got)
			require.Len(t, reasons, len(tt.reasons))
			for i, want := range tt.reasons {
				require.Contains(t, reasons[i], want)
			}
		})
	}
}

func TestMalformedChipModesNameTheNodeAndField(t *testing.T) {
	tests := []struct {
		name, nodes, want string
	}{
		{"an unknown mode", "nodes:\n- {name: ok, profile: mlu270}\n- {name: infer, profile: mlu370-x8, count: 2, chipModes: \"mlu-0=Sliced\"}\n",
			`nodes[1].chipModes (node "infer"): chip modes entry 1 "mlu-0=Sliced": mode "Sliced" is not one of Partitioned, Shared, Whole`},
		{"not a chip device name", "nodes:\n- {name: a2, profile: atlas-800t-a2, chipModes: \"Partitioned,gpu-0=Whole\"}\n",
			`nodes[0].chipModes (node "a2"): chip modes entry 2 "gpu-0=Whole": "gpu-0" is not a chip device name (npu-N, mlu-N, npu-* or mlu-*)`},
		{"a lower-case mode", "nodes:\n- {name: a2, profile: atlas-800t-a2, chipModes: partitioned}\n",
			`nodes[0].chipModes (node "a2"): chip modes entry 1 "partitioned": mode "partitioned" is not one of Partitioned, Shared, Whole`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterOf(t, tt.nodes, simulate.ClusterOptions{Registry: registry})
			require.EqualError(t, err, tt.want)
		})
	}
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
// scale docs/architecture.md asks allocation time for, chips Whole (the default;
// test/bench measures Partitioned ones too). ns/op covers all claims.
func BenchmarkAllocateDemoClaimsOn1000Nodes(b *testing.B) {
	c, err := v1alpha1.ParseSimulatedCluster("bench", []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: SimulatedCluster
nodes:
- {name: a2, profile: atlas-800t-a2, count: 499}
- {name: x8, profile: mlu370-x8, count: 500}
- {name: mixed, profile: mixed-910b-mlu370}
`))
	require.NoError(b, err)
	cluster, err := simulate.BuildCluster(context.Background(), c, simulate.ClusterOptions{Registry: registry})
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

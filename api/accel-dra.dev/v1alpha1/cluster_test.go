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

package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSimulatedClusterExpandsCountsIntoNodeNames(t *testing.T) {
	c, err := ParseSimulatedCluster("c.yaml", []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: SimulatedCluster
nodes:
- name: train
  profile: atlas-800-910a
  count: 2
- name: infer
  profile: mlu370-x8
  chipModes: mlu-*=Partitioned
`))
	require.NoError(t, err)
	require.Equal(t, []string{"train-0", "train-1"}, c.Nodes[0].NodeNames())
	require.Equal(t, []string{"infer"}, c.Nodes[1].NodeNames())
	require.Empty(t, c.Nodes[0].ChipModes, "no chipModes: simulate's default, Whole")
	require.Equal(t, "mlu-*=Partitioned", c.Nodes[1].ChipModes)
}

func TestParseSimulatedClusterRejectsBadFilesNamingTheField(t *testing.T) {
	head := "apiVersion: accel-dra.dev/v1alpha1\nkind: SimulatedCluster\n"
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", head + "nodes:\n- name: a\n  profile: p\n  gpus: 3\n", `c.yaml: decoding SimulatedCluster: error unmarshaling JSON: while decoding JSON: json: unknown field "gpus"`},
		{"wrong kind", "apiVersion: accel-dra.dev/v1alpha1\nkind: Cluster\nnodes: []\n", "c.yaml: apiVersion/kind"},
		{"no nodes", head + "nodes: []\n", "c.yaml: nodes: at least one node is required"},
		{"missing profile", head + "nodes:\n- name: a\n", "c.yaml: nodes[0].profile: required"},
		{"negative count", head + "nodes:\n- name: a\n  profile: p\n  count: -1\n", "c.yaml: nodes[0].count: must not be negative"},
		{"an absurd count is refused before its node names are made", head + "nodes:\n- name: a\n  profile: p\n  count: 4000000000000000000\n",
			"c.yaml: nodes[0].count: 4000000000000000000 is more than the 10000 nodes a simulated cluster may have"},
		{"too many nodes in all", head + "nodes:\n- name: a\n  profile: p\n  count: 6000\n- name: b\n  profile: p\n  count: 4000\n- name: c\n  profile: p\n",
			"c.yaml: nodes[2].count: the cluster has 10001 nodes with this entry, more than the 10000 a simulated cluster may have"},
		{"duplicate node", head + "nodes:\n- name: a-0\n  profile: p\n- name: a\n  profile: p\n  count: 1\n", `c.yaml: nodes[1].name: node "a-0" is also defined by nodes[0]`},
		{"invalid name", head + "nodes:\n- name: Bad_Name\n  profile: p\n", `c.yaml: nodes[0].name: node name "Bad_Name" is not valid`},
		{"not YAML", "nodes: [", "c.yaml: decoding SimulatedCluster"},
		{"a super pod that is no label value", head + "nodes:\n- name: a\n  profile: p\n  superPod: sp 1\n", `c.yaml: nodes[0].superPod: "sp 1" is not a valid label value`},
		{"a leaf that is no label value", head + "nodes:\n- name: a\n  profile: p\n  leaf: -leaf\n", `c.yaml: nodes[0].leaf: "-leaf" is not a valid label value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSimulatedCluster("c.yaml", []byte(tc.doc))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

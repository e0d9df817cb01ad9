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

package cli

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// topologyNodes are the nodes of a NodeList fixture of pkg/topology.
func topologyNodes(t *testing.T, file string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile("../topology/testdata/" + file)
	require.NoError(t, err)
	var list corev1.NodeList
	require.NoError(t, yaml.UnmarshalStrict(data, &list))
	var out []runtime.Object
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

func TestTopologyExportPrintsEachEnginesConfigFromTheLiveNodesAndOnlyLists(t *testing.T) {
	tests := []struct {
		args   []string
		golden string
	}{
		{[]string{"--for", "volcano"}, "a3-volcano.yaml"},
		{[]string{"--for", "kueue"}, "a3-kueue.yaml"},
		{[]string{"--for", "podgroup"}, "a3-podgroup.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			client := useFakeCluster(t, topologyNodes(t, "a3-nodes.yaml")...)
			out, errOut, err := runCLI(t, append([]string{"topology", "export"}, tc.args...)...)
			require.NoError(t, err)
			want, err := os.ReadFile("../topology/testdata/" + tc.golden)
			require.NoError(t, err)
			require.Equal(t, string(want), out)
			require.Equal(t, "accel-dra.dev/fabric-spine: 1 domains, 4 nodes (1 nodes without it)\naccel-dra.dev/superpod: 2 domains, 4 nodes (1 nodes without it)\n", errOut)
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
			}
			require.Equal(t, []string{"list nodes"}, verbs)
		})
	}
}

func TestTopologyExportRefusesWhatItCannotExport(t *testing.T) {
	tests := []struct {
		args  []string
		nodes string
		err   string
	}{
		{[]string{"--for", "slurm"}, "a3-nodes.yaml", `--for "slurm": want volcano, kueue or podgroup`},
		{[]string{"--for", "kueue", "--levels", "rack"}, "a3-nodes.yaml", `--levels: unknown level "rack", want spine, leaf or superpod`},
		{[]string{"--for", "kueue"}, "crossing-nodes.yaml", `the fabric of the cluster at https://fake.test: accel-dra.dev/superpod=sp-1 spans two domains of accel-dra.dev/fabric-leaf: "tor-a" (node a3-0) and "tor-b" (node a3-1); the levels must nest, or choose the levels with --levels`},
	}
	for _, tc := range tests {
		useFakeCluster(t, topologyNodes(t, tc.nodes)...)
		_, _, err := runCLI(t, append([]string{"topology", "export"}, tc.args...)...)
		require.EqualError(t, err, tc.err)
	}
}

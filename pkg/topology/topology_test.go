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

package topology_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Nodes reads a NodeList fixture of testdata.
func Nodes(t *testing.T, file string) []corev1.Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	var list corev1.NodeList
	require.NoError(t, yaml.UnmarshalStrict(data, &list))
	return list.Items
}

func TestEachEngineGetsTheLevelsTheNodesHave(t *testing.T) {
	tests := []struct {
		nodes, engine, golden string
		levels                []string
	}{
		{"a3-nodes.yaml", topology.ForVolcano, "a3-volcano.yaml", nil},
		{"a3-nodes.yaml", topology.ForKueue, "a3-kueue.yaml", nil},
		{"a3-nodes.yaml", topology.ForPodGroup, "a3-podgroup.yaml", nil},
		{"roce-nodes.yaml", topology.ForVolcano, "roce-volcano.yaml", nil},
		{"roce-nodes.yaml", topology.ForPodGroup, "roce-podgroup.yaml", nil},
		{"crossing-nodes.yaml", topology.ForKueue, "crossing-kueue-superpod.yaml", []string{fabric.LabelSuperPod}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			f, err := topology.Read(Nodes(t, tc.nodes), tc.levels)
			require.NoError(t, err)
			got, err := topology.Export(f, tc.engine)
			require.NoError(t, err)
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), got)
		})
	}
}

func TestTheSummarySaysHowManyDomainsAndNodesEachLevelHas(t *testing.T) {
	f, err := topology.Read(Nodes(t, "a3-nodes.yaml"), nil)
	require.NoError(t, err)
	require.Equal(t, []string{fabric.LabelSpine, fabric.LabelSuperPod}, f.Levels)
	require.Equal(t, map[string][]string{"sp-1": {"a3-0", "a3-1"}, "sp-2": {"a3-2", "a3-3"}}, f.Domains[fabric.LabelSuperPod])
	require.Equal(t, "accel-dra.dev/fabric-spine: 1 domains, 4 nodes (1 nodes without it)\naccel-dra.dev/superpod: 2 domains, 4 nodes (1 nodes without it)\n", topology.Summary(f))
}

func TestAFabricThatDoesNotNestOrIsNotThereIsAnError(t *testing.T) {
	tests := []struct {
		name, nodes string
		levels      []string
		err         string
	}{
		{"a super pod across two leaves", "crossing-nodes.yaml", nil,
			`accel-dra.dev/superpod=sp-1 spans two domains of accel-dra.dev/fabric-leaf: "tor-a" (node a3-0) and "tor-b" (node a3-1); the levels must nest, or choose the levels with --levels`},
		{"a level no node has", "roce-nodes.yaml", []string{fabric.LabelSuperPod},
			"no node has the label accel-dra.dev/superpod (level superpod)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topology.Read(Nodes(t, tc.nodes), tc.levels)
			require.EqualError(t, err, tc.err)
		})
	}
	_, err := topology.Read([]corev1.Node{{}}, nil)
	require.ErrorContains(t, err, "no node has a fabric label (accel-dra.dev/fabric-spine, accel-dra.dev/fabric-leaf, accel-dra.dev/superpod)")
}

func TestLevelsAreGivenHighestFirstByTheirShortNames(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
		err  string
	}{
		{[]string{"spine", "superpod"}, []string{fabric.LabelSpine, fabric.LabelSuperPod}, ""},
		{nil, nil, ""},
		{[]string{"rack"}, nil, `--levels: unknown level "rack", want spine, leaf or superpod`},
		{[]string{"leaf", "leaf"}, nil, "--levels: level leaf given twice"},
		{[]string{"superpod", "spine"}, nil, "--levels: spine is not below superpod; give the levels highest first (spine, leaf, superpod)"},
	}
	for _, tc := range tests {
		got, err := topology.ParseLevels(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	require.EqualError(t, topology.CheckEngine("slurm"), `--for "slurm": want volcano, kueue or podgroup`)
}

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

package why_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
	"github.com/accel-dra/accel-dra/pkg/why"
)

// superPodCluster is three 910B3 servers (8 chips each) in two super pods,
// sp-1 with two and sp-2 with one, and a CPU node in none.
func superPodCluster(t *testing.T) []runtime.Object {
	var objs []runtime.Object
	for _, n := range []struct{ name, sp string }{{"a-0", "sp-1"}, {"a-1", "sp-1"}, {"a-2", "sp-2"}, {"cpu-0", ""}} {
		prof := "atlas-800t-a2"
		if n.sp == "" {
			prof = "mlu270"
		}
		nd, slices := node(t, n.name, prof)
		if n.sp != "" {
			nd.Labels[fabric.LabelSuperPod] = n.sp
		}
		objs = append(append(objs, nd), slices...)
	}
	return append(objs, chartClasses(t)...)
}

// podGroup is a Volcano PodGroup with spec.networkTopology of mode and
// tier (none where mode is empty).
func podGroup(name, mode string, tier int64) *unstructured.Unstructured {
	spec := map[string]any{"minMember": int64(2)}
	if mode != "" {
		spec["networkTopology"] = map[string]any{"mode": mode, "highestTierAllowed": tier}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func TestWhySaysHowManyFreeChipsEachDomainOfAGangHas(t *testing.T) {
	const volcanoPod = "scheduling.k8s.io/group-name"
	tests := []struct {
		name        string
		annotations map[string]string
		podGroup    *unstructured.Unstructured
		want        []string
		// absent is text no line may have.
		absent string
	}{
		{"a Kueue job kept in one super pod",
			map[string]string{"kueue.x-k8s.io/podset-required-topology": fabric.LabelSuperPod}, nil,
			[]string{"pod default/gang-0: …",
				"gang kept in one accel-dra.dev/superpod (annotation kueue.x-k8s.io/podset-required-topology); free chips per domain: sp-1: 2 nodes, 16 free chips; sp-2: 1 nodes, 8 free chips",
				"…"}, ""},
		{"a Volcano pod group kept in tier 1, the smallest fabric level",
			map[string]string{volcanoPod: "gang-pg"}, podGroup("gang-pg", "hard", 1),
			[]string{"pod default/gang-0: …",
				"gang kept in one accel-dra.dev/superpod (Volcano pod group gang-pg: networkTopology mode hard, highestTierAllowed 1); free chips per domain: sp-1: 2 nodes, 16 free chips; sp-2: 1 nodes, 8 free chips",
				"…"}, ""},
		{"a Volcano pod group's tier above the levels the nodes have",
			map[string]string{volcanoPod: "gang-pg"}, podGroup("gang-pg", "soft", 2),
			[]string{"pod default/gang-0: …",
				"gang (Volcano pod group gang-pg: networkTopology mode soft, highestTierAllowed 2): the nodes have 1 fabric levels (accel-dra.dev/superpod), so no tier 2",
				"…"}, ""},
		{"a Volcano pod group without a network topology is no topology gang",
			map[string]string{volcanoPod: "gang-pg"}, podGroup("gang-pg", "", 0),
			[]string{"pod default/gang-0: …", "…"}, "gang kept"},
		{"a Volcano pod group that cannot be read",
			map[string]string{volcanoPod: "gone-pg"}, podGroup("gang-pg", "hard", 1),
			[]string{"pod default/gang-0: …",
				`Volcano pod group gone-pg: cannot read its network topology: podgroups.scheduling.volcano.sh "gone-pg" not found`,
				"…"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod, claim := podWithClaim("default", "gang-0", "npus", spec(nil, request("npus", ascend, 9)))
			pod.Annotations = tc.annotations
			objs := append(superPodCluster(t), pod, claim)
			if tc.podGroup != nil {
				objs = append(objs, tc.podGroup)
			}
			conn, _ := liveclustertest.Connection("default", objs...)
			target, err := why.ParseTarget("pod/gang-0")
			require.NoError(t, err)
			lines, err := why.Explain(context.Background(), conn, target, why.Options{Registry: registry, Namespace: "default"})
			require.NoError(t, err)
			requireLines(t, tc.want, lines)
			if tc.absent != "" {
				require.NotContains(t, strings.Join(lines, "\n"), tc.absent)
			}
		})
	}
}

// A gang pod whose own claims fit a node still waits for its gang: why
// says so instead of promising the scheduler will place it.
func TestWhySaysAGangPodWhoseClaimsFitAloneWaitsForItsGang(t *testing.T) {
	pod, claim := podWithClaim("default", "gang-0", "npus", spec(nil, request("npus", ascend, 8)))
	pod.Annotations = map[string]string{"kueue.x-k8s.io/podset-required-topology": fabric.LabelSuperPod}
	conn, _ := liveclustertest.Connection("default", append(superPodCluster(t), pod, claim)...)
	target, err := why.ParseTarget("pod/gang-0")
	require.NoError(t, err)
	lines, err := why.Explain(context.Background(), conn, target, why.Options{Registry: registry, Namespace: "default"})
	require.NoError(t, err)
	text := strings.Join(lines, "\n")
	require.Contains(t, text, "but its gang is placed whole, in one accel-dra.dev/superpod: it waits until one domain has room for all its pods")
	require.NotContains(t, text, "the scheduler should place the pod at its next attempt")
}

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
	"testing"

	"github.com/stretchr/testify/require"
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

func TestWhySaysHowManyFreeChipsEachDomainOfAGangHas(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"a Kueue job kept in one super pod",
			map[string]string{"kueue.x-k8s.io/podset-required-topology": fabric.LabelSuperPod},
			[]string{"pod default/gang-0: …",
				"gang kept in one accel-dra.dev/superpod (annotation kueue.x-k8s.io/podset-required-topology); free chips per domain: sp-1: 2 nodes, 16 free chips; sp-2: 1 nodes, 8 free chips",
				"…"}},
		{"a Volcano pod group, kept in the smallest fabric level",
			map[string]string{"scheduling.k8s.io/group-name": "gang-pg"},
			[]string{"pod default/gang-0: …",
				"gang kept in one accel-dra.dev/superpod (Volcano pod group gang-pg, its smallest fabric level); free chips per domain: sp-1: 2 nodes, 16 free chips; sp-2: 1 nodes, 8 free chips",
				"…"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod, claim := podWithClaim("default", "gang-0", "npus", spec(nil, request("npus", ascend, 9)))
			pod.Annotations = tc.annotations
			conn, _ := liveclustertest.Connection("default", append(superPodCluster(t), pod, claim)...)
			target, err := why.ParseTarget("pod/gang-0")
			require.NoError(t, err)
			lines, err := why.Explain(context.Background(), conn, target, why.Options{Registry: registry, Namespace: "default"})
			require.NoError(t, err)
			requireLines(t, tc.want, lines)
		})
	}
}

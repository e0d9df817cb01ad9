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

package why

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/fabric"
)

// Annotations that put a pod in a gang with a topology constraint: Kueue's
// topology-aware scheduling (kueue.x-k8s.io/v1beta2 PodSet annotations,
// whose value is the level's node label) and Volcano's pod group, whose
// network topology keeps it in HyperNodes of the fabric labels.
var kueueTopology = []string{
	"kueue.x-k8s.io/podset-required-topology",
	"kueue.x-k8s.io/podset-preferred-topology",
	"kueue.x-k8s.io/podset-slice-required-topology",
}

const volcanoGroup = "scheduling.k8s.io/group-name"

// gangLevel is the node label of the domain a gang pod must stay in, and
// what says so; "" for a pod in no gang with a topology constraint. A
// Volcano pod group is kept in the smallest fabric level the nodes have.
func (e *explainer) gangLevel(pod *v1.Pod) (level, why string) {
	for _, key := range kueueTopology {
		if v := pod.Annotations[key]; v != "" {
			return v, "annotation " + key
		}
	}
	group := pod.Annotations[volcanoGroup]
	if group == "" {
		return "", ""
	}
	for _, l := range slices.Backward(fabric.Levels) {
		for _, n := range e.snap.Nodes {
			if _, ok := n.Labels[l]; ok {
				return l, "Volcano pod group " + group + ", its smallest fabric level"
			}
		}
	}
	return "", ""
}

// domains says, for a pod of a gang with a topology constraint, how many
// nodes and free chips each domain of its level has: the gang fits only
// where one domain has enough.
func (e *explainer) domains(pod *v1.Pod) error {
	level, why := e.gangLevel(pod)
	if level == "" {
		return nil
	}
	view, err := chipview.Build(e.snap, chipview.Options{Registry: e.opts.Registry})
	if err != nil {
		return err
	}
	free := map[string]int{}
	for _, c := range view.Chips {
		if c.State == chipview.Free && c.Healthy() {
			free[c.Node]++
		}
	}
	nodes, chips := map[string]int{}, map[string]int{}
	for _, n := range e.snap.Nodes {
		if v, ok := n.Labels[level]; ok {
			nodes[v]++
			chips[v] += free[n.Name]
		}
	}
	if len(nodes) == 0 {
		e.say(1, "gang kept in one %s (%s): no node has that label", level, why)
		return nil
	}
	var parts []string
	for _, d := range sortedKeys(boolKeys(nodes)) {
		parts = append(parts, fmt.Sprintf("%s: %d nodes, %d free chips", d, nodes[d], chips[d]))
	}
	e.say(1, "gang kept in one %s (%s); free chips per domain: %s", level, why, strings.Join(parts, "; "))
	return nil
}

func boolKeys(m map[string]int) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

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
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/fabric"
)

// Annotations that put a pod in a gang with a topology constraint: Kueue's
// topology-aware scheduling (kueue.x-k8s.io/v1beta2 PodSet annotations,
// whose value is the level's node label).
var kueueTopology = []string{
	"kueue.x-k8s.io/podset-required-topology",
	"kueue.x-k8s.io/podset-preferred-topology",
	"kueue.x-k8s.io/podset-slice-required-topology",
}

// volcanoGroup is the annotation naming a Volcano job pod's PodGroup,
// whose spec.networkTopology keeps the gang in one HyperNode of a tier.
const volcanoGroup = "scheduling.k8s.io/group-name"

var volcanoPodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// gangLevelOf is the node label of the domain a gang pod must stay in, and
// what says so; "" for a pod in no gang with a topology constraint.
func (e *explainer) gangLevelOf(ctx context.Context, pod *v1.Pod) (level, why string) {
	for _, key := range kueueTopology {
		if v := pod.Annotations[key]; v != "" {
			return v, "annotation " + key
		}
	}
	return e.volcanoLevel(ctx, pod)
}

// volcanoLevel reads the pod's Volcano PodGroup: with a networkTopology,
// its highestTierAllowed counts the fabric levels the nodes have from the
// smallest, as the HyperNodes of `accel-dra topology export --for volcano`
// do (tier 1 the smallest level).
func (e *explainer) volcanoLevel(ctx context.Context, pod *v1.Pod) (level, why string) {
	group := pod.Annotations[volcanoGroup]
	if group == "" || e.conn.Dynamic == nil {
		return "", ""
	}
	pg, err := e.conn.Dynamic.Resource(volcanoPodGroups).Namespace(pod.Namespace).Get(ctx, group, metav1.GetOptions{})
	if err != nil {
		e.say(1, "Volcano pod group %s: cannot read its network topology: %v", group, err)
		return "", ""
	}
	mode, _, _ := unstructured.NestedString(pg.Object, "spec", "networkTopology", "mode")
	if mode == "" {
		return "", ""
	}
	tier, found, _ := unstructured.NestedInt64(pg.Object, "spec", "networkTopology", "highestTierAllowed")
	if !found {
		tier = 1 // Volcano's default
	}
	why = fmt.Sprintf("Volcano pod group %s: networkTopology mode %s, highestTierAllowed %d", group, mode, tier)
	var levels []string // smallest first
	for _, l := range slices.Backward(fabric.Levels) {
		if slices.ContainsFunc(e.snap.Nodes, func(n v1.Node) bool { _, ok := n.Labels[l]; return ok }) {
			levels = append(levels, l)
		}
	}
	if tier < 1 || int(tier) > len(levels) {
		e.say(1, "gang (%s): the nodes have %d fabric levels (%s), so no tier %d", why, len(levels), strings.Join(levels, ", "), tier)
		return "", ""
	}
	return levels[tier-1], why
}

// domains says, for a pod of a gang with a topology constraint, how many
// nodes and free chips each domain of its level has: the gang fits only
// where one domain has enough.
func (e *explainer) domains(ctx context.Context, pod *v1.Pod) error {
	level, why := e.gangLevelOf(ctx, pod)
	if level == "" {
		return nil
	}
	e.gangLevel = level
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

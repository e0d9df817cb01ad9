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

package fabric

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Sources say where a node's fabric labels come from besides its chips.
// Every level comes from the admin: a node has no hardware id of its leaf
// or spine, and a guess would merge or split domains.
type Sources struct {
	// SuperPodScope prefixes super pod values (SuperPodValue).
	SuperPodScope string
	// LeafLabel and SpineLabel are existing node labels whose values name
	// the node's leaf and spine (e.g. volcano.sh/tor); "" for none.
	LeafLabel, SpineLabel string
	// Map is the admin's ConfigMap of node levels (ParseLevelMap); nil
	// for none.
	Map LevelMap
	// Mirror also writes MirrorSuperPod, the chips' super pod id.
	Mirror bool
}

// Want is what a node's fabric labels should be.
type Want struct {
	// Labels are the accel-dra.dev/ labels, every level the sources know.
	Labels map[string]string
	// Mirror is the MirrorSuperPod value to write; "" for none.
	Mirror string
	// Problems say, by label, why a level the sources should know is not
	// in Labels, each naming the node and the field. The caller keeps
	// such a label as it is: bad input must not move a node between
	// domains, and label churn rebuilds the schedulers' topology.
	Problems map[string]string
}

func (w *Want) problem(label, format string, args ...any) {
	if w.Problems == nil {
		w.Problems = map[string]string{}
	}
	w.Problems[label] = fmt.Sprintf(format, args...)
}

// Desired is the fabric labels of node (its name and current labels) with
// chips in super pod superPod ("" for none), or superPodErr where
// SuperPodOf could not say.
func Desired(node string, current map[string]string, superPod string, superPodErr error, s Sources) Want {
	w := Want{Labels: map[string]string{}}
	if superPodErr != nil {
		w.problem(LabelSuperPod, "node %s: %v", node, superPodErr)
	}
	if superPod != "" {
		if v, err := SuperPodValue(s.SuperPodScope, superPod); err != nil {
			w.problem(LabelSuperPod, "node %s: %v", node, err)
		} else {
			w.Labels[LabelSuperPod] = v
		}
		if s.Mirror {
			w.mirror(node, current, superPod)
		}
	}
	w.level(node, LabelLeaf, s.LeafLabel, current, s.Map[node].Leaf)
	w.level(node, LabelSpine, s.SpineLabel, current, s.Map[node].Spine)
	return w
}

// level sets one admin level from the node label named from (if any) and
// the ConfigMap's value mapped (if any); where both say it they must agree.
func (w *Want) level(node, label, from string, current map[string]string, mapped string) {
	byLabel := ""
	if from != "" {
		byLabel = current[from]
	}
	switch {
	case byLabel != "" && mapped != "" && byLabel != mapped:
		w.problem(label, "node %s: field %s: node label %s says %q, the ConfigMap says %q", node, LevelName(label), from, byLabel, mapped)
		return
	case byLabel == "" && mapped == "":
		return
	}
	v := byLabel
	if v == "" {
		v = mapped
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		w.problem(label, "node %s: field %s: %q is not a valid label value: %s", node, LevelName(label), v, strings.Join(errs, "; "))
		return
	}
	w.Labels[label] = v
}

// mirror sets the mirror label where the node has none or the same.
func (w *Want) mirror(node string, current map[string]string, superPod string) {
	if errs := validation.IsValidLabelValue(superPod); len(errs) > 0 {
		w.problem(MirrorSuperPod, "node %s: label %s: super pod %q is not a valid label value: %s", node, MirrorSuperPod, superPod, strings.Join(errs, "; "))
		return
	}
	if have, ok := current[MirrorSuperPod]; ok && have != superPod {
		w.problem(MirrorSuperPod, "node %s: label %s is %q, the chips say %q; left as it is", node, MirrorSuperPod, have, superPod)
		return
	}
	w.Mirror = superPod
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

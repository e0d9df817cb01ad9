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

package chipview

import (
	"cmp"
	"slices"
)

// ModelSummary counts the chips of one model, cluster-wide or on one node:
// the capacity / allocated table of `kubectl describe node` under the
// device plugins.
type ModelSummary struct {
	// Node is empty in the cluster-wide summary.
	Node string `json:"node,omitempty"`
	// SuperPod groups the chips of a super pod (accel-dra.dev/superPod);
	// empty for chips in none.
	SuperPod string `json:"superPod,omitempty"`
	Model    string `json:"model"`
	Total    int    `json:"total"`
	// Allocated chips are held, whole or in part (a partition, a share).
	Allocated int `json:"allocated"`
	// Free chips are held by no claim and not tainted: a new claim can
	// get them.
	Free int `json:"free"`
	// Unhealthy chips are tainted, held or not.
	Unhealthy int `json:"unhealthy"`
}

// Summarize counts chips per super pod and model, and per node too when
// perNode, ordered by node, super pod and model.
func Summarize(chips []Chip, perNode bool) []ModelSummary {
	type key struct{ node, superPod, model string }
	byKey := map[key]*ModelSummary{}
	for _, c := range chips {
		k := key{superPod: c.SuperPod, model: c.Model}
		if perNode {
			k.node = c.Node
		}
		s := byKey[k]
		if s == nil {
			s = &ModelSummary{Node: k.node, SuperPod: k.superPod, Model: k.model}
			byKey[k] = s
		}
		s.Total++
		switch {
		case c.State != Free:
			s.Allocated++
		case c.Healthy():
			s.Free++
		}
		if !c.Healthy() {
			s.Unhealthy++
		}
	}
	out := make([]ModelSummary, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ModelSummary) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.SuperPod, b.SuperPod), cmp.Compare(a.Model, b.Model))
	})
	return out
}

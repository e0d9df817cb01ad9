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

package discovery

import (
	"fmt"
	"sort"
)

// LinkGroups names the connected components of a node's chip links. It
// returns prefix-K (e.g. "hccs-0") for the index of every chip in a
// component of two or more chips, K counting the components from 0 in the
// order of their lowest chip index; a chip linked to no other is absent.
//
// indices are the chips' indices, each once, in any order. linked is asked
// about every ordered pair of distinct indices, and one direction suffices
// to join two chips.
func LinkGroups(indices []int, linked func(a, b int) bool, prefix string) map[int]string {
	parent := make(map[int]int, len(indices))
	var find func(int) int
	find = func(x int) int {
		if parent[x] != x {
			parent[x] = find(parent[x])
		}
		return parent[x]
	}
	for _, i := range indices {
		parent[i] = i
	}
	for _, a := range indices {
		for _, b := range indices {
			if a != b && linked(a, b) {
				ra, rb := find(a), find(b)
				if ra != rb {
					parent[max(ra, rb)] = min(ra, rb) // the root is the lowest index
				}
			}
		}
	}
	members := map[int][]int{}
	for _, i := range indices {
		r := find(i)
		members[r] = append(members[r], i)
	}
	var roots []int
	for r, m := range members {
		if len(m) >= 2 {
			roots = append(roots, r)
		}
	}
	sort.Ints(roots)
	out := map[int]string{}
	for k, r := range roots {
		for _, i := range members[r] {
			out[i] = fmt.Sprintf("%s-%d", prefix, k)
		}
	}
	return out
}

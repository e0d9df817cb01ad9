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
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLinkGroupsNumbersComponentsByTheirLowestIndex(t *testing.T) {
	type pair [2]int
	for _, tc := range []struct {
		name    string
		indices []int
		links   []pair // one direction each, unless a case says otherwise
		want    map[int]string
	}{
		{name: "no chips", want: map[int]string{}},
		{name: "chips without links stay out", indices: []int{0, 1, 2}, want: map[int]string{}},
		{name: "a chip linked only to itself stays out", indices: []int{0, 1}, links: []pair{{0, 0}, {1, 1}}, want: map[int]string{}},
		{
			name: "two rings of four", indices: []int{0, 1, 2, 3, 4, 5, 6, 7},
			links: []pair{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6}, {6, 7}, {7, 4}},
			want:  map[int]string{0: "hccs-0", 1: "hccs-0", 2: "hccs-0", 3: "hccs-0", 4: "hccs-1", 5: "hccs-1", 6: "hccs-1", 7: "hccs-1"},
		},
		{
			name: "a link in one direction joins both chips", indices: []int{0, 1, 2, 3},
			links: []pair{{3, 1}},
			want:  map[int]string{1: "hccs-0", 3: "hccs-0"},
		},
		{
			name: "components are numbered by their lowest index, not the order of the indices",
			// 7-2 is found first and 5-6-1 joins through its highest
			// index first, yet the group holding 1 is numbered 0.
			indices: []int{7, 6, 5, 4, 3, 2, 1, 0},
			links:   []pair{{7, 2}, {6, 5}, {6, 1}},
			want:    map[int]string{1: "hccs-0", 5: "hccs-0", 6: "hccs-0", 2: "hccs-1", 7: "hccs-1"},
		},
		{
			name: "a chain joins chips that are not linked to each other", indices: []int{10, 11, 12, 13},
			links: []pair{{13, 12}, {12, 11}, {11, 10}},
			want:  map[int]string{10: "hccs-0", 11: "hccs-0", 12: "hccs-0", 13: "hccs-0"},
		},
		{
			name: "links to chips that are not listed are ignored", indices: []int{0, 1},
			links: []pair{{0, 9}, {9, 1}},
			want:  map[int]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[pair]bool{}
			for _, p := range tc.links {
				set[p] = true
			}
			got := LinkGroups(tc.indices, func(a, b int) bool {
				require.NotEqual(t, a, b, "linked is asked about distinct chips only")
				return set[pair{a, b}]
			}, "hccs")
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLinkGroupsUsesThePrefix(t *testing.T) {
	all := func(int, int) bool { return true }
	require.Equal(t, map[int]string{0: "mlulink-0", 1: "mlulink-0"}, LinkGroups([]int{0, 1}, all, "mlulink"))
}

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

package scale

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseOrder(t *testing.T) {
	for _, tc := range []struct {
		order string
		want  []int
		err   string
	}{
		{order: "", want: []int{0, 1, 2, 3}},
		{order: "1,3,1, 3", want: []int{1, 3, 1, 3}},
		{order: "4", err: `-order: "4" is not a side number (0 to 3)`},
		{order: "1,,2", err: `-order: "" is not a side number (0 to 3)`},
		{order: "-1", err: `-order: "-1" is not a side number`},
	} {
		t.Run(tc.order, func(t *testing.T) {
			got, err := ParseOrder(tc.order, 4)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNearestRunComparesWithTheAdjacentRun(t *testing.T) {
	runs := []int{0, 1, 11, 1, 11, -1, 11}
	for _, tc := range []struct {
		name      string
		index, at int
		want      int
	}{
		{"a tie takes the earlier run", 1, 2, 1},
		{"the later run when it is closer", 1, 4, 3},
		{"the closest of several runs", 1, 6, 3},
		{"the side itself", 11, 4, 4},
		{"no run of that side", 9, 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, NearestRun(runs, tc.index, tc.at))
		})
	}
}

func TestMedian(t *testing.T) {
	require.InDelta(t, 2.0, Median([]float64{1, 2, 5}), 1e-9)
	require.InDelta(t, 1.5, Median([]float64{1, 2}), 1e-9)
}

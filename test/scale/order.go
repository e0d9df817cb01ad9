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
	"fmt"
	"strconv"
	"strings"
)

// ParseOrder reads bench-scale's -order: the numbers of the sides to
// measure (their # in the table), in the order to measure them, repeats
// allowed. Empty is every side once, in the table's order.
func ParseOrder(order string, sides int) ([]int, error) {
	if order == "" {
		all := make([]int, sides)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var runs []int
	for _, f := range strings.Split(order, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= sides {
			return nil, fmt.Errorf("-order: %q is not a side number (0 to %d)", f, sides-1)
		}
		runs = append(runs, i)
	}
	return runs, nil
}

// NearestRun is the position in runs (each run's side number, -1 for a
// run to leave out) of the run of side index closest to position at, the
// earlier one on a tie, or -1 if there is none. A side measured several
// times is compared with the run of its reference next to it, so that
// the machine's drift between distant runs does not enter the ratio.
func NearestRun(runs []int, index, at int) int {
	best := -1
	for j, i := range runs {
		if i != index {
			continue
		}
		if best < 0 || distance(j, at) < distance(best, at) {
			best = j
		}
	}
	return best
}

func distance(a, b int) int { return max(a-b, b-a) }

// Median of sorted values (not empty).
func Median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

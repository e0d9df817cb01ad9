//go:build e2e

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

package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accel-dra/accel-dra/test/scale"
)

// nearestRun is scale.NearestRun over rs, failed runs left out.
func nearestRun(rs []result, index, at int) int {
	indices := make([]int, len(rs))
	for j, r := range rs {
		indices[j] = r.index
		if r.failed {
			indices[j] = -1
		}
	}
	return scale.NearestRun(indices, index, at)
}

// cpuPerPod is the scheduler's CPU per bound pod of r, in milliseconds.
func cpuPerPod(r result) float64 {
	return float64(r.schedCPU.Microseconds()) / 1000 / float64(max(r.sched.Bound, 1))
}

// printRepeats prints, for every side measured more than once, each
// run's scheduler CPU per pod and pods/s against the run of its
// reference next to it, and the median and range of those ratios: the
// numbers to quote when the effect is smaller than the drift of the
// whole run.
func printRepeats(rs []result) {
	runs := map[int][]int{}
	for j, r := range rs {
		if !r.failed && r.ref > 0 {
			runs[r.index] = append(runs[r.index], j)
		}
	}
	var header bool
	for _, index := range slices.Sorted(maps.Keys(runs)) {
		var cpu, rate []float64
		for _, j := range runs[index] {
			if k := nearestRun(rs, rs[j].ref, j); k >= 0 && rs[k].sched.PodsPerSecond() > 0 {
				cpu = append(cpu, cpuPerPod(rs[j])/cpuPerPod(rs[k]))
				rate = append(rate, rs[j].sched.PodsPerSecond()/rs[k].sched.PodsPerSecond())
			}
		}
		if len(cpu) < 2 {
			continue
		}
		if !header {
			fmt.Println("\n| side | vs side | runs | scheduler CPU/pod ratio to the adjacent run | median | range | pods/s ratio to the adjacent run | median | range |")
			fmt.Println("|---|---|---|---|---|---|---|---|---|")
			header = true
		}
		fmt.Printf("| %d | %d | %d | %s | %s |\n", index, rs[runs[index][0]].ref, len(cpu), ratios(cpu), ratios(rate))
	}
}

// ratios is the table cells of a list of ratios: each, the median in
// bold, the range.
func ratios(xs []float64) string {
	each := make([]string, len(xs))
	for i, x := range xs {
		each[i] = fmt.Sprintf("%.3f", x)
	}
	sorted := slices.Sorted(slices.Values(xs))
	return fmt.Sprintf("%s | **%.3f×** | %.3f–%.3f", strings.Join(each, ", "), scale.Median(sorted), sorted[0], sorted[len(sorted)-1])
}

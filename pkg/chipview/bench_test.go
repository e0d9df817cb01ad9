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

package chipview_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
)

// scaleSnapshot is the state of the 1000-node scale cluster
// (test/scale: Atlas 800T A2 and MLU370-X8 nodes alternating, every chip
// Whole) with half of each node's chips held, each by a claim of its own
// reserved for one pod and prepared.
func scaleSnapshot(b *testing.B, nodes int) *livecluster.Snapshot {
	b.Helper()
	profiles := []struct{ profile, driver string }{{"atlas-800t-a2", ascend}, {"mlu370-x8", cambricon}}
	snap := &livecluster.Snapshot{}
	for i := range nodes {
		p := profiles[i%len(profiles)]
		node := fmt.Sprintf("scale-%04d", i)
		slices := nodeSlices(b, node, p.profile, "")
		snap.Slices = append(snap.Slices, slices...)
		for _, s := range slices {
			for j, d := range s.Spec.Devices {
				if j%2 == 0 {
					snap.Claims = append(snap.Claims, claim("bench", node+"-"+d.Name,
						[]resourceapi.DeviceRequestAllocationResult{result(p.driver, node, d.Name)}, reservedFor(node+"-"+d.Name), prepared))
				}
			}
		}
	}
	return snap
}

// BenchmarkChipsView1000Nodes is the computation of `accel-dra chips`
// and `--summary` over the 1000-node scale cluster, after its lists
// (docs/benchmarks.md).
func BenchmarkChipsView1000Nodes(b *testing.B) {
	snap := scaleSnapshot(b, 1000)
	b.ResetTimer()
	b.ReportAllocs()
	for b.Loop() {
		v, err := chipview.Build(snap, chipview.Options{Registry: registry})
		require.NoError(b, err)
		require.Len(b, v.Chips, 8000)
		chipview.Summarize(v.Chips, true)
	}
}

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

package why_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
	"github.com/accel-dra/accel-dra/pkg/why"
)

// BenchmarkWhy1000Nodes explains a pod that fits nowhere on the 1000-node
// scale cluster (test/scale: Atlas 800T A2 and MLU370-X8 nodes
// alternating, every chip Whole) with half of each node's chips held, each
// by a claim of its own: nine chips in one link group, which no node has.
// The allocator runs on every node, then on each holder's node for the 64
// smallest holders. The fake clientset stands in for the API server, so
// this is the CPU of the answer; requests/op counts what it asks the
// server (docs/benchmarks.md).
func BenchmarkWhy1000Nodes(b *testing.B) {
	objs := chartClasses(b)
	for i := range 1000 {
		prof := []string{"atlas-800t-a2", "mlu370-x8"}[i%2]
		driver := []string{ascend, cambricon}[i%2]
		name := fmt.Sprintf("scale-%04d", i)
		n, slices := node(b, name, prof)
		objs = append(objs, n)
		objs = append(objs, slices...)
		for j := 0; j < 8; j += 2 {
			pod, claim := podWithClaim("bench", fmt.Sprintf("%s-holder-%d", name, j), "one", spec(nil, request("chip", driver, 1)))
			pod.Spec.NodeName, pod.Status.Phase = name, v1.PodRunning
			allocate(claim, name, driver, "chip", []string{devName(driver, j)}, pod.Name)
			objs = append(objs, claim)
		}
	}
	pod, claim := podWithClaim("default", "nine", "npus", spec(sameLinkGroup, request("npus", "accelerator.accel-dra.dev", 9)))
	objs = append(objs, pod, claim)
	conn, client := liveclustertest.Connection("default", objs...)
	b.ResetTimer()
	b.ReportAllocs()
	for b.Loop() {
		client.ClearActions()
		lines, err := why.Explain(context.Background(), conn, why.Target{Kind: "pod", Name: "nine"}, why.Options{Registry: registry, Namespace: "default"})
		require.NoError(b, err)
		require.Contains(b, lines[len(lines)-1], "no single claim's going away makes room")
		b.ReportMetric(float64(len(client.Actions())), "requests/op")
	}
}

func devName(driver string, i int) string {
	if driver == ascend {
		return fmt.Sprintf("npu-%d", i)
	}
	return fmt.Sprintf("mlu-%d", i)
}

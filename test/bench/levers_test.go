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

package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/test/scale"
)

// leverCluster is the bench-scale cluster in process: nodes of
// scale.OurProfiles alternating, chips Whole, every device without the
// attributes omit.
func leverCluster(tb testing.TB, nodes int, omit []resourceapi.QualifiedName) cluster {
	tb.Helper()
	return wholeCluster(tb, nodes, scale.OurProfiles, omit)
}

// wholeCluster is nodes nodes, node i of hardware profile
// profiles[i % len], chips Whole, every device without the attributes
// omit.
func wholeCluster(tb testing.TB, nodes int, profiles []string, omit []resourceapi.QualifiedName) cluster {
	tb.Helper()
	policy, err := partitions.ParsePolicy(registry, string(partitions.ModeWhole))
	require.NoError(tb, err)
	var c cluster
	for i := range nodes {
		p, err := profile.Load(registry, profiles[i%len(profiles)])
		require.NoError(tb, err)
		name := fmt.Sprintf("node-%04d", i)
		inv, err := profilenode.New(registry, name, p).Discover(context.Background())
		require.NoError(tb, err)
		c.nodes = append(c.nodes, benchNode(name))
		c.slices = append(c.slices, resourceslices.SlicesFor(registry, name, inv, resourceslices.Options{Policy: policy, OmitAttributes: omit})...)
	}
	return c
}

// benchNode is the Node object the allocator filters named name.
func benchNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// leverAttributes are the attribute sets measured: all, each candidate
// of scale.LeanOmit left out alone, and all of them left out.
func leverAttributes() []struct {
	name string
	omit []resourceapi.QualifiedName
} {
	out := []struct {
		name string
		omit []resourceapi.QualifiedName
	}{{"all", nil}}
	for _, k := range scale.LeanOmit {
		out = append(out, struct {
			name string
			omit []resourceapi.QualifiedName
		}{"without-" + string(k), []resourceapi.QualifiedName{k}})
	}
	return append(out, struct {
		name string
		omit []resourceapi.QualifiedName
	}{"lean", scale.LeanOmit}, struct {
		name string
		omit []resourceapi.QualifiedName
	}{"without-unused", scale.UnusedOmit})
}

// leverForms are the claim forms of bench-scale's lever 1, each the
// same three shapes: the demo's (generic class + model selector), per-model
// classes without selectors, generic classes without the type clause.
var leverForms = map[string][]string{
	"generic":     scale.OurTemplates,
	"per-model":   scale.PerModelTemplates,
	"driver-only": scale.DriverOnlyTemplates,
}

func loadLeverClaims(tb testing.TB) (*simulate.Inputs, map[string]*resourceapi.ResourceClaim) {
	tb.Helper()
	return loadInputs(tb, "../../deployments/helm/accel-dra/deviceclasses", "testdata/claims.yaml", "../scale/testdata/levers.yaml")
}

// BenchmarkLevers is bench-scale's Whole levers 1 and 2 in process, where
// heap allocations are exact on a loaded machine: the three demo shapes
// (one op allocates each once on every node, as the scheduler's Filter
// does) over 1000 nodes of the bench-scale cluster, per claim form and
// per attribute set. allocs/op and ns/op compare across sub-benchmarks.
func BenchmarkLevers(b *testing.B) {
	in, claims := loadLeverClaims(b)
	for _, attrs := range leverAttributes() {
		c := leverCluster(b, 1000, attrs.omit)
		for _, form := range []string{"generic", "per-model", "driver-only"} {
			if attrs.omit != nil && form != "generic" {
				continue
			}
			b.Run(fmt.Sprintf("attributes=%s/form=%s", attrs.name, form), func(b *testing.B) {
				cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
				b.ReportAllocs()
				fits := 0
				for b.Loop() {
					fits = 0
					for _, name := range leverForms[form] {
						fits += allocateOnEveryNode(b, c, in, cache, claims[name])
					}
				}
				b.ReportMetric(float64(fits), "nodes-fit")
			})
		}
	}
}

// TestLeversSetup runs the levers' claims once on four nodes: every form
// fits on the same nodes (the Ascend nodes for a and b, the Cambricon ones
// for c) with every attribute set, so the sub-benchmarks do the same work.
func TestLeversSetup(t *testing.T) {
	in, claims := loadLeverClaims(t)
	for _, attrs := range leverAttributes() {
		c := leverCluster(t, 4, attrs.omit)
		for form, templates := range leverForms {
			cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
			for _, name := range templates {
				require.Contains(t, claims, name)
				require.Equal(t, 2, allocateOnEveryNode(t, c, in, cache, claims[name]), "%s (%s) with attributes %s: one vendor's half of 4 nodes", name, form, attrs.name)
			}
		}
		for _, s := range c.slices {
			for _, d := range s.Spec.Devices {
				for _, k := range attrs.omit {
					require.NotContains(t, d.Attributes, k)
				}
				require.Contains(t, d.Attributes, names.AttrModel)
			}
		}
	}
}

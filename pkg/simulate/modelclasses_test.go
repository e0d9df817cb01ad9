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

package simulate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/cel"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

const chartClasses = "../../deployments/helm/accel-dra/deviceclasses"

// modelClass is a generated per-model or per-shape class with the
// modelDeviceClasses.extra entry its file names (vendor, model, template).
type modelClass struct {
	name                    string
	vendor, model, template string
}

func generatedClasses(t *testing.T) []modelClass {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartClasses, "models", "*", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "make generate")
	var out []modelClass
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, after, ok := strings.Cut(string(data), "modelDeviceClasses.extra: [")
		require.True(t, ok, "%s names its values entry", f)
		line, _, _ := strings.Cut(after, "\n")
		var e map[string]string
		require.NoError(t, yaml.Unmarshal([]byte(strings.TrimSuffix(line, "]")), &e), f)
		out = append(out, modelClass{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), vendor: e["vendor"], model: e["model"], template: e["template"]})
	}
	return out
}

// selects says whether a device is one the class means: the model's whole
// chip, or a partition of the model with the template (an sMLU profile by
// its quota, the rest of its name being the chip's memory).
func (c modelClass) selects(driver string, d resourceapi.Device) bool {
	str := func(a resourceapi.DeviceAttribute) string {
		if a.StringValue == nil {
			return ""
		}
		return *a.StringValue
	}
	if driver != c.vendor+".accel-dra.dev" || str(d.Attributes[names.AttrModel]) != c.model {
		return false
	}
	typ, tpl := str(d.Attributes[names.AttrType]), str(d.Attributes["partitionTemplate"])
	switch {
	case c.template == "":
		return typ == names.TypeChip
	case c.vendor == "cambricon":
		return typ == cambricon.PartitionType && strings.HasPrefix(tpl, c.template+".")
	default:
		return typ == ascend.PartitionType && tpl == c.template
	}
}

// partitionedDemo is the demo cluster as `simulate --chip-modes
// Partitioned` builds it: every chip whole and, where it has templates,
// its partitions.
func partitionedDemo(t *testing.T) *simulate.Cluster {
	data, err := os.ReadFile("../../demo/cluster.yaml")
	require.NoError(t, err)
	c, err := v1alpha1.ParseSimulatedCluster("cluster.yaml", data)
	require.NoError(t, err)
	cl, err := simulate.BuildCluster(context.Background(), c, simulate.ClusterOptions{Registry: registry, Policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned}})
	require.NoError(t, err)
	return cl
}

func plainClaim(name, class string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("sim-default-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// Each generated class selects exactly the devices it means, on every node
// of the demo cluster with partitions published: its selector evaluated by
// the upstream CEL code against every device.
func TestEveryModelClassSelectsExactlyItsModelOrShape(t *testing.T) {
	in, err := simulate.Load([]string{chartClasses})
	require.NoError(t, err)
	cluster := partitionedDemo(t)
	cache := cel.NewCache(200, cel.Features{EnableConsumableCapacity: true})
	for _, c := range generatedClasses(t) {
		t.Run(c.name, func(t *testing.T) {
			class, ok := in.Classes[c.name]
			require.True(t, ok, "simulate -f %s loads %s", chartClasses, c.name)
			prog := cache.GetOrCompile(class.Spec.Selectors[0].CEL.Expression)
			require.Nil(t, prog.Error)
			for _, s := range cluster.Slices {
				for _, d := range s.Spec.Devices {
					match, _, err := prog.DeviceMatches(context.Background(), cel.Device{Driver: s.Spec.Driver, Attributes: d.Attributes, Capacity: d.Capacity})
					require.NoError(t, err)
					require.Equal(t, c.selects(s.Spec.Driver, d), match, "device %s/%s", s.Spec.Pool.Name, d.Name)
				}
			}
		})
	}
}

// onDemo are the generated classes whose chips or partitions the demo
// cluster has (demo/cluster.yaml: 910A, 910B3, 310P3, MLU370-X8, MLU590,
// MLU270-S4; MLU270 has no sMLU).
var onDemo = []string{
	"ascend310p3-vir01.accel-dra.dev", "ascend310p3-vir02-1c.accel-dra.dev", "ascend310p3-vir02.accel-dra.dev",
	"ascend310p3-vir04-3c-ndvpp.accel-dra.dev", "ascend310p3-vir04-3c.accel-dra.dev", "ascend310p3-vir04-4c-dvpp.accel-dra.dev",
	"ascend310p3-vir04.accel-dra.dev", "ascend310p3.accel-dra.dev",
	"ascend910a-vir02.accel-dra.dev", "ascend910a-vir04.accel-dra.dev", "ascend910a-vir08.accel-dra.dev", "ascend910a-vir16.accel-dra.dev",
	"ascend910a.accel-dra.dev",
	"ascend910b3-vir05-1c-16g.accel-dra.dev", "ascend910b3-vir10-3c-32g.accel-dra.dev", "ascend910b3.accel-dra.dev",
	"mlu270-s4.accel-dra.dev",
	"mlu370-x8-smlu-25p.accel-dra.dev", "mlu370-x8-smlu-50p.accel-dra.dev", "mlu370-x8.accel-dra.dev",
	"mlu590-smlu-25p.accel-dra.dev", "mlu590-smlu-50p.accel-dra.dev", "mlu590.accel-dra.dev",
}

// A plain claim (one device of the class, no selector: what a quota
// engine admits) of every generated class is allocated on the demo
// cluster with partitions published, to a device of the class's model,
// where the cluster has that model; elsewhere it is not allocated.
func TestAPlainClaimOfEveryModelClassIsAllocatedWhereTheClusterHasIt(t *testing.T) {
	in, err := simulate.Load([]string{chartClasses})
	require.NoError(t, err)
	cluster := partitionedDemo(t)
	var allocated []string
	for _, c := range generatedClasses(t) {
		t.Run(c.name, func(t *testing.T) {
			claim := plainClaim("one", c.name)
			res, err := simulate.Run(context.Background(), cluster, &simulate.Inputs{Classes: in.Classes, Claims: []*resourceapi.ResourceClaim{claim},
				Sources: map[*resourceapi.ResourceClaim]string{claim: "test"}}, simulate.Options{})
			require.NoError(t, err)
			r := res.Claims[0]
			if !r.Allocated {
				require.Contains(t, r.Reason, fmt.Sprintf("class %s matches 0 devices", c.name))
				return
			}
			allocated = append(allocated, c.name)
			require.Len(t, r.Devices, 1)
			require.Equal(t, c.model, r.Devices[0].Attributes[string(names.AttrModel)])
			require.Equal(t, c.vendor+".accel-dra.dev", r.Devices[0].Driver)
		})
	}
	sort.Strings(allocated)
	require.Equal(t, onDemo, allocated)
}

// Claims of ascend910b3.accel-dra.dev take the demo cluster's 910B3 chips
// (8 on a2-0, 4 on mixed) and nothing else: not a 910A, not an MLU, and
// the thirteenth is not allocated.
func TestAscend910B3ClaimsNeverGetAnotherModel(t *testing.T) {
	in, err := simulate.Load([]string{chartClasses})
	require.NoError(t, err)
	claims := &simulate.Inputs{Classes: in.Classes, Sources: map[*resourceapi.ResourceClaim]string{}}
	for i := range 13 {
		c := plainClaim(fmt.Sprintf("b3-%d", i), "ascend910b3.accel-dra.dev")
		claims.Claims = append(claims.Claims, c)
		claims.Sources[c] = "test"
	}
	res, err := simulate.Run(context.Background(), partitionedDemo(t), claims, simulate.Options{})
	require.NoError(t, err)
	nodes := map[string]int{}
	for i, r := range res.Claims {
		if i == 12 {
			require.False(t, r.Allocated, "a thirteenth 910B3 chip: %+v", r.Devices)
			continue
		}
		require.True(t, r.Allocated, "%s: %s", r.Name, r.Reason)
		require.Equal(t, "ascend.accel-dra.dev", r.Devices[0].Driver)
		require.Equal(t, "Ascend910B3", r.Devices[0].Attributes[string(names.AttrModel)])
		require.Regexp(t, `^npu-\d+$`, r.Devices[0].Device, "a whole chip, not a vNPU")
		nodes[r.Node]++
	}
	require.Equal(t, map[string]int{"a2-0": 8, "mixed": 4}, nodes)
}

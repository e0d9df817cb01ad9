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

package allocation

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/accel-dra/accel-dra/pkg/profile"
)

// matching returns "<node>/<device>" of every whole chip, across one node
// per bundled profile, that the expression selects: the docs/architecture.md examples
// are written for the whole-chip DeviceClasses, which select type "chip".
func matching(t *testing.T, expr string) []string {
	return matchingDevices(t, expr, true)
}

// matchingDevices is matching over partitions too unless chipsOnly, every
// chip that has partitions published Partitioned.
func matchingDevices(t *testing.T, expr string, chipsOnly bool) []string {
	t.Helper()
	c := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}).GetOrCompile(expr)
	require.Nil(t, c.Error, "compiling %s", expr)
	var out []string
	for _, p := range profile.Names() {
		for _, s := range slicesWith(t, p, p, "Partitioned") {
			for _, d := range s.Spec.Devices {
				if chipsOnly && *d.Attributes["accel-dra.dev"+"/type"].StringValue != "chip" {
					continue
				}
				ok, _, err := c.DeviceMatches(context.Background(), cel.Device{Driver: s.Spec.Driver, Attributes: d.Attributes, Capacity: d.Capacity})
				require.NoError(t, err)
				if ok {
					out = append(out, p+"/"+d.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func devices(node, prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, node+"/"+prefix+"-"+strconv.Itoa(i))
	}
	return out
}

func TestDesignCELExamplesSelectExactlyTheExpectedChips(t *testing.T) {
	all := matching(t, `true`)
	require.Len(t, all, 8+8+4+8+16+8+8+4+8)
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{"model equals Ascend910B3", `device.attributes["accel-dra.dev"].model == "Ascend910B3"`,
			append(devices("atlas-800t-a2", "npu", 8), devices("mixed-910b-mlu370", "npu", 4)...)},
		{"memory at least 32Gi", `device.capacity["accel-dra.dev"].memory.compareTo(quantity("32Gi")) >= 0`,
			slices.Concat(devices("atlas-300i-duo", "npu", 4), devices("atlas-800-910a", "npu", 8), devices("atlas-800t-a2", "npu", 8),
				devices("atlas-800t-a3", "npu", 16), devices("atlas-850", "npu", 8), devices("mixed-910b-mlu370", "npu", 4),
				devices("mlu590", "mlu", 8))},
		{"vendor in huawei or cambricon", `device.attributes["accel-dra.dev"].vendor in ["huawei", "cambricon"]`, all},
		{"PCIe-only MLU270", `device.attributes["accel-dra.dev"].linkType == "pcie" && device.attributes["accel-dra.dev"].family == "mlu"`,
			devices("mlu270", "mlu", 4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sort.Strings(tc.want)
			require.Equal(t, tc.want, matching(t, tc.expr))
		})
	}
}

func TestPartitionsAnswerTheSameCELAsTheirChips(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want int
	}{
		{"every vNPU of a 910B3", `device.attributes["accel-dra.dev"].model == "Ascend910B3" && device.attributes["accel-dra.dev"].type == "vnpu"`,
			(8 + 4) * 6},
		{"vNPUs with at least 32Gi", `device.attributes["accel-dra.dev"].type == "vnpu" && device.capacity["accel-dra.dev"].memory.compareTo(quantity("32Gi")) >= 0`,
			(8 + 4) * 2},
		{"quarter sMLU instances in an MLU-Link group", `device.attributes["accel-dra.dev"].type == "smlu" && device.attributes["accel-dra.dev"].linkType == "mlulink" && device.attributes["cambricon.accel-dra.dev"].partitionTemplate.startsWith("25p.")`,
			(8 + 8 + 4) * 4},
		{"the partitions of one chip by parent", `device.attributes["accel-dra.dev"].type == "vnpu" && device.attributes["ascend.accel-dra.dev"].parentDevice == "npu-3" && device.attributes["accel-dra.dev"].model == "Ascend310P3"`,
			7 + 3 + 4 + 1 + 2 + 2 + 1},
		{"no partition on PCIe-only MLU270", `device.attributes["accel-dra.dev"].model.startsWith("MLU270") && device.attributes["accel-dra.dev"].type != "chip"`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, matchingDevices(t, tc.expr, false), tc.want)
		})
	}
}

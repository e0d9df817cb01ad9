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
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

func TestNodeGroupsCarryTheirSuperPodAndFabricLevels(t *testing.T) {
	cl, err := clusterOf(t, `nodes:
- {name: sp1, profile: atlas-800t-a2, count: 2, superPod: "1", spine: spine-1}
- {name: sp2, profile: atlas-800t-a2, superPod: "2", spine: spine-1}
- {name: roce, profile: atlas-800t-a2, leaf: tor-a, spine: spine-1}
`, simulate.ClusterOptions{})
	require.NoError(t, err)
	labels := map[string]map[string]string{}
	for _, n := range cl.Nodes {
		labels[n.Name] = n.Labels
	}
	require.Equal(t, map[string]map[string]string{
		"sp1-0": {"kubernetes.io/hostname": "sp1-0", fabric.LabelSuperPod: "sp-1", fabric.LabelSpine: "spine-1"},
		"sp1-1": {"kubernetes.io/hostname": "sp1-1", fabric.LabelSuperPod: "sp-1", fabric.LabelSpine: "spine-1"},
		"sp2":   {"kubernetes.io/hostname": "sp2", fabric.LabelSuperPod: "sp-2", fabric.LabelSpine: "spine-1"},
		"roce":  {"kubernetes.io/hostname": "roce", fabric.LabelLeaf: "tor-a", fabric.LabelSpine: "spine-1"},
	}, labels)

	// Each node of a super pod is its next server: npu-3 of sp1-1 is die 1
	// of chip 1 on server 1, SDID 1<<22 | 1<<18 | 1<<16 | 3.
	type place struct {
		superPod          string
		serverIndex, sdid int64
	}
	got := map[string]place{}
	for _, s := range cl.Slices {
		for _, d := range s.Spec.Devices {
			if d.Name != "npu-3" {
				continue
			}
			p := place{}
			if v := d.Attributes[fabric.AttrSuperPod].StringValue; v != nil {
				p.superPod = *v
			}
			if v := d.Attributes[fabric.AttrServerIndex].IntValue; v != nil {
				p.serverIndex = *v
			}
			if v := d.Attributes[fabric.AttrSuperDeviceID].IntValue; v != nil {
				p.sdid = *v
			}
			require.Equal(t, names.TypeChip, *d.Attributes[names.AttrType].StringValue)
			got[*s.Spec.NodeName] = p
		}
	}
	require.Equal(t, map[string]place{
		"sp1-0": {"1", 0, 0<<22 | 1<<18 | 1<<16 | 3},
		"sp1-1": {"1", 1, 1<<22 | 1<<18 | 1<<16 | 3},
		"sp2":   {"2", 0, 0<<22 | 1<<18 | 1<<16 | 3},
		"roce":  {},
	}, got)
}

// A partition of a chip in a super pod is published with its chip's
// place, as the node agent publishes it (pkg/resourceslices copies the
// chip's attributes to its partitions); a chip of a node in no super pod
// publishes no fabric attribute, nor do its partitions.
func TestPartitionsCarryTheirChipsPlaceInTheSuperPod(t *testing.T) {
	cl, err := clusterOf(t, `nodes:
- {name: sp, profile: mlu370-x8, superPod: "4", chipModes: Partitioned}
- {name: none, profile: mlu370-x8, chipModes: Partitioned}
`, simulate.ClusterOptions{})
	require.NoError(t, err)
	fabricOf := func(d resourceapi.Device) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		out := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		for _, k := range []resourceapi.QualifiedName{fabric.AttrSuperPod, fabric.AttrServerIndex, fabric.AttrSuperDeviceID} {
			if v, ok := d.Attributes[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	chips := map[string]map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	partitionsSeen := 0
	for _, s := range cl.Slices {
		for _, d := range s.Spec.Devices {
			if *d.Attributes[names.AttrType].StringValue == names.TypeChip {
				chips[*s.Spec.NodeName+"/"+d.Name] = fabricOf(d)
			}
		}
	}
	require.Equal(t, map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{fabric.AttrSuperPod: {StringValue: ptr.To("4")},
		fabric.AttrServerIndex: {IntValue: ptr.To[int64](0)}, fabric.AttrSuperDeviceID: {IntValue: ptr.To[int64](1<<18 | 1<<16 | 3)}}, chips["sp/mlu-3"])
	for _, s := range cl.Slices {
		for _, d := range s.Spec.Devices {
			parent := d.Attributes[resourceslices.AttrParentDevice].StringValue
			if parent == nil {
				continue
			}
			partitionsSeen++
			require.Equal(t, chips[*s.Spec.NodeName+"/"+*parent], fabricOf(d), "partition %s of %s", d.Name, *s.Spec.NodeName)
			if *s.Spec.NodeName == "none" {
				require.Empty(t, fabricOf(d), "partition %s of node none", d.Name)
			}
		}
	}
	require.NotZero(t, partitionsSeen)
}

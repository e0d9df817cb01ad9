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

package fabric_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// chip is a whole chip's device in super pod sp ("" for none).
func chip(name, sp string) resourceapi.Device {
	d := resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		names.AttrType: {StringValue: ptr.To(names.TypeChip)},
	}}
	if sp != "" {
		d.Attributes[fabric.AttrSuperPod] = resourceapi.DeviceAttribute{StringValue: ptr.To(sp)}
	}
	return d
}

func partition(name, sp string) resourceapi.Device {
	d := chip(name, sp)
	d.Attributes[names.AttrType] = resourceapi.DeviceAttribute{StringValue: ptr.To("vnpu")}
	return d
}

func TestANodeHasASuperPodOnlyWhereEveryChipSaysTheSame(t *testing.T) {
	tests := []struct {
		name    string
		devices []resourceapi.Device
		want    string
		err     string
	}{
		{"every chip in super pod 3", []resourceapi.Device{chip("npu-0", "3"), chip("npu-1", "3")}, "3", ""},
		{"chips without a super pod (910B, MLU)", []resourceapi.Device{chip("npu-0", ""), chip("npu-1", "")}, "", ""},
		{"no chips", nil, "", ""},
		{"partitions are their chip's and are not counted", []resourceapi.Device{chip("npu-0", "3"), partition("npu-0-vir05-0", "")}, "3", ""},
		{"chips that disagree", []resourceapi.Device{chip("npu-0", "3"), chip("npu-1", "4")}, "",
			`field accel-dra.dev/superPod: the chips disagree on the super pod: npu-0 says "3", npu-1 says "4"`},
		{"only some chips say one", []resourceapi.Device{chip("npu-0", "3"), chip("npu-1", "")}, "",
			`field accel-dra.dev/superPod: only 1 of the node's 2 chips say their super pod ("3")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fabric.SuperPodOf(tc.devices)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestTheSuperPodLabelValueIsScopedAndValid(t *testing.T) {
	tests := []struct{ scope, id, want, err string }{
		{"", "1", "sp-1", ""},
		{"hall-2", "1", "hall-2.sp-1", ""},
		{"", "a b", "", `label accel-dra.dev/superpod value "sp-a b" (super pod "a b", scope "") is not a valid label value: a valid label must`},
	}
	for _, tc := range tests {
		got, err := fabric.SuperPodValue(tc.scope, tc.id)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func readMap(t *testing.T, file string) (fabric.LevelMap, error) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	return fabric.ParseLevelMap("ConfigMap kube-system/fabric", map[string]string{fabric.LevelMapKey: string(doc)})
}

func TestTheAdminsLevelMapNamesTheNodeAndFieldOfEveryMistake(t *testing.T) {
	tests := []struct {
		file string
		want fabric.LevelMap
		err  string
	}{
		{"levels-good.yaml", fabric.LevelMap{
			"node-1": {Leaf: "leaf-a", Spine: "spine-1"},
			"node-2": {Leaf: "leaf-a", Spine: "spine-1"},
			"node-3": {Leaf: "leaf-b"},
		}, ""},
		{"levels-node-twice.yaml", nil,
			"ConfigMap kube-system/fabric key fabric.yaml: nodes[2]: node node-1 is named twice (also nodes[0])"},
		{"levels-level-twice.yaml", nil,
			"ConfigMap kube-system/fabric key fabric.yaml: nodes[1] (node node-2): line 7: field leaf is given twice"},
		{"levels-bad-value.yaml", nil,
			`ConfigMap kube-system/fabric key fabric.yaml: nodes[0] (node node-1): field leaf: "leaf a" is not a valid label value: a valid label must`},
		{"levels-two-spines.yaml", nil,
			"ConfigMap kube-system/fabric key fabric.yaml: node node-2: field spine: leaf leaf-a is under spine spine-2 here and under spine spine-1 at node node-1; a leaf is in one spine"},
		{"levels-unknown-field.yaml", nil,
			`ConfigMap kube-system/fabric key fabric.yaml: nodes[0] (node node-1): unknown field "rack", want name, leaf, spine`},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := readMap(t, tc.file)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAConfigMapWithoutTheKeyIsAnError(t *testing.T) {
	_, err := fabric.ParseLevelMap("ConfigMap kube-system/fabric", map[string]string{"other": ""})
	require.EqualError(t, err, "ConfigMap kube-system/fabric: no key fabric.yaml")
}

func TestDesiredLabelsComeFromTheChipsAndTheAdminOnly(t *testing.T) {
	levels := fabric.LevelMap{"node-1": {Leaf: "leaf-a", Spine: "spine-1"}}
	tests := []struct {
		name     string
		current  map[string]string
		superPod string
		spErr    error
		sources  fabric.Sources
		want     fabric.Want
	}{
		{"a 910B node with nothing from the admin gets no labels", nil, "", nil, fabric.Sources{},
			fabric.Want{Labels: map[string]string{}}},
		{"an A3 node gets its super pod", nil, "7", nil, fabric.Sources{SuperPodScope: "hall-2"},
			fabric.Want{Labels: map[string]string{fabric.LabelSuperPod: "hall-2.sp-7"}}},
		{"levels from the node's own labels", map[string]string{"volcano.sh/tor": "tor-3", "example.com/spine": "s1"}, "", nil,
			fabric.Sources{LeafLabel: "volcano.sh/tor", SpineLabel: "example.com/spine"},
			fabric.Want{Labels: map[string]string{fabric.LabelLeaf: "tor-3", fabric.LabelSpine: "s1"}}},
		{"levels from the ConfigMap", nil, "", nil, fabric.Sources{Map: levels},
			fabric.Want{Labels: map[string]string{fabric.LabelLeaf: "leaf-a", fabric.LabelSpine: "spine-1"}}},
		{"a node label and the ConfigMap that disagree give no level", map[string]string{"volcano.sh/tor": "tor-3"}, "", nil,
			fabric.Sources{LeafLabel: "volcano.sh/tor", Map: levels},
			fabric.Want{Labels: map[string]string{fabric.LabelSpine: "spine-1"}, Problems: map[string]string{
				fabric.LabelLeaf: `node node-1: field leaf: node label volcano.sh/tor says "tor-3", the ConfigMap says "leaf-a"`}}},
		{"chips that disagree are a problem of the super pod label", nil, "", errors.New("field accel-dra.dev/superPod: the chips disagree"), fabric.Sources{},
			fabric.Want{Labels: map[string]string{}, Problems: map[string]string{
				fabric.LabelSuperPod: "node node-1: field accel-dra.dev/superPod: the chips disagree"}}},
		{"the mirror is written where absent", nil, "7", nil, fabric.Sources{Mirror: true},
			fabric.Want{Labels: map[string]string{fabric.LabelSuperPod: "sp-7"}, Mirror: "7"}},
		{"the mirror is written where equal", map[string]string{fabric.MirrorSuperPod: "7"}, "7", nil, fabric.Sources{Mirror: true},
			fabric.Want{Labels: map[string]string{fabric.LabelSuperPod: "sp-7"}, Mirror: "7"}},
		{"the mirror is left where it differs", map[string]string{fabric.MirrorSuperPod: "8"}, "7", nil, fabric.Sources{Mirror: true},
			fabric.Want{Labels: map[string]string{fabric.LabelSuperPod: "sp-7"}, Problems: map[string]string{
				fabric.MirrorSuperPod: `node node-1: label huawei.com/topotree.superpodid is "8", the chips say "7"; left as it is`}}},
		{"the mirror is off by default", nil, "7", nil, fabric.Sources{},
			fabric.Want{Labels: map[string]string{fabric.LabelSuperPod: "sp-7"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fabric.Desired("node-1", tc.current, tc.superPod, tc.spErr, tc.sources))
		})
	}
}

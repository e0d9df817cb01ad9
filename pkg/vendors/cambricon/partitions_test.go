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

package cambricon_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func chip(model string, index, cores int, memory int64) inventory.Chip {
	return inventory.Chip{Vendor: cambricon.Vendor, Model: model, Index: index, Cores: cores, MemoryBytes: memory,
		DeviceNodes: []string{fmt.Sprintf("/dev/cambricon_dev%d", index), fmt.Sprintf("/dev/cambricon_ipcm%d", index)}}
}

func TestPartitionToolCreatesListsAndDestroysSMLUInstances(t *testing.T) {
	ctx := context.Background()
	c := chip("MLU370-X8", 0, 16, 23308<<20)
	quarter, ok := cambriconTemplateOf(c, "25p.5827mb")
	require.True(t, ok)
	run := &discoverytest.ScriptedRunner{T: t, Dir: "testdata/smlu", Steps: []discoverytest.Step{
		{Cmd: "cnmon smlu -c 0 -p", File: "smlu_profiles.txt"},
		{Cmd: "cnmon smlu -c 0 -C 2", File: "smlu_create_2_ok.txt"},
		{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_1_2.txt"},
		{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_1_2.txt"},
		{Cmd: "cnmon smlu -c 0 -D 1", File: "smlu_destroy_1_ok.txt"},
		{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_none.txt"},
		{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_none.txt"},
	}}
	tool := &cambricon.PartitionTool{Runner: run}
	inst, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, vendors.Instance{Type: cambricon.PartitionType, Chip: 0, Template: "25p.5827mb", ID: 2,
		DeviceNode: "/dev/cambricon-caps/cap_dev0_mi2", UUID: "MLU-C0001012-1916-0000-0000-000000000000"}, inst)
	other := vendors.Instance{Type: cambricon.PartitionType, Chip: 0, Template: "50p.11654mb", ID: 1}
	require.NoError(t, tool.Destroy(ctx, c, other))
	require.NoError(t, tool.Destroy(ctx, c, other), "gone already")
	run.Done()

}

// An sMLU container gets the card's own node, its ipcm node where the node
// has one, and the instance's capability node, as Cambricon's device plugin
// gives a MIM or dynamic-sMLU container; never the whole-card commu, cmsg,
// msgq and rpc nodes, which a whole-card container gets.
func TestSMLUEditsGiveTheCardNodeIpcmAndCapabilityNodeOnly(t *testing.T) {
	inst := vendors.Instance{Type: cambricon.PartitionType, Chip: 3, Template: "25p.5827mb", ID: 2, DeviceNode: "/dev/cambricon-caps/cap_dev3_mi2"}
	for _, tc := range []struct {
		name  string
		nodes []string
		want  []string
	}{
		{
			name:  "a node with every per-card node",
			nodes: []string{"/dev/cambricon_dev3", "/dev/cambricon_ipcm3", "/dev/commu3", "/dev/cmsg_ctrl3", "/dev/cambr-msgq:3", "/dev/cambr-rpc:3"},
			want:  []string{"/dev/cambricon_dev3", "/dev/cambricon_ipcm3", "/dev/cambricon-caps/cap_dev3_mi2"},
		},
		{
			name:  "a node without ipcm nodes",
			nodes: []string{"/dev/cambricon_dev3", "/dev/commu3"},
			want:  []string{"/dev/cambricon_dev3", "/dev/cambricon-caps/cap_dev3_mi2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chip("MLU370-X8", 3, 16, 23308<<20)
			c.DeviceNodes = tc.nodes
			edits, err := cambricon.SMLUs{}.Edits(c, inst)
			require.NoError(t, err)
			var want []vendors.DeviceNode
			for _, n := range tc.want {
				want = append(want, vendors.DeviceNode{Path: n, HostPath: n})
			}
			require.Equal(t, vendors.PartitionEdits{NotVisible: true, DeviceNodes: want}, edits)
		})
	}
	bad := inst
	bad.DeviceNode = "/dev/cambricon_dev3"
	_, err := cambricon.SMLUs{}.Edits(chip("MLU370-X8", 3, 16, 23308<<20), bad)
	require.ErrorContains(t, err, `device node "/dev/cambricon_dev3" is not /dev/cambricon-caps/cap_dev<N>_mi<K>`)
}

func TestPartitionToolRefusesWhatCnmonContradicts(t *testing.T) {
	ctx := context.Background()
	c := chip("MLU370-X8", 0, 16, 23308<<20)
	quarter, ok := cambriconTemplateOf(c, "25p.5827mb")
	require.True(t, ok)
	for _, tc := range []struct {
		name  string
		steps []discoverytest.Step
		do    func(*cambricon.PartitionTool) error
		err   string
	}{
		{
			name:  "a profile cnmon does not list",
			steps: []discoverytest.Step{{Cmd: "cnmon smlu -c 0 -p", File: "smlu_list_none.txt"}},
			do:    func(tool *cambricon.PartitionTool) error { _, err := tool.Create(ctx, c, quarter); return err },
			err:   "creating a 25p.5827mb sMLU instance on chip 0: cnmon smlu -c 0 -p lists no such profile",
		},
		{
			name: "a create on another card",
			steps: []discoverytest.Step{
				{Cmd: "cnmon smlu -c 0 -p", File: "smlu_profiles.txt"},
				{Cmd: "cnmon smlu -c 0 -C 2", File: "smlu_create_wrong_card.txt"},
			},
			do:  func(tool *cambricon.PartitionTool) error { _, err := tool.Create(ctx, c, quarter); return err },
			err: "cnmon created instance 2 on card 1 with profile 2",
		},
		{
			name: "a destroy that leaves the instance",
			steps: []discoverytest.Step{
				{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_1.txt"},
				{Cmd: "cnmon smlu -c 0 -D 1", File: "smlu_destroy_1_ok.txt"},
				{Cmd: "cnmon smlu -c 0 -l", File: "smlu_list_1.txt"},
			},
			do: func(tool *cambricon.PartitionTool) error {
				return tool.Destroy(ctx, c, vendors.Instance{Type: cambricon.PartitionType, ID: 1})
			},
			err: "destroying sMLU instance 1 on chip 0: cnmon still lists it",
		},
		{
			name:  "a list of another card's instances",
			steps: []discoverytest.Step{{Cmd: "cnmon smlu -c 1 -l", File: "smlu_list_1.txt"}},
			do: func(tool *cambricon.PartitionTool) error {
				_, err := tool.List(ctx, chip("MLU370-X8", 1, 16, 23308<<20))
				return err
			},
			err: "cnmon smlu -c 1 -l lists /dev/cambricon-caps/cap_dev0_mi1, a node of card 0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &discoverytest.ScriptedRunner{T: t, Dir: "testdata/smlu", Steps: tc.steps}
			require.ErrorContains(t, tc.do(&cambricon.PartitionTool{Runner: run}), tc.err)
			run.Done()
		})
	}
}

// cambriconTemplateOf finds a template of chip c by its name.
func cambriconTemplateOf(c inventory.Chip, name string) (vendors.Template, bool) {
	m, ok := vendors.PartitionModelOf(cambricon.Cambricon{}, c)
	if !ok {
		return vendors.Template{}, false
	}
	return m.Template(name)
}

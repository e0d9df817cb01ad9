package cambricon_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	_ "github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func chip(model string, index, cores int, memory int64) inventory.Chip {
	return inventory.Chip{Vendor: cambricon.Vendor, Model: model, Index: index, Cores: cores, MemoryBytes: memory,
		DeviceNodes: []string{fmt.Sprintf("/dev/cambricon_dev%d", index), fmt.Sprintf("/dev/cambricon_ipcm%d", index)}}
}

func TestPartitionToolCreatesListsAndDestroysSMLUInstances(t *testing.T) {
	ctx := context.Background()
	c := chip("MLU370-X8", 0, 16, 23308<<20)
	quarter, ok := partitions.TemplateByName(c, "25p.5827mb")
	require.True(t, ok)
	run := &discoverytest.ScriptedRunner{T: t, Dir: "testdata/smlu", Steps: []discoverytest.Step{
		{Cmd: "cnmon smlu -c 0 --create --profile 25p.5827mb", File: "smlu_create_2_ok.txt"},
		{Cmd: "cnmon smlu -c 0 --list", File: "smlu_list_1_2.txt"},
		{Cmd: "cnmon smlu -c 0 --list", File: "smlu_list_1_2.txt"},
		{Cmd: "cnmon smlu -c 0 --destroy --instance 1", File: "smlu_destroy_1_ok.txt"},
		{Cmd: "cnmon smlu -c 0 --list", File: "smlu_list_none.txt"},
	}}
	tool := &cambricon.PartitionTool{Runner: run}
	inst, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, partitions.Instance{Type: partitions.TypeSMLU, Chip: 0, Template: "25p.5827mb", ID: 2,
		DeviceNode: "/dev/cambricon-caps/cap_dev0_mi2", UUID: "MLU-C0001012-1916-0000-0000-000000000000"}, inst)
	other := partitions.Instance{Type: partitions.TypeSMLU, Chip: 0, Template: "50p.11654mb", ID: 1}
	require.NoError(t, tool.Destroy(ctx, c, other))
	require.NoError(t, tool.Destroy(ctx, c, other), "gone already")
	run.Done()

	edits, err := partitions.EditsOf(c, inst)
	require.NoError(t, err)
	require.Equal(t, partitions.Edits{VisibleID: 0, DeviceNodes: []partitions.DeviceNode{
		{Path: "/dev/cambricon_dev0", HostPath: "/dev/cambricon_dev0"},
		{Path: "/dev/cambricon_ipcm0", HostPath: "/dev/cambricon_ipcm0"},
		{Path: "/dev/cambricon-caps/cap_dev0_mi2", HostPath: "/dev/cambricon-caps/cap_dev0_mi2"},
	}}, edits, "the chip's nodes and the instance's capability node")
}

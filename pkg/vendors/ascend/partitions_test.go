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

package ascend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

func chip(model string, index, cores int, memory int64) inventory.Chip {
	return inventory.Chip{Vendor: ascend.Vendor, Model: model, Index: index, Cores: cores, MemoryBytes: memory,
		DeviceNodes: []string{fmt.Sprintf("/dev/davinci%d", index)}, Extra: map[string]inventory.Value{"logicId": inventory.IntValue(int64(index))}}
}

const gib = int64(1) << 30

func TestPartitionToolCreatesListsAndDestroysVNPUsWithNpuSmi(t *testing.T) {
	ctx := context.Background()
	c := chip("Ascend910B4", 0, 20, 32*gib)
	vir10, ok := ascendTemplateOf(c, "vir10_3c_16g")
	require.True(t, ok)
	run := &discoverytest.ScriptedRunner{T: t, Dir: "testdata/vnpu", Steps: []discoverytest.Step{
		{Cmd: "npu-smi info -m", File: "npu-smi_info_-m.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_100.txt"},
		{Cmd: "npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 101", File: "create-vnpu_ok.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_100_101.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_100_101.txt"},
		{Cmd: "npu-smi set -t destroy-vnpu -i 0 -c 0 -v 101", File: "destroy-vnpu_101_ok.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_100.txt"},
	}}
	tool := &ascend.PartitionTool{Runner: run}
	inst, err := tool.Create(ctx, c, vir10)
	require.NoError(t, err)
	require.Equal(t, vendors.Instance{Type: ascend.PartitionType, Chip: 0, Template: "vir10_3c_16g", ID: 101, DeviceNode: "/dev/vdavinci101"}, inst,
		"the lowest free id of the chip's range, passed with -v")
	require.NoError(t, tool.Destroy(ctx, c, inst))
	require.NoError(t, tool.Destroy(ctx, c, inst), "destroying a vNPU that is gone is not an error")
	run.Done()

	edits, err := ascend.VNPUs{}.Edits(c, inst)
	require.NoError(t, err)
	require.Equal(t, vendors.PartitionEdits{DeviceNodes: []vendors.DeviceNode{{Path: "/dev/davinci101", HostPath: "/dev/vdavinci101"}}, VisibleID: 101, Virtual: true}, edits)
}

func TestParseVNPUInfoReadsBothLayoutsAndChecksTheCount(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []ascend.VNPU
	}{
		{"info-vnpu_none.txt", nil},
		{"info-vnpu_100_101.txt", []ascend.VNPU{{ID: 100, VGroup: 0, ContainerID: "ffffffffffff", Status: 1, Template: "vir10_3c_16g"}, {ID: 101, VGroup: 1, ContainerID: "000000000000", Status: 0, Template: "vir10_3c_16g"}}},
		{"info-vnpu_310p.txt", []ascend.VNPU{{ID: 212, VGroup: 0, ContainerID: "000000000000", Status: 0, Template: "vir04"}}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/vnpu", tt.file))
			require.NoError(t, err)
			got, err := ascend.ParseVNPUInfo("npu-smi info -t info-vnpu", data)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	data, err := os.ReadFile("testdata/vnpu/info-vnpu_100_101.txt")
	require.NoError(t, err)
	broken := strings.Replace(string(data), "Total number of vnpu: 2 ", "Total number of vnpu: 3 ", 1)
	_, err = ascend.ParseVNPUInfo("npu-smi info -t info-vnpu -i 0 -c 0", []byte(broken))
	require.ErrorContains(t, err, "parsing npu-smi info -t info-vnpu -i 0 -c 0: line 9: npu-smi counts 3 vNPUs but lists 2")
}

func TestPartitionToolReportsAFailedCreate(t *testing.T) {
	ctx := context.Background()
	c := chip("Ascend910B4", 0, 20, 32*gib)
	vir10, _ := ascendTemplateOf(c, "vir10_3c_16g")
	full := &discoverytest.ScriptedRunner{T: t, Dir: "testdata/vnpu", Steps: []discoverytest.Step{
		{Cmd: "npu-smi info -m", File: "npu-smi_info_-m.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_none.txt"},
		{Cmd: "npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 100", File: "destroy-vnpu_101_ok.txt"},
		{Cmd: "npu-smi info -t info-vnpu -i 0 -c 0", File: "info-vnpu_none.txt"},
	}}
	_, err := (&ascend.PartitionTool{Runner: full}).Create(ctx, c, vir10)
	require.EqualError(t, err, "npu-smi reported vNPU 100 on chip 0 created, but does not list it")
}

// ascendTemplateOf finds a template of chip c by its name.
func ascendTemplateOf(c inventory.Chip, name string) (vendors.Template, bool) {
	m, ok := vendors.PartitionModelOf(ascend.Ascend{}, c)
	if !ok {
		return vendors.Template{}, false
	}
	return m.Template(name)
}

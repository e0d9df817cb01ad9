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

package profilenode_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	_ "github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

const gib = int64(1) << 30

func TestTheFakeBehavesLikeTheToolsAndKeepsItsStateAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	npu := inventory.Chip{Vendor: ascend.Vendor, Model: "Ascend310P3", Index: 1, Cores: 8, MemoryBytes: 24 * gib,
		DeviceNodes: []string{"/dev/davinci1"}, Extra: map[string]inventory.Value{"logicId": inventory.IntValue(1)}}
	mlu := inventory.Chip{Vendor: cambricon.Vendor, Model: "MLU590", Index: 2, Cores: 48, MemoryBytes: 96 * gib,
		DeviceNodes: []string{"/dev/cambricon_dev2", "/dev/cambricon_ipcm2"}}
	state := filepath.Join(t.TempDir(), profilenode.PartitionStateFile)
	newFake := func() *profilenode.PartitionTool {
		return &profilenode.PartitionTool{StatePath: state, Vendors: []vendors.Vendor{ascend.Ascend{}, cambricon.Cambricon{}},
			Chips: []inventory.Chip{npu, mlu}, Root: root}
	}
	fake := newFake()
	ascendTool := &ascend.PartitionTool{Runner: fake}
	vir04, _ := partitions.TemplateByName(registry, npu, "vir04")
	vir02, _ := partitions.TemplateByName(registry, npu, "vir02")
	a, err := ascendTool.Create(ctx, npu, vir04)
	require.NoError(t, err)
	require.Equal(t, 116, a.ID, "the id range of chip 1 starts at 1*16+100")
	b, err := ascendTool.Create(ctx, npu, vir02)
	require.NoError(t, err)
	require.Equal(t, 117, b.ID)
	_, err = ascendTool.Create(ctx, npu, vir02)
	require.ErrorContains(t, err, "not enough AI CPUs left on chip 1 for vir02: 6 of 7 in use", "the fake refuses what does not fit, like the driver")
	require.FileExists(t, filepath.Join(root, "dev/vdavinci116"))

	cambriconTool := &cambricon.PartitionTool{Runner: fake}
	half, _ := partitions.TemplateByName(registry, mlu, "50p.49152mb")
	m, err := cambriconTool.Create(ctx, mlu, half)
	require.NoError(t, err)
	require.Equal(t, "/dev/cambricon-caps/cap_dev2_mi1", m.DeviceNode)
	st, err := os.Stat(filepath.Join(root, m.DeviceNode))
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeCharDevice, "a character device node")

	// A new process sees the same partitions.
	restarted := &ascend.PartitionTool{Runner: newFake()}
	list, err := restarted.List(ctx, npu)
	require.NoError(t, err)
	require.Equal(t, []vendors.Instance{a, b}, list)

	require.NoError(t, restarted.Destroy(ctx, npu, a))
	require.NoFileExists(t, filepath.Join(root, "dev/vdavinci116"))
	all, err := newFake().Instances()
	require.NoError(t, err)
	require.Equal(t, []vendors.Instance{m, b}, all)

	_, err = fake.Run(ctx, "npu-smi", "set", "-t", "create-vnpu", "-i", "1", "-c", "0", "-f", "vir16", "-v", "118")
	require.ErrorContains(t, err, "the vnpu template vir16 is not supported")
	_, err = fake.Run(ctx, "npu-smi", "set", "-t", "create-vnpu", "-i", "1", "-c", "0", "-f", "vir01", "-v", "99")
	require.ErrorContains(t, err, "the vnpu id 99 is out of range [116, 123]")
}

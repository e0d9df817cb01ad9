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

package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// recordings answers each command with the next of its recorded outputs
// (the last one repeats), from pkg/vendors/ascend/testdata/vnpu, and fails on a
// command it has no recording for.
type recordings struct {
	t   testing.TB
	dir string
	mu  sync.Mutex
	out map[string][]string
}

func (r *recordings) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := discovery.CommandLine(name, args...)
	files, ok := r.out[cmd]
	if !ok || len(files) == 0 {
		r.t.Errorf("no recording for %q", cmd)
		return nil, fmt.Errorf("running %s: %w", cmd, discovery.ErrNoRecording)
	}
	if len(files) > 1 {
		r.out[cmd] = files[1:]
	}
	return os.ReadFile(filepath.Join(r.dir, files[0]))
}

// TestThePluginDrivesNpuSmiAsRecorded runs the real plugin against the
// npu-smi output recorded on an Atlas 800T A2 (910B4): start-up lists the
// vNPUs of every chip, a claim for a vir10_3c_16g vNPU creates vNPU 100
// and the container gets /dev/vdavinci100 as /dev/davinci100, and
// unpreparing destroys it, with exactly the commands an operator runs.
func TestThePluginDrivesNpuSmiAsRecorded(t *testing.T) {
	rec := &recordings{t: t, dir: "../../pkg/vendors/ascend/testdata/vnpu", out: map[string][]string{
		"npu-smi info -m": {"npu-smi_info_-m.txt"},
		// start-up, before create, after create, before destroy, after
		"npu-smi info -t info-vnpu -i 0 -c 0":                         {"info-vnpu_none.txt", "info-vnpu_none.txt", "info-vnpu_100.txt", "info-vnpu_100.txt", "info-vnpu_none.txt"},
		"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 100": {"create-vnpu_ok.txt"},
		"npu-smi set -t destroy-vnpu -i 0 -c 0 -v 100":                {"destroy-vnpu_100_ok.txt"},
	}}
	for i := 1; i < 8; i++ {
		rec.out[fmt.Sprintf("npu-smi info -t info-vnpu -i %d -c 0", i)] = []string{"info-vnpu_none.txt"}
	}
	n := startNode(t, nodeOptions{Profile: "testdata/atlas-800t-a2-910b4.yaml", Vendor: ascend.Vendor, ChipModes: string(partitions.ModePartitioned), Runner: rec})
	require.Empty(t, n.commands.changes())

	// The recordings have no device files: make the vNPU's for the container.
	mknodNull(t, filepath.Join(n.root, "dev/vdavinci100"))
	c := n.claim("infer", []string{"npu-0-vir10-3c-16g-0"})
	ids := n.mustPrepare(c)
	require.Equal(t, []string{"npu-smi set -t create-vnpu -i 0 -c 0 -f vir10_3c_16g -v 100"}, n.commands.changes())
	ctr := n.container(ids)
	require.Equal(t, []string{"/dev/davinci100", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, devicePaths(ctr))
	require.Equal(t, filepath.Join(n.root, "dev/vdavinci100"), n.hostPathOf(ids, "/dev/davinci100"), "the vNPU's own node, not /dev/davinci0")
	env := envMap(ctr)
	require.Equal(t, "100", env["ASCEND_VISIBLE_DEVICES"])
	require.Equal(t, "VIRTUAL", env["ASCEND_RUNTIME_OPTIONS"])

	n.unprepare(c)
	require.Equal(t, []string{"npu-smi set -t destroy-vnpu -i 0 -c 0 -v 100"}, n.commands.changes())
}

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

package cdi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenRoot stands for the temporary host root in golden files.
const goldenRoot = "/host"

func TestClaimSpecsMatchTheGoldenFiles(t *testing.T) {
	tests := []struct {
		golden  string
		profile string
		adjust  func(*inventory.Inventory)
		vendor  inventory.Vendor
		indices []int
		env     map[string]string
		// mutate turns whole chips into partitions or shares.
		mutate func(*cdi.Claim)
		// visibleEnv is the writer's VisibleDevicesEnv; ascendRuntime
		// installs ascend-docker-runtime on the node first.
		visibleEnv    string
		ascendRuntime bool
	}{
		{golden: "ascend-910b-1-chip", profile: "atlas-800t-a2", vendor: ascend.Vendor, indices: []int{3}},
		{golden: "ascend-910a-4-chips-one-ring", profile: "atlas-800-910a", vendor: ascend.Vendor, indices: []int{4, 5, 6, 7},
			env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{golden: "ascend-910b-8-chips", profile: "atlas-800t-a2", vendor: ascend.Vendor, indices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{golden: "cambricon-mlu370-1-chip", profile: "mlu370-x8", vendor: cambricon.Vendor, indices: []int{2}},
		{golden: "cambricon-mlu590-4-chips", profile: "mlu590", adjust: withMLU590Nodes, vendor: cambricon.Vendor, indices: []int{0, 1, 2, 3},
			env: map[string]string{"CNCL_LOG_LEVEL": "WARNING"}},
		{golden: "cambricon-mlu370-8-chips", profile: "mlu370-x8", vendor: cambricon.Vendor, indices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{golden: "ascend-310p-vnpu", profile: "atlas-300i-duo", vendor: ascend.Vendor, indices: []int{1}, mutate: func(c *cdi.Claim) {
			// vNPU 116 (vir02) on chip 1, as the driver prepares it.
			d := &c.Devices[0]
			d.Name = "npu-1-vir02-0"
			d.Nodes = []cdi.DeviceNode{{Path: "/dev/davinci116", HostPath: "/dev/vdavinci116"}}
			d.VisibleID = ptr.To(116)
			d.DriverEnv = map[string]string{"PARTITION": "vir02", "MEMORY": "6442450944", "CORES": "2"}
			d.Annotations = map[string]string{"accel-dra.dev/partition": `{"type":"vnpu","chip":1,"template":"vir02","id":116,"deviceNode":"/dev/vdavinci116"}`}
			c.Env = map[string]string{ascend.EnvRuntimeOptions: "VIRTUAL"}
		}},
		{golden: "cambricon-mlu370-smlu", profile: "mlu370-x8", vendor: cambricon.Vendor, indices: []int{2}, mutate: func(c *cdi.Claim) {
			d := &c.Devices[0]
			d.Name = "mlu-2-smlu-25p-0"
			d.Nodes = []cdi.DeviceNode{
				{Path: "/dev/cambricon_dev2", HostPath: "/dev/cambricon_dev2"},
				{Path: "/dev/cambricon_ipcm2", HostPath: "/dev/cambricon_ipcm2"},
				{Path: "/dev/cambricon-caps/cap_dev2_mi1", HostPath: "/dev/cambricon-caps/cap_dev2_mi1"},
			}
			d.DriverEnv = map[string]string{"PARTITION": "25p.5827mb", "MEMORY": "6110052352", "CORES": "4"}
			// No CAMBRICON_VISIBLE_DEVICES for an sMLU, as the device plugin.
			d.NotVisible = true
		}},
		// A node that still has the Ascend runtime: auto sets
		// ASCEND_VISIBLE_DEVICES to the runtime's neutral empty value;
		// omit does so too, and leaves Cambricon's variable out.
		{golden: "ascend-910b-1-chip-ascend-runtime", profile: "atlas-800t-a2", vendor: ascend.Vendor, indices: []int{3}, ascendRuntime: true},
		{golden: "ascend-310p-vnpu-omit", profile: "atlas-300i-duo", vendor: ascend.Vendor, indices: []int{1}, visibleEnv: cdi.VisibleDevicesOmit, mutate: func(c *cdi.Claim) {
			d := &c.Devices[0]
			d.Name = "npu-1-vir02-0"
			d.Nodes = []cdi.DeviceNode{{Path: "/dev/davinci116", HostPath: "/dev/vdavinci116"}}
			d.VisibleID = ptr.To(116)
			c.Env = map[string]string{ascend.EnvRuntimeOptions: "VIRTUAL"}
		}},
		{golden: "cambricon-mlu370-1-chip-omit", profile: "mlu370-x8", vendor: cambricon.Vendor, indices: []int{2}, visibleEnv: cdi.VisibleDevicesOmit},
		{golden: "ascend-910b-shared", profile: "atlas-800t-a2", vendor: ascend.Vendor, indices: []int{0}, mutate: func(c *cdi.Claim) {
			c.Devices[0].DriverEnv = map[string]string{"SHARE_ID": "5e1d0c4b-8f3a-4c2e-9b7d-6a5f4e3d2c1b", "MEMORY": "8589934592", "CORES": "0"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			n := newNode(t, tt.profile, tt.adjust)
			if tt.ascendRuntime {
				n.installAscendRuntime(t)
			}
			w, dir := n.writerWith(t, tt.visibleEnv)
			c := n.claim("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", tt.vendor, tt.indices...)
			for i := range c.Devices {
				c.Devices[i].Env = tt.env
			}
			if tt.mutate != nil {
				tt.mutate(&c)
				for _, d := range c.Devices {
					for _, dn := range d.Nodes {
						nullNode(t, filepath.Join(n.root, dn.HostPath))
					}
				}
			}
			_, err := w.Write(context.Background(), c)
			require.NoError(t, err)
			requireValidSpecs(t, dir)

			files := specFiles(t, dir)
			require.Len(t, files, 1)
			data, err := os.ReadFile(filepath.Join(dir, files[0]))
			require.NoError(t, err)
			// The spec is compact JSON; indented, the golden files
			// can be read and reviewed.
			var indented bytes.Buffer
			require.NoError(t, json.Indent(&indented, data, "", "  "))
			got := strings.ReplaceAll(indented.String(), n.root, goldenRoot) + "\n"

			golden := filepath.Join("testdata", "golden", tt.golden+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./pkg/cdi -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}

func TestSpecFilesAreNamedByVendorAndClaimUID(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	w, dir := n.writer(t)
	uid := types.UID("0a1b2c3d-0000-4000-8000-000000000001")
	for _, v := range []inventory.Vendor{ascend.Vendor, cambricon.Vendor} {
		_, err := w.Write(context.Background(), n.claim(uid, v, 0))
		require.NoError(t, err)
	}
	require.Equal(t, []string{
		"accel-dra.dev-ascend_" + string(uid) + ".json",
		"accel-dra.dev-cambricon_" + string(uid) + ".json",
	}, specFiles(t, dir))
}

// nullNode creates a /dev/null clone at path unless something is there
// (a partition's node, which the device faker does not make).
func nullNode(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
}

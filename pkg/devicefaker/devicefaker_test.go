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

package devicefaker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/accel-dra/accel-dra/pkg/devicefaker"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func inventoryOf(t *testing.T, profileName string) inventory.Inventory {
	t.Helper()
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, "node-0", p).Discover(context.Background())
	require.NoError(t, err)
	return inv
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating character devices needs root")
	}
}

// allNodes lists every device file the inventory names.
func allNodes(inv inventory.Inventory) []string {
	var nodes []string
	for _, c := range inv.Chips {
		nodes = append(nodes, c.DeviceNodes...)
	}
	for _, shared := range inv.SharedDeviceNodes {
		nodes = append(nodes, shared...)
	}
	return nodes
}

var ascendFiles = []string{
	"/usr/local/Ascend/driver/lib64/driver/libascend_hal.so",
	"/usr/local/Ascend/driver/lib64/common",
	"/usr/local/Ascend/driver/include",
	"/usr/local/Ascend/driver/version.info",
	"/etc/ascend_install.info",
	"/usr/local/dcmi/libdcmi.so",
	"/usr/local/bin/npu-smi",
}

var cambriconFiles = []string{"/usr/bin/cnmon"}

func TestCreateMakesEveryDeviceNodeANullCharacterDevice(t *testing.T) {
	requireRoot(t)
	for _, name := range []string{"atlas-800t-a2", "atlas-800-910a", "atlas-300i-duo", "mlu370-x8", "mlu590", "mlu270", "mixed-910b-mlu370"} {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, name)
			root := t.TempDir()
			require.NoError(t, devicefaker.Create(context.Background(), registry, root, inv))

			nodes := allNodes(inv)
			require.NotEmpty(t, nodes)
			for _, n := range nodes {
				var st unix.Stat_t
				require.NoError(t, unix.Stat(filepath.Join(root, n), &st), n)
				require.Equal(t, uint32(unix.S_IFCHR), st.Mode&unix.S_IFMT, "%s is a character device", n)
				require.Equal(t, uint32(devicefaker.NullMajor), unix.Major(st.Rdev), n)
				require.Equal(t, uint32(devicefaker.NullMinor), unix.Minor(st.Rdev), n)
				require.Equal(t, uint32(0o666), st.Mode&0o777, "%s is as open as /dev/null", n)
			}
			f, err := os.OpenFile(filepath.Join(root, nodes[0]), os.O_RDWR, 0)
			require.NoError(t, err, "a fake node opens like /dev/null")
			require.NoError(t, f.Close())
		})
	}
}

func TestCreateWritesTheDriverFilesOfTheVendorsPresent(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name    string
		profile string
		want    []string
		absent  []string
		version string
	}{
		{name: "an Ascend node gets the Ascend driver files only", profile: "atlas-800t-a2", want: ascendFiles, absent: cambriconFiles, version: "24.1.0"},
		{name: "a Cambricon node gets cnmon only", profile: "mlu590", want: cambriconFiles, absent: ascendFiles},
		{name: "a mixed node gets both", profile: "mixed-910b-mlu370", want: append(append([]string{}, ascendFiles...), cambriconFiles...), version: "24.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, devicefaker.Create(context.Background(), registry, root, inventoryOf(t, tt.profile)))
			for _, p := range tt.want {
				_, err := os.Stat(filepath.Join(root, p))
				require.NoError(t, err, "%s exists", p)
			}
			for _, p := range tt.absent {
				_, err := os.Stat(filepath.Join(root, p))
				require.ErrorIs(t, err, os.ErrNotExist, "%s is absent", p)
			}
			if tt.version != "" {
				data, err := os.ReadFile(filepath.Join(root, "/usr/local/Ascend/driver/version.info"))
				require.NoError(t, err)
				require.Equal(t, "Version="+tt.version+"\n", string(data))
				require.DirExists(t, filepath.Join(root, "/usr/local/Ascend/driver/include"))
			}
		})
	}
}

func TestTheFakeVendorToolsRunAndSayTheyAreFake(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	require.NoError(t, devicefaker.Create(context.Background(), registry, root, inventoryOf(t, "mixed-910b-mlu370")))
	for _, tool := range []string{"/usr/local/bin/npu-smi", "/usr/bin/cnmon"} {
		out, err := exec.Command(filepath.Join(root, tool), "info").CombinedOutput()
		require.NoError(t, err, tool)
		require.Contains(t, string(out), "placeholder created by accel-dra devicefaker", tool)
	}
}

func TestASecondCreateChangesNothing(t *testing.T) {
	requireRoot(t)
	inv := inventoryOf(t, "mixed-910b-mlu370")
	root := t.TempDir()
	require.NoError(t, devicefaker.Create(context.Background(), registry, root, inv))
	before := snapshot(t, root)
	require.NoError(t, devicefaker.Create(context.Background(), registry, root, inv))
	require.Equal(t, before, snapshot(t, root))
}

// snapshot records every path under root with its inode, mode and mtime,
// which any rewrite or re-creation would change.
func snapshot(t *testing.T, root string) map[string][3]int64 {
	t.Helper()
	out := map[string][3]int64{}
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		out[p] = [3]int64{int64(st.Ino), int64(fi.Mode()), fi.ModTime().UnixNano()}
		return nil
	}))
	return out
}

func TestCreateRefusesWhatCouldDamageARealNode(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name    string
		root    func(t *testing.T) string
		inv     inventory.Inventory
		wantErr string
	}{
		{
			name:    "the real root is refused",
			root:    func(*testing.T) string { return "/" },
			inv:     inventoryOf(t, "mlu270"),
			wantErr: `refusing root "/"`,
		},
		{
			name:    "a device path that climbs out of the root is refused",
			root:    func(t *testing.T) string { return t.TempDir() },
			inv:     inventory.Inventory{Chips: []inventory.Chip{{Vendor: cambricon.Vendor, DeviceNodes: []string{"/dev/../../escape"}}}},
			wantErr: `leaves the root`,
		},
		{
			name: "a regular file where a device node belongs is not replaced",
			root: func(t *testing.T) string {
				root := t.TempDir()
				require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "cambricon_ctl"), nil, 0o644))
				return root
			},
			inv:     inventoryOf(t, "mlu270"),
			wantErr: `cambricon_ctl: it exists and is not a character device 1:3`,
		},
		{
			name:    "a chip without device nodes is an error",
			root:    func(t *testing.T) string { return t.TempDir() },
			inv:     inventory.Inventory{Chips: []inventory.Chip{{Vendor: ascend.Vendor, Index: 2}}},
			wantErr: `huawei chip 2 has no device nodes`,
		},
		{
			name: "chips of one vendor with different driver versions are an error",
			root: func(t *testing.T) string { return t.TempDir() },
			inv: inventory.Inventory{Chips: []inventory.Chip{
				{Vendor: ascend.Vendor, Index: 0, DriverVersion: "24.1.0", DeviceNodes: []string{"/dev/davinci0"}},
				{Vendor: ascend.Vendor, Index: 1, DriverVersion: "23.0.3", DeviceNodes: []string{"/dev/davinci1"}},
			}},
			wantErr: `chips report driver versions 24.1.0 and 23.0.3`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := devicefaker.Create(context.Background(), registry, tt.root(t), tt.inv)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

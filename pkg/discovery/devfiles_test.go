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

package discovery

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeviceIndicesListsTheNumberedDeviceFilesOfOnePrefix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  []int
	}{
		{name: "a root without /dev"},
		{name: "an empty /dev", files: []string{"dev/"}},
		{
			name:  "numbered files, sorted numerically",
			files: []string{"dev/davinci10", "dev/davinci2", "dev/davinci0", "dev/davinci_manager"},
			want:  []int{0, 2, 10},
		},
		{
			name: "names that only start like a device file",
			files: []string{
				"dev/davinci", "dev/davinciX", "dev/davinci1a", "dev/davinci-1", "dev/davinci+1", "dev/davinci 1",
				"dev/xdavinci3", "dev/cambricon_dev4", "dev/davinci99999999999999999999",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				if f[len(f)-1] == '/' {
					require.NoError(t, os.MkdirAll(p, 0o755))
					continue
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, nil, 0o644))
			}
			got, err := DeviceIndices(root, "davinci")
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDeviceIndicesReturnsTheErrorOfAnUnlistableDev(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev"), nil, 0o644)) // a file where /dev belongs
	_, err := DeviceIndices(root, "davinci")
	require.ErrorContains(t, err, filepath.Join(root, "dev"))
}

func TestDeviceFileExistsLooksUnderTheRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "dev"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "cambricon_ctl"), nil, 0o644))
	require.True(t, DeviceFileExists(root, "/dev/cambricon_ctl"))
	require.False(t, DeviceFileExists(root, "/dev/cambricon_dev0"))
	require.False(t, DeviceFileExists(t.TempDir(), "/dev/cambricon_ctl"))
}

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

package inputfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inputfile"
)

func TestReadRefusesFilesOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	require.NoError(t, os.WriteFile(ok, []byte("nodes: []\n"), 0o644))
	data, err := inputfile.Read("cluster file", ok)
	require.NoError(t, err)
	require.Equal(t, "nodes: []\n", string(data))

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, inputfile.MaxBytes+1), 0o644))
	_, err = inputfile.Read("cluster file", big)
	require.EqualError(t, err, "reading cluster file "+big+": larger than 8 MiB, the limit of an input file: is it the right file?")

	// A device that never ends is cut off at the limit.
	_, err = inputfile.Read("hardware profile", "/dev/zero")
	require.EqualError(t, err, "reading hardware profile /dev/zero: larger than 8 MiB, the limit of an input file: is it the right file?")

	_, err = inputfile.Read("cluster file", filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "reading cluster file: open ")
}

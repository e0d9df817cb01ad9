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

package ociimage

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The binaries load the vendors' libraries with purego, which links them
// against the glibc loader: checkELF accepts that loader and no other.
func TestCheckELFAcceptsOnlyTheBasesLoaderAsInterpreter(t *testing.T) {
	arch, ok := Arches[runtime.GOARCH]
	if !ok {
		t.Skipf("no image architecture %s", runtime.GOARCH)
	}
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	if !bytes.Contains(self, []byte(arch.Loader+"\x00")) {
		t.Skip("this test binary has no program interpreter (built without cgo)")
	}
	require.NoError(t, checkELF(self, arch, true), "a binary linked against %s", arch.Loader)
	// Another loader of the same length, so the ELF stays intact.
	other := []byte(arch.Loader)
	other[len(other)-4] = 'X'
	bad := bytes.Replace(self, []byte(arch.Loader+"\x00"), append(other, 0), 1)
	require.ErrorContains(t, checkELF(bad, arch, true), "not the base's loader")
}

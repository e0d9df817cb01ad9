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

package nativetest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProgramsAreBuiltForTheTestBinarysArchitecture builds a program that
// prints the architecture gcc compiled it for and whether plain char is
// signed, runs it, and requires the test binary's GOARCH: a host build
// would run too (qemu-user hands a host binary to the kernel) and
// silently print the host's facts.
func TestProgramsAreBuiltForTheTestBinarysArchitecture(t *testing.T) {
	dir := t.TempDir()
	src := `#include <stdio.h>
int main(void) {
#if defined(__aarch64__)
	printf("arm64");
#elif defined(__x86_64__)
	printf("amd64");
#else
	printf("other");
#endif
	printf(" %s\n", (char)-1 < 0 ? "signed-char" : "unsigned-char");
	return 0;
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "arch.c"), []byte(src), 0o644))
	Compile(t, dir, "-o", "arch", "arch.c")
	out, err := Command(t, filepath.Join(dir, "arch")).Output()
	require.NoError(t, err)
	// The C ABIs of both: char is signed on x86-64, unsigned on AArch64.
	want := map[string]string{"amd64": "amd64 signed-char", "arm64": "arm64 unsigned-char"}[runtime.GOARCH]
	require.Equal(t, want, strings.TrimSpace(string(out)))
}

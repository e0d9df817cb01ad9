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

// Package nativetest builds and runs the C code of the native backends'
// tests (the mock libdcmi.so and libcndev.so, the struct layout programs)
// for the architecture the test binary itself runs as. On the host that
// is the host's gcc; under `GOARCH=arm64 go test -exec qemu-aarch64-static
// …` (make test) it is Debian's cross compiler aarch64-linux-gnu-gcc, and
// the programs it builds run under the same emulator, since a library
// built for the host would not load into an arm64 process, and a layout
// program built for the host would print the host's struct layout.
package nativetest

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// gnuCPU is the CPU part of the GNU target triple (as gcc -dumpmachine
// prints it, and as Debian names its cross compilers and their sysroots
// /usr/<triple>) of each GOARCH the image is built for.
var gnuCPU = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// toolchain is the compiler for runtime.GOARCH and the emulator its
// programs run under ("" when they run natively).
type toolchain struct {
	cc       string
	emulator []string
}

var target = sync.OnceValues(func() (toolchain, error) {
	cpu, ok := gnuCPU[runtime.GOARCH]
	if !ok {
		return toolchain{}, fmt.Errorf("no C toolchain known for GOARCH %s", runtime.GOARCH)
	}
	host, err := exec.Command("gcc", "-dumpmachine").Output()
	if err != nil {
		return toolchain{}, fmt.Errorf("the native backends' tests need gcc (apt-get install gcc): running gcc -dumpmachine: %w", err)
	}
	if strings.HasPrefix(string(host), cpu+"-") {
		return toolchain{cc: "gcc"}, nil
	}
	// A test binary for another architecture runs under qemu-user (make
	// test's -exec); what it builds runs the same way, with that
	// architecture's C runtime (libc6-<arch>-cross) as the loader's root.
	triple := cpu + "-linux-gnu"
	tc := toolchain{cc: triple + "-gcc", emulator: []string{"qemu-" + cpu + "-static", "-L", "/usr/" + triple}}
	for _, tool := range []string{tc.cc, tc.emulator[0]} {
		if _, err := exec.LookPath(tool); err != nil {
			return toolchain{}, fmt.Errorf("testing GOARCH=%s on %s needs %s (make testdeps installs it): %w", runtime.GOARCH, strings.TrimSpace(string(host)), tool, err)
		}
	}
	return tc, nil
})

// CC is the C compiler that builds for runtime.GOARCH.
func CC(t testing.TB) string {
	t.Helper()
	tc, err := target()
	if err != nil {
		t.Fatal(err)
	}
	return tc.cc
}

// Compile runs CC with args in dir ("" for the current directory) and
// fails the test with the compiler's output when it fails.
func Compile(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(CC(t), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cmd.Path, strings.Join(args, " "), err, out)
	}
}

// Command is exec.Command for a program Compile built: run directly, or
// under the emulator when the test binary is for another architecture.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	tc, err := target()
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.emulator) == 0 {
		return exec.Command(name, args...)
	}
	return exec.Command(tc.emulator[0], append(append(tc.emulator[1:len(tc.emulator):len(tc.emulator)], name), args...)...)
}

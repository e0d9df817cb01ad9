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

// Package cndevtest builds the mock libcndev of
// pkg/vendors/cambricon/testdata/cndev for tests: a C file compiled with gcc
// (aarch64-linux-gnu-gcc for an arm64 test binary) into a shared library,
// which the agent loads like the real one through --cndev-library, fed by a
// fixture file naming the node's MLUs.
package cndevtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/accel-dra/accel-dra/pkg/nativetest"
)

// The mock's environment variables.
const (
	// EnvFixture names the fixture file the mock reads at cndevInit.
	EnvFixture = "ACCEL_DRA_CNDEV_MOCK_FIXTURE"
	// EnvState names a file the mock keeps its sMLU instances in, so they
	// outlive the process as the driver's do.
	EnvState = "ACCEL_DRA_CNDEV_MOCK_STATE"
	// EnvRoot names a root under which the mock creates and removes the
	// instances' /dev/cambricon-caps/cap_devN_miK files.
	EnvRoot = "ACCEL_DRA_CNDEV_MOCK_ROOT"
	// EnvTelemetry names the file of the chips' utilization, temperature
	// and power the mock's telemetry calls report (format in mock_cndev.c).
	EnvTelemetry = "ACCEL_DRA_CNDEV_MOCK_TELEMETRY"
)

// Dir is testdata/cndev: the header, the mock, the layout program and the
// fixtures. It is found from the test's working directory (its package's,
// inside this module), not from this file's compiled path, which
// -trimpath (make test) turns into an import path.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "pkg", "vendors", "cambricon", "testdata", "cndev")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("cndevtest: no go.mod above the working directory: run it from a package of the accel-dra module")
		}
		dir = parent
	}
}

// Fixture is the path of the fixture of a node (mlu270, mlu370-x8, mlu590).
func Fixture(node string) string { return filepath.Join(Dir(), node+".txt") }

// Build compiles the mock into a temporary directory and returns the
// library's path; cflags are added to gcc's (-DCNDEV_MOCK_NO_HEALTH_V2
// builds a library without cndevGetCardHealthStateV2, as older Neuware
// has). It fails the test when gcc is missing: the native backend is
// tested through it or not at all.
func Build(t testing.TB, cflags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "libcndev.so")
	Compile(t, append(append([]string{"-shared", "-fPIC"}, cflags...), "-o", out, filepath.Join(Dir(), "mock_cndev.c"))...)
	return out
}

// Compile runs the C compiler for the test binary's architecture
// (nativetest.CC) with args in Dir.
func Compile(t testing.TB, args ...string) {
	t.Helper()
	nativetest.Compile(t, Dir(), args...)
}

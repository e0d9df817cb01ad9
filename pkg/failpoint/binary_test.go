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

package failpoint_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/failpoint"
)

// pkgPath prefixes the symbols of this package in a binary.
const pkgPath = "github.com/accel-dra/accel-dra/pkg/failpoint."

// TestProductionBinariesCarryNoFailpointCode builds the binaries as make
// build does and looks into them: no symbol of this package (its kill
// path, Points.Inject, is one), and not the environment variable that
// would arm it. The node agent built with -tags failpoint, as the crash
// tests build it, has both: that is what the check would find.
func TestProductionBinariesCarryNoFailpointCode(t *testing.T) {
	goTool := goCommand(t)
	root := moduleRoot(t, goTool)
	out := t.TempDir()
	build := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(goTool, append([]string{"build", "-o", dir + "/"}, args...)...)
		// A -tags in GOFLAGS could add the tag to the production build;
		// the rest (make's -trimpath) stays, so the build reuses the cache.
		cmd.Dir, cmd.Env = root, append(os.Environ(), "GOFLAGS="+withoutTags(os.Getenv("GOFLAGS")))
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %v:\n%s", args, b)
	}
	build(filepath.Join(out, "production"), "./cmd/...")
	bins, err := filepath.Glob(filepath.Join(out, "production", "*"))
	require.NoError(t, err)
	require.Len(t, bins, 4, "the CLI, the node agent, its CDI hook and the webhook")
	for _, bin := range bins {
		syms, env := inspect(t, goTool, bin)
		require.Empty(t, syms, "%s: symbols of package failpoint", filepath.Base(bin))
		require.False(t, env, "%s mentions %s", filepath.Base(bin), failpoint.EnvVar)
	}

	build(filepath.Join(out, "tagged"), "-tags", "failpoint", "./cmd/accel-dra-kubeletplugin")
	syms, env := inspect(t, goTool, filepath.Join(out, "tagged", "accel-dra-kubeletplugin"))
	require.Contains(t, syms, pkgPath+"Points.Inject", "the kill path is in the test build")
	require.True(t, env, "the test build reads %s", failpoint.EnvVar)
}

// inspect lists the failpoint symbols of a binary (go tool nm) and says
// whether it holds the name of the environment variable.
func inspect(t *testing.T, goTool, bin string) (syms []string, env bool) {
	t.Helper()
	out, err := exec.Command(goTool, "tool", "nm", bin).Output()
	require.NoError(t, err, "go tool nm %s", bin)
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && strings.HasPrefix(f[len(f)-1], pkgPath) {
			syms = append(syms, f[len(f)-1])
		}
	}
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	return syms, bytes.Contains(raw, []byte(failpoint.EnvVar))
}

// withoutTags drops every -tags flag from a GOFLAGS value.
func withoutTags(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(strings.TrimLeft(f, "-"), "tags") {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

func goCommand(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// Without go on PATH, the toolchain that built the test.
	p := filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // runtime.GOROOT is the fallback wanted here
	_, err := os.Stat(p)
	require.NoError(t, err, "the go command builds the binaries")
	return p
}

func moduleRoot(t *testing.T, goTool string) string {
	t.Helper()
	out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

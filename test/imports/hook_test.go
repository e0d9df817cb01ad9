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

package imports_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheCDIHookBuildsOnTheStandardLibraryOnly: the container runtime
// runs accel-dra-cdi-hook as root with an environment the container may
// choose, so it must stay a static binary with no dynamic loader
// (docs/security.md). The standard library and the OCI types keep it so;
// a vendor binding (purego) or a cgo package would not.
func TestTheCDIHookBuildsOnTheStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/cmd/accel-dra-cdi-hook").Output()
	require.NoError(t, err)
	allowed := map[string]bool{
		module + "/cmd/accel-dra-cdi-hook":                true,
		module + "/pkg/cdihook":                           true,
		"github.com/opencontainers/runtime-spec/specs-go": true,
	}
	var extra []string
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			extra = append(extra, p)
		}
	}
	require.Empty(t, extra, "accel-dra-cdi-hook builds on more than the standard library and the OCI types")
}

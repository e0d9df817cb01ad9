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
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedBuildModules are the Go modules a cold CI run compiles that can
// share one set of dependency versions: this module, its tools (helm,
// deepcopy-gen, golangci-lint, govulncheck), the image builder, and the
// e2e cluster's Kubernetes (and Kueue, from the same module) and kwok. Go's build cache reuses a compiled
// package only when the package and everything below it are the same
// version, so one module a minor version behind on golang.org/x/sys made
// Kubernetes compile its whole client stack again (test/README.md, CI's
// budget). Left out on purpose: hack/e2e/etcd (etcd v3.7 needs a newer
// grpc and OpenTelemetry than the k8s.io libraries take) and
// hack/e2e/volcano (Volcano v1.14 pins the k8s.io v0.34 libraries).
var sharedBuildModules = []string{
	".",
	"hack/tools",
	"hack/lint",
	"hack/vuln",
	"hack/image",
	"hack/e2e/k8s",
	"hack/e2e/kwok",
}

type goMod struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path, Version string }
	}
}

// requiredVersions reads a go.mod's requirements, with replaced modules at
// their replacement's version (hack/e2e/k8s requires the staging modules
// as v0.0.0 and replaces them).
func requiredVersions(t *testing.T, dir string) map[string]string {
	t.Helper()
	file := filepath.Join("..", "..", dir, "go.mod")
	out, err := exec.Command("go", "mod", "edit", "-json", file).Output()
	require.NoError(t, err, "reading %s", file)
	var mod goMod
	require.NoError(t, json.Unmarshal(out, &mod), "decoding go mod edit -json of %s", file)
	versions := map[string]string{}
	for _, r := range mod.Require {
		versions[r.Path] = r.Version
	}
	for _, r := range mod.Replace {
		if _, ok := versions[r.Old.Path]; ok && r.New.Version != "" {
			versions[r.Old.Path] = r.New.Version
		}
	}
	return versions
}

func TestTheModulesCIBuildsAgreeOnEverySharedDependency(t *testing.T) {
	byPath := map[string]map[string]string{} // module path -> go.mod dir -> version
	for _, dir := range sharedBuildModules {
		for path, version := range requiredVersions(t, dir) {
			if byPath[path] == nil {
				byPath[path] = map[string]string{}
			}
			byPath[path][dir] = version
		}
	}
	var disagree []string
	for path, versions := range byPath {
		seen := map[string]bool{}
		for _, v := range versions {
			seen[v] = true
		}
		if len(seen) > 1 {
			disagree = append(disagree, fmt.Sprintf("%s: %v", path, versions))
		}
	}
	sort.Strings(disagree)
	require.Empty(t, disagree, "these go.mod files require different versions of one module, so a cold build compiles it and everything above it once per version; require the highest in each (go mod edit -require=PATH@VERSION, then go mod tidy)")
}

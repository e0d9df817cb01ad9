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

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var valueCellRE = regexp.MustCompile("`([a-zA-Z][a-zA-Z0-9.<>-]*)`")

// The chart values the install page names in its values table exist in
// the chart's values.yaml, so a renamed value cannot leave the page behind.
// `<name>` in a path stands for any key at that level.
func TestTheInstallPagesValuesExistInTheChart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "deployments", "helm", "accel-dra", "values.yaml"))
	require.NoError(t, err)
	var values map[string]any
	require.NoError(t, yaml.Unmarshal(data, &values))

	pg, err := parsePage("docs/install.md")
	require.NoError(t, err)
	inTable, n := false, 0
	for _, pl := range pg.prose {
		switch {
		case strings.HasPrefix(pl.text, "| value |"):
			inTable = true
			continue
		case !strings.HasPrefix(pl.text, "|"):
			inTable = false
		}
		if !inTable || strings.HasPrefix(pl.text, "|---") {
			continue
		}
		first := strings.Split(pl.text, "|")[1]
		for _, m := range valueCellRE.FindAllStringSubmatch(first, -1) {
			n++
			require.True(t, hasPath(values, strings.Split(m[1], ".")), "docs/install.md:%d: the chart has no value %s", pl.line, m[1])
		}
	}
	require.Greater(t, n, 10, "no values table found in docs/install.md (a table whose header starts with | value |)")
}

func hasPath(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if strings.HasPrefix(path[0], "<") {
		for _, child := range m {
			if hasPath(child, path[1:]) {
				return true
			}
		}
		return len(m) > 0 && len(path) == 1
	}
	child, ok := m[path[0]]
	return ok && hasPath(child, path[1:])
}

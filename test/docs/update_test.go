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
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the output shown under each `$ accel-dra` line of the pages' console blocks with what the command prints now (blocks that leave lines out with `...` are kept)")

// With -update, the pages' console output is rewritten from the commands,
// as golden files are elsewhere: go test ./test/docs -run Update -update,
// then read the diff.
func TestUpdateConsoleOutput(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite the pages' console output")
	}
	bin := binaries(t)
	for _, pg := range pages(t) {
		path := filepath.Join(repoRoot, pg.path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.Split(string(data), "\n")
		var out []string
		inConsole, indent := false, ""
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			if m := fenceRE.FindStringSubmatch(l); m != nil {
				inConsole = !inConsole && m[3] == "console"
				indent = m[1]
				out = append(out, l)
				continue
			}
			cmd, ok := strings.CutPrefix(strings.TrimPrefix(l, indent), "$ ")
			if !inConsole || !ok || !strings.HasPrefix(cmd, "accel-dra ") || strings.HasSuffix(cmd, `\`) {
				out = append(out, l)
				continue
			}
			// The output shown: up to the next command or the closing fence.
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(strings.TrimPrefix(lines[end], indent), "$ ") && fenceRE.FindStringSubmatch(lines[end]) == nil {
				end++
			}
			shown := lines[i+1 : end]
			out = append(out, l)
			if hasGap(shown) {
				out = append(out, shown...)
			} else {
				c := exec.Command("sh", "-c", cmd)
				c.Dir = repoRoot
				c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
				var buf bytes.Buffer
				c.Stdout, c.Stderr = &buf, &buf
				_ = c.Run() // the exit code is the other test's business
				for _, o := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
					if o != "" {
						o = indent + o
					}
					out = append(out, o)
				}
				// Keep a blank line that separates this output from the
				// next command.
				if n := len(shown); n > 0 && strings.TrimSpace(shown[n-1]) == "" && end < len(lines) && fenceRE.FindStringSubmatch(lines[end]) == nil {
					out = append(out, "")
				}
			}
			i = end - 1
		}
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644))
	}
}

func hasGap(lines []string) bool {
	for _, l := range lines {
		if isOutputGap(l) {
			return true
		}
	}
	return false
}

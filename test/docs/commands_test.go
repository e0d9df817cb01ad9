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
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the CLI and the node agent from this tree once, so the
// pages are checked against the code next to them, not an installed copy.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "accel-dra-docs-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(os.PathSeparator), "./cmd/accel-dra", "./cmd/accel-dra-kubeletplugin")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the binaries: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// docCommand is one `accel-dra ...` line of a page, with the output the
// page shows for it (console blocks) and the exit code it expects.
type docCommand struct {
	block  block
	line   string
	output []string // nil: the page shows none
	exit   int
}

// commands returns the accel-dra command lines of sh and console blocks.
// A sh line is a command as written (continuations joined); a console
// line is `$ command` followed by its output up to the next `$`.
func commands(t *testing.T) []docCommand {
	t.Helper()
	var out []docCommand
	for _, pg := range pages(t) {
		for _, b := range pg.blocks {
			exit, err := exitCode(b)
			require.NoError(t, err)
			switch b.lang {
			case "sh", "bash", "shell":
				for _, l := range joinContinuations(b.lines) {
					if strings.HasPrefix(strings.TrimSpace(l), "accel-dra ") {
						out = append(out, docCommand{block: b, line: strings.TrimSpace(l), exit: exit})
					}
				}
			case "console":
				lines := joinContinuations(b.lines)
				for i := 0; i < len(lines); i++ {
					cmd, ok := strings.CutPrefix(lines[i], "$ ")
					if !ok || !strings.HasPrefix(cmd, "accel-dra ") {
						continue
					}
					c := docCommand{block: b, line: cmd, exit: exit, output: []string{}}
					for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
						i++
						c.output = append(c.output, lines[i])
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func joinContinuations(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`)
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// Every accel-dra command a page shows runs from the repository root with
// the binary built from this tree, exits as the page says (0 unless the
// block has <!-- doc: exit=N -->), and prints what the page shows: line by
// line, runs of spaces counted as one, a line `...` standing for lines
// left out.
func TestEveryAccelDraCommandInThePagesRunsAndPrintsWhatThePageShows(t *testing.T) {
	bin := binaries(t)
	cmds := commands(t)
	require.Greater(t, len(cmds), 10, "few accel-dra commands found: is the block pattern broken?")
	for _, c := range cmds {
		t.Run(fmt.Sprintf("%s:%d", c.block.page, c.block.line), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", c.line)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else {
				require.NoError(t, err, "running %q", c.line)
			}
			require.Equal(t, c.exit, code, "%s: %q exited %d, the page expects %d; it printed:\n%s", c.block, c.line, code, c.exit, buf.String())
			if len(c.output) > 0 {
				require.NoError(t, sameOutput(c.output, strings.Split(buf.String(), "\n")),
					"%s: %q prints something else than the page shows; it printed:\n%s", c.block, c.line, buf.String())
			}
		})
	}
}

var spaces = regexp.MustCompile(`\s+`)

func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		rest := strings.TrimLeft(l, " ")
		// Indentation is kept (YAML output), runs of spaces inside a line
		// are one (table columns).
		out = append(out, l[:len(l)-len(rest)]+spaces.ReplaceAllString(rest, " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func isOutputGap(l string) bool { l = strings.TrimSpace(l); return l == "..." || l == "…" }

// sameOutput compares what a page shows with what the command printed.
func sameOutput(shown, got []string) error {
	shown, got = normalize(shown), normalize(got)
	if matchOutput(shown, got) {
		return nil
	}
	return fmt.Errorf("the page shows\n%s", strings.Join(shown, "\n"))
}

func matchOutput(shown, got []string) bool {
	if len(shown) == 0 {
		return len(got) == 0
	}
	if isOutputGap(shown[0]) {
		for skip := 0; skip <= len(got); skip++ {
			if matchOutput(shown[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && shown[0] == got[0] && matchOutput(shown[1:], got[1:])
}

func TestOutputMatching(t *testing.T) {
	got := []string{"A  B", "1  2", "3  4", ""}
	require.NoError(t, sameOutput([]string{"A B", "1 2", "3 4"}, got))
	require.NoError(t, sameOutput([]string{"A B", "..."}, got))
	require.NoError(t, sameOutput([]string{"...", "3 4"}, got))
	require.Error(t, sameOutput([]string{"A B", "3 4"}, got))
	require.Error(t, sameOutput([]string{"A B", "1 2"}, got))
}

var agentFlagRE = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)\b.*\[([A-Z_]+)(?:=[a-z]+)?\]`)

// The agent reference lists every flag of the agent that has an
// environment variable, with that variable, as --help prints them.
func TestTheAgentReferenceListsEveryAgentFlagAndItsVariable(t *testing.T) {
	bin := binaries(t)
	out, err := exec.Command(filepath.Join(bin, "accel-dra-kubeletplugin"), "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "agent.md"))
	require.NoError(t, err)
	flags := agentFlagRE.FindAllStringSubmatch(string(out), -1)
	require.Greater(t, len(flags), 10, "no flags with variables found in:\n%s", out)
	for _, f := range flags {
		require.True(t, strings.Contains(string(page), "`--"+f[1]+"`"), "docs/agent.md does not describe the agent's flag --%s", f[1])
		require.True(t, strings.Contains(string(page), "`"+f[2]+"`"), "docs/agent.md does not name %s, the variable of --%s", f[2], f[1])
	}
}

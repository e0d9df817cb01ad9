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

// Package discoverytest holds the test helpers the vendor discovery backends
// share: fixture nodes recorded under a package's testdata, copies of them a
// test can break, and command runners that answer from memory or refuse to
// run anything.
//
// A fixture node is a directory testdata/<node> holding the node's host
// root under root/ (device files, sysfs, driver files) and the recorded
// output of a vendor tool under <tool>/, one file per command as
// discovery.RecordedRunner reads them. Paths are relative to the working
// directory, which go test sets to the package under test.
package discoverytest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Fixture returns the root tree of a fixture node and a runner answering
// from the node's recordings in toolDir (e.g. "npu-smi", "cnmon").
func Fixture(node, toolDir string) (root string, runner discovery.RecordedRunner) {
	dir := filepath.Join("testdata", node)
	return filepath.Join(dir, "root"), discovery.RecordedRunner{Dir: filepath.Join(dir, toolDir)}
}

// ReadRecording returns the recorded output of `tool args…` on a fixture
// node, so a test can edit it and serve it through a MapRunner.
func ReadRecording(t testing.TB, node, tool string, args ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", node, tool, discovery.RecordingName(tool, args...)))
	require.NoError(t, err)
	return string(b)
}

// CopyTree copies a fixture root into a temporary directory, keeping
// symlinks (sysfs links), so a test can break one thing in it.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
	})
	require.NoError(t, err)
	return dst
}

// MapRunner is a discovery.CommandRunner answering each command from the
// output stored under its command line (discovery.CommandLine, e.g.
// "cnmon topo -m"). A command without an entry fails.
type MapRunner map[string]string

// Run implements discovery.CommandRunner.
func (m MapRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	line := discovery.CommandLine(name, args...)
	out, ok := m[line]
	if !ok {
		return nil, fmt.Errorf("running %s: not found", line)
	}
	return []byte(out), nil
}

// Step is one command a ScriptedRunner expects, as
// discovery.CommandLine prints it, and the file of recorded output it
// answers with.
type Step struct{ Cmd, File string }

// ScriptedRunner answers the expected commands in order with recorded
// output from Dir and fails the test on any other command: a vendor tool
// as a sequence of recordings (partition tools list, change, list again).
type ScriptedRunner struct {
	T     testing.TB
	Dir   string
	Steps []Step
}

// Run implements discovery.CommandRunner.
func (s *ScriptedRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	s.T.Helper()
	cmd := discovery.CommandLine(name, args...)
	require.NotEmpty(s.T, s.Steps, "unexpected command %q", cmd)
	next := s.Steps[0]
	s.Steps = s.Steps[1:]
	require.Equal(s.T, next.Cmd, cmd)
	data, err := os.ReadFile(filepath.Join(s.Dir, next.File))
	require.NoError(s.T, err)
	return data, nil
}

// Done fails the test if expected commands were not run.
func (s *ScriptedRunner) Done() { require.Empty(s.T, s.Steps, "commands not run") }

// FailingRunner is a discovery.CommandRunner for code that must not run a
// tool: every command fails, and fails the test T.
type FailingRunner struct{ T testing.TB }

// ErrMustNotRun is what FailingRunner returns.
var ErrMustNotRun = errors.New("must not run")

// Run implements discovery.CommandRunner.
func (r FailingRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.T.Errorf("ran %s, but nothing should run", discovery.CommandLine(name, args...))
	return nil, ErrMustNotRun
}

// ReplaceOnce replaces the first old in s by new, failing the test if s
// has no old, so an edit of a recording cannot silently miss.
func ReplaceOnce(t testing.TB, s, old, new string) string {
	t.Helper()
	require.Contains(t, s, old)
	return strings.Replace(s, old, new, 1)
}

// WriteFiles creates empty files at the given slash-separated paths under
// root (e.g. "dev/davinci0"), with their parent directories.
func WriteFiles(t testing.TB, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
}

// BufferedContext returns a context whose logger keeps what is logged, and
// a function returning the log so far.
func BufferedContext(t testing.TB) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return klog.NewContext(context.Background(), logger), func() string {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

// RequireParseError asserts that err is, or wraps, a *discovery.ParseError
// from source at line (0: not tied to a line) whose message contains msg,
// and that the error text says so ("parsing <source>: line <line>: …").
func RequireParseError(t testing.TB, err error, source string, line int, msg string) {
	t.Helper()
	var perr *discovery.ParseError
	require.True(t, errors.As(err, &perr), "want a ParseError, got %v", err)
	require.Equal(t, source, perr.Source)
	require.Equal(t, line, perr.Line)
	require.ErrorContains(t, err, "parsing "+source+": ")
	if line > 0 {
		require.ErrorContains(t, err, fmt.Sprintf("line %d: ", line))
	}
	require.ErrorContains(t, err, msg)
}

// AddFileSeeds adds the content of every file matching pattern (a
// filepath.Glob pattern relative to the package under test, e.g.
// "testdata/*/npu-smi/npu-smi_info.txt") and the extra inputs to a fuzz
// target's seed corpus. It fails if no file matches, so a moved fixture
// cannot silently empty the corpus.
func AddFileSeeds(f *testing.F, pattern string, extra ...string) {
	f.Helper()
	paths, err := filepath.Glob(pattern)
	require.NoError(f, err)
	require.NotEmpty(f, paths, "no seed files match %s", pattern)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// RequireParseErrorOf asserts what every parser promises about a rejected
// input: err is, or wraps, a *discovery.ParseError naming source, with a
// message, whose line (if any) is one of the input's lines.
func RequireParseErrorOf(t testing.TB, err error, source string, input []byte) {
	t.Helper()
	var perr *discovery.ParseError
	require.True(t, errors.As(err, &perr), "want a ParseError, got %T: %v", err, err)
	require.Equal(t, source, perr.Source)
	require.NotEmpty(t, perr.Msg)
	require.GreaterOrEqual(t, perr.Line, 0)
	require.LessOrEqual(t, perr.Line, strings.Count(string(input), "\n")+1, "line of %v", err)
	require.ErrorContains(t, err, "parsing "+source+": ")
}

// RequireInventoryInvariants asserts what a successful discovery promises
// whatever the tools printed: chip indices non-negative and unique, memory
// and cores not negative, and link groups consistent (a "pcie-N" group is
// the chip alone with link type pcie; any other group has two or more
// chips of one link type).
func RequireInventoryInvariants(t testing.TB, inv inventory.Inventory) {
	t.Helper()
	seen := map[int]bool{}
	members := map[string][]inventory.Chip{}
	for _, c := range inv.Chips {
		require.GreaterOrEqual(t, c.Index, 0, "chip index")
		require.False(t, seen[c.Index], "chip index %d twice", c.Index)
		seen[c.Index] = true
		require.GreaterOrEqual(t, c.MemoryBytes, int64(0), "memory of chip %d", c.Index)
		require.GreaterOrEqual(t, c.Cores, 0, "cores of chip %d", c.Index)
		require.NotEmpty(t, c.LinkGroup, "link group of chip %d", c.Index)
		members[c.LinkGroup] = append(members[c.LinkGroup], c)
	}
	for g, cs := range members {
		if cs[0].LinkType == inventory.LinkPCIe {
			require.Len(t, cs, 1, "PCIe group %s", g)
			require.Equal(t, fmt.Sprintf("pcie-%d", cs[0].Index), g)
			continue
		}
		require.GreaterOrEqual(t, len(cs), 2, "link group %s", g)
		for _, c := range cs {
			require.Equal(t, cs[0].LinkType, c.LinkType, "link type in group %s", g)
		}
	}
}

// FuzzParser fuzzes a parser of tool output or a file: every input it
// rejects must give a ParseError naming source (RequireParseErrorOf), and
// what it accepts is handed to check with the input, which asserts the
// parser's invariants.
func FuzzParser[T any](f *testing.F, source string, parse func(source string, data []byte) (T, error), check func(t *testing.T, data []byte, parsed T)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		parsed, err := parse(source, data)
		if err != nil {
			RequireParseErrorOf(t, err, source, data)
			return
		}
		check(t, data, parsed)
	})
}

// RequireDiscovered runs a backend whose tool output was fuzzed: it fails
// with an error matching errPattern (naming the tool or the chip), or
// returns an inventory that keeps RequireInventoryInvariants.
func RequireDiscovered(t *testing.T, b discovery.Backend, errPattern string) {
	t.Helper()
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0))))
	inv, err := b.Discover(ctx)
	if err != nil {
		require.Regexp(t, errPattern, err.Error())
		return
	}
	RequireInventoryInvariants(t, inv)
}

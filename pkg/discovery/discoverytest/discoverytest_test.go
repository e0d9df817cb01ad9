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

package discoverytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// fixtureNode writes a fixture node "n1" with a cnmon recording into a
// temporary testdata directory and makes that the working directory.
func fixtureNode(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata", "n1", "root", "dev"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata", "n1", "cnmon"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "testdata", "n1", "cnmon", "cnmon_topo_-m.txt"), []byte("MLU0 MLU1\n"), 0o644))
	t.Chdir(dir)
}

func TestFixtureAndReadRecordingFindANodeUnderTestdata(t *testing.T) {
	fixtureNode(t)
	root, runner := Fixture("n1", "cnmon")
	require.Equal(t, filepath.Join("testdata", "n1", "root"), root)
	require.DirExists(t, filepath.Join(root, "dev"))
	out, err := runner.Run(context.Background(), "cnmon", "topo", "-m")
	require.NoError(t, err)
	require.Equal(t, "MLU0 MLU1\n", string(out))
	require.Equal(t, "MLU0 MLU1\n", ReadRecording(t, "n1", "cnmon", "topo", "-m"))
}

func TestCopyTreeCopiesFilesDirectoriesAndSymlinks(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys", "devices", "pci0000:00", "0000:01:00.0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sys", "devices", "pci0000:00", "0000:01:00.0", "vendor"), []byte("0x19e5\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys", "bus", "pci", "devices"), 0o755))
	link := filepath.Join("..", "..", "..", "devices", "pci0000:00", "0000:01:00.0")
	require.NoError(t, os.Symlink(link, filepath.Join(src, "sys", "bus", "pci", "devices", "0000:01:00.0")))

	dst := CopyTree(t, src)
	require.NotEqual(t, src, dst)
	got, err := os.Readlink(filepath.Join(dst, "sys", "bus", "pci", "devices", "0000:01:00.0"))
	require.NoError(t, err)
	require.Equal(t, link, got, "symlinks are copied as links")
	b, err := os.ReadFile(filepath.Join(dst, "sys", "bus", "pci", "devices", "0000:01:00.0", "vendor"))
	require.NoError(t, err)
	require.Equal(t, "0x19e5\n", string(b))

	require.NoError(t, os.Remove(filepath.Join(dst, "sys", "devices", "pci0000:00", "0000:01:00.0", "vendor")))
	require.FileExists(t, filepath.Join(src, "sys", "devices", "pci0000:00", "0000:01:00.0", "vendor"), "the copy is independent")
}

func TestMapRunnerAnswersByCommandLine(t *testing.T) {
	r := MapRunner{"cnmon topo -m": "matrix"}
	out, err := r.Run(context.Background(), "cnmon", "topo", "-m")
	require.NoError(t, err)
	require.Equal(t, "matrix", string(out))
	_, err = r.Run(context.Background(), "cnmon", "info")
	require.EqualError(t, err, "running cnmon info: not found")
}

// recordingTB is a testing.TB that keeps what Errorf reports.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestFailingRunnerFailsTheTestAndTheCommand(t *testing.T) {
	tb := &recordingTB{TB: t}
	var runner discovery.CommandRunner = FailingRunner{T: tb}
	_, err := runner.Run(context.Background(), "npu-smi", "info", "-m")
	require.ErrorIs(t, err, ErrMustNotRun)
	require.Equal(t, []string{"ran npu-smi info -m, but nothing should run"}, tb.errors)
}

func TestReplaceOnceReplacesOnlyTheFirstOccurrence(t *testing.T) {
	require.Equal(t, "a-X-b-b", ReplaceOnce(t, "a-b-b-b", "b", "X"))
}

func TestWriteFilesCreatesEmptyFilesAndTheirDirectories(t *testing.T) {
	root := t.TempDir()
	WriteFiles(t, root, "dev/davinci0", "dev/sub/x", "top")
	for _, f := range []string{"dev/davinci0", "dev/sub/x", "top"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.Empty(t, b)
	}
}

func TestBufferedContextKeepsTheLog(t *testing.T) {
	ctx, logs := BufferedContext(t)
	klog.FromContext(ctx).Info("Skipping a device file that the tool does not list", "device", "/dev/davinci3")
	require.Contains(t, logs(), "Skipping a device file that the tool does not list")
	require.Contains(t, logs(), "/dev/davinci3")
}

func TestRequireParseErrorAcceptsAWrappedParseError(t *testing.T) {
	err := fmt.Errorf("listing MLU cards: %w", &discovery.ParseError{Source: "cnmon info", Line: 3, Text: "Card x", Msg: "card number is not a number"})
	RequireParseError(t, err, "cnmon info", 3, "card number")
	RequireParseError(t, &discovery.ParseError{Source: "cnmon info", Msg: "no card"}, "cnmon info", 0, "no card")
}

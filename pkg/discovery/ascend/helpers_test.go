package ascend

import (
	"context"
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
)

// fixture returns the root tree and the recorded npu-smi runner of a node
// under testdata.
func fixture(node string) (string, discovery.RecordedRunner) {
	dir := filepath.Join("testdata", node)
	return filepath.Join(dir, "root"), discovery.RecordedRunner{Dir: filepath.Join(dir, "npu-smi")}
}

// readRecording returns a recorded npu-smi output of a node.
func readRecording(t *testing.T, node string, args ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", node, "npu-smi", discovery.RecordingName("npu-smi", args...)))
	require.NoError(t, err)
	return string(b)
}

// copyTree copies a fixture root into a temporary directory, keeping
// symlinks, so a test can break one thing in it.
func copyTree(t *testing.T, src string) string {
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

// mapRunner answers commands from a map keyed by command line.
type mapRunner map[string]string

func (m mapRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	line := discovery.CommandLine(name, args...)
	out, ok := m[line]
	if !ok {
		return nil, fmt.Errorf("running %s: not found", line)
	}
	return []byte(out), nil
}

// failingRunner fails the test when anything runs.
type failingRunner struct{ t *testing.T }

func (r failingRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.t.Errorf("ran %s, but nothing should run", discovery.CommandLine(name, args...))
	return nil, fmt.Errorf("must not run")
}

// replaceOnce replaces the first old in s, failing if there is none.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	require.Contains(t, s, old)
	return strings.Replace(s, old, new, 1)
}

// Command lines of the three npu-smi queries, as mapRunner keys.
const (
	cmdInfo = "npu-smi info"
	cmdMap  = "npu-smi info -m"
	cmdTopo = "npu-smi info -t topo"
)

// recordings returns a node's three recorded npu-smi outputs as a mapRunner,
// so a test can break one of them.
func recordings(t *testing.T, node string) mapRunner {
	t.Helper()
	return mapRunner{
		cmdInfo: readRecording(t, node, "info"),
		cmdMap:  readRecording(t, node, "info", "-m"),
		cmdTopo: readRecording(t, node, "info", "-t", "topo"),
	}
}

// bufferedContext returns a context whose logger keeps what is logged, and
// a function returning the log so far.
func bufferedContext(t *testing.T) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return klog.NewContext(context.Background(), logger), func() string {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

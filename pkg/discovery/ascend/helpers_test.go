package ascend

import (
	"testing"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

// fixture returns the root tree and the recorded npu-smi runner of a node
// under testdata.
func fixture(node string) (string, discovery.RecordedRunner) {
	return discoverytest.Fixture(node, "npu-smi")
}

// readRecording returns a recorded npu-smi output of a node.
func readRecording(t *testing.T, node string, args ...string) string {
	t.Helper()
	return discoverytest.ReadRecording(t, node, "npu-smi", args...)
}

// Command lines of the three npu-smi queries, as MapRunner keys.
const (
	cmdInfo = "npu-smi info"
	cmdMap  = "npu-smi info -m"
	cmdTopo = "npu-smi info -t topo"
)

// recordings returns a node's three recorded npu-smi outputs as a MapRunner,
// so a test can break one of them.
func recordings(t *testing.T, node string) discoverytest.MapRunner {
	t.Helper()
	return discoverytest.MapRunner{
		cmdInfo: readRecording(t, node, "info"),
		cmdMap:  readRecording(t, node, "info", "-m"),
		cmdTopo: readRecording(t, node, "info", "-t", "topo"),
	}
}

package cambricon

import (
	"testing"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// fixture returns the root tree and the recorded cnmon runner of a node
// under testdata.
func fixture(node string) (string, discovery.RecordedRunner) {
	return discoverytest.Fixture(node, "cnmon")
}

// readRecording returns a recorded cnmon output of a node.
func readRecording(t *testing.T, node string, args ...string) string {
	t.Helper()
	return discoverytest.ReadRecording(t, node, "cnmon", args...)
}

// templateOf finds a template of chip c by its name.
func templateOf(c inventory.Chip, name string) (vendors.Template, bool) {
	m, ok := vendors.PartitionModelOf(Cambricon{}, c)
	if !ok {
		return vendors.Template{}, false
	}
	return m.Template(name)
}

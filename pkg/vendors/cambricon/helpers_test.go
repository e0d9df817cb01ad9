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

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

package ascend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
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
	// cmdVNPUMode reads whether the node is in vNPU docker mode.
	cmdVNPUMode = "npu-smi info -t vnpu-mode"
)

// recordings returns a node's three recorded npu-smi outputs as a MapRunner,
// so a test can break one of them.
func recordings(t *testing.T, node string) discoverytest.MapRunner {
	t.Helper()
	r := discoverytest.MapRunner{
		cmdInfo:     readRecording(t, node, "info"),
		cmdMap:      readRecording(t, node, "info", "-m"),
		cmdTopo:     readRecording(t, node, "info", "-t", "topo"),
		cmdVNPUMode: readRecording(t, node, "info", "-t", "vnpu-mode"),
	}
	// One phyid-remap recording per device file, where the node has them.
	for phy := 0; ; phy++ {
		path := filepath.Join("testdata", node, "npu-smi", fmt.Sprintf("npu-smi_info_-t_phyid-remap_-p_%d.txt", phy))
		if _, err := os.Stat(path); err != nil {
			break
		}
		r[cmdRemap(phy)[0]] = readRecording(t, node, "info", "-t", "phyid-remap", "-p", strconv.Itoa(phy))
	}
	return r
}

// cmdRemap are the command lines asking npu-smi for the chip behind each
// of the physical ids.
func cmdRemap(phys ...int) []string {
	var out []string
	for _, p := range phys {
		out = append(out, fmt.Sprintf("npu-smi info -t phyid-remap -p %d", p))
	}
	return out
}

// cmdHealth is the command line asking npu-smi for one chip's health and
// error codes.
func cmdHealth(npu, chip int) string {
	return fmt.Sprintf("npu-smi info -t health -i %d -c %d", npu, chip)
}

// healthArgs are the npu-smi arguments of cmdHealth, for readRecording.
func healthArgs(npu, chip int) []string {
	return []string{"info", "-t", "health", "-i", fmt.Sprint(npu), "-c", fmt.Sprint(chip)}
}

// loggingRunner passes every command to next and keeps its command line,
// so a test can count what a discovery ran.
type loggingRunner struct {
	next discovery.CommandRunner
	ran  []string
}

func (r *loggingRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.ran = append(r.ran, discovery.CommandLine(name, args...))
	return r.next.Run(ctx, name, args...)
}

// runnerFunc is a discovery.CommandRunner answering with a function.
type runnerFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

func (f runnerFunc) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return f(ctx, name, args...)
}

// templateOf finds a template of chip c by its name.
func templateOf(c inventory.Chip, name string) (vendors.Template, bool) {
	m, ok := vendors.PartitionModelOf(Ascend{}, c)
	if !ok {
		return vendors.Template{}, false
	}
	return m.Template(name)
}

// readFile returns a file under the package directory.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// dropLines removes the lines of s that start with one of prefixes, and
// fails when a prefix starts no line.
func dropLines(t *testing.T, s string, prefixes ...string) string {
	t.Helper()
	var kept []string
	used := map[string]bool{}
lines:
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				used[p] = true
				continue lines
			}
		}
		kept = append(kept, l)
	}
	for _, p := range prefixes {
		require.True(t, used[p], "no line starts with %q", p)
	}
	return strings.Join(kept, "\n")
}

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

package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// noTools fails the test on any tool command: with libcndev loaded, the
// plugin runs no cnmon.
type noTools struct{ t testing.TB }

func (r noTools) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.t.Errorf("ran %s %s with libcndev loaded", name, strings.Join(args, " "))
	return nil, fmt.Errorf("no tools here")
}

// TestThePluginPreparesSMLUsThroughCNDev discovers the MLU370-X8 fixture
// node through the mock libcndev, serves it with sMLUs, and prepares and
// unprepares an sMLU claim with the instance made and destroyed by the
// library, not by cnmon.
func TestThePluginPreparesSMLUsThroughCNDev(t *testing.T) {
	needsRoot(t, "mknod of the node's fake device nodes")
	lib := cndevtest.Build(t)
	state := filepath.Join(t.TempDir(), "smlu-state")
	t.Setenv(cndevtest.EnvFixture, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvState, state)

	_, ctx := ktesting.NewTestContext(t)
	inv, err := cambricon.New(cambricon.Config{Root: "../../pkg/vendors/cambricon/testdata/mlu370-x8/root", Runner: noTools{t}, Library: lib}).Discover(ctx)
	require.NoError(t, err)
	require.Equal(t, "libcndev.so cndevGetSMLUMode", inv.Chips[5].Sources["partitionMode"])
	l, err := cambricon.OpenCNDev("/", lib)
	require.NoError(t, err)

	n := startNode(t, nodeOptions{Inventory: inv, Vendor: cambricon.Vendor, ChipModes: string(partitions.ModePartitioned), Runner: noTools{t}, Setup: func(n *node) {
		t.Setenv(cndevtest.EnvRoot, n.root)
		n.configure = func(cfg *driver.Config) { cfg.PartitionTool = &cambricon.PartitionTool{Runner: noTools{t}, Library: l} }
	}})
	c := n.claim("infer", []string{"mlu-5-smlu-50p-0"})
	ids := n.mustPrepare(c)
	require.Empty(t, n.commands.changes(), "no cnmon")
	raw, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("5 1 1 smlu5-1 50 %d\n", int64(11654)<<20), string(raw), "the library made instance 1 of profile 1 (1/2) on card 5")
	require.FileExists(t, filepath.Join(n.root, "/dev/cambricon-caps/cap_dev5_mi1"))

	ctr := n.container(ids)
	// Not the whole card's commu5: the device plugin gives an sMLU
	// container only the card's node, its ipcm node and the instance's.
	want := []string{"/dev/cambricon-caps/cap_dev5_mi1", "/dev/cambricon_dev5", "/dev/cambricon_ipcm5"}
	want = append(want, n.inv.SharedDeviceNodes[cambricon.Vendor]...)
	sort.Strings(want)
	require.Equal(t, want, devicePaths(ctr))
	// Nor CAMBRICON_VISIBLE_DEVICES: the device plugin never sets it for
	// an sMLU (server.go PrepareResponse).
	require.NotContains(t, envMap(ctr), "CAMBRICON_VISIBLE_DEVICES")

	n.unprepare(c)
	raw, err = os.ReadFile(state)
	require.NoError(t, err)
	require.Empty(t, string(raw), "unprepare destroyed the instance through the library")
	require.NoFileExists(t, filepath.Join(n.root, "/dev/cambricon-caps/cap_dev5_mi1"))
}

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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// TestACheckpointOfTheFormatBeforeLoadsAndItsClaimsUnprepare starts the
// plugin on the state the agent left before checkpoint v2: the v1
// checkpoint it wrote for a whole chip, two vNPUs, a share and an admin
// claim (pkg/checkpoint/testdata/v1.json) and the fake tool's state of
// those vNPUs. The claims still hold their devices, and each unprepares:
// the vNPUs are destroyed and the checkpoint is saved empty, in v2.
func TestACheckpointOfTheFormatBeforeLoadsAndItsClaimsUnprepare(t *testing.T) {
	copyFile := func(from, to string) {
		raw, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, raw, 0o600))
	}
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "Partitioned,npu-3=Shared", Setup: func(n *node) {
		require.NoError(t, os.MkdirAll(n.stateDir, 0o750))
		copyFile(filepath.Join("..", "..", "pkg", "checkpoint", "testdata", "v1.json"), filepath.Join(n.stateDir, driver.CheckpointFile))
		copyFile(filepath.Join("testdata", "checkpoint-v1", profilenode.PartitionStateFile), filepath.Join(n.stateDir, profilenode.PartitionStateFile))
	}})
	require.Contains(t, n.logOf(), `Read a checkpoint of an older format; the next change of a claim saves it in the current one`)
	require.Empty(t, n.commands.changes(), "the vNPUs the checkpoint records are not orphans")
	require.Len(t, n.partitionsOnChips(), 2)

	for device, holder := range map[string]string{
		"npu-0": "device npu-0 is already prepared for claim default/train",
		"npu-1": "device npu-1 has partition npu-1-vir05-1c-16g-0 prepared for claim default/infer",
		"npu-3": "device npu-3 is already prepared for claim default/serve",
	} {
		thief := n.claim("thief-"+device, []string{device})
		require.Contains(t, n.prepare(thief)[string(thief.UID)].Error, holder, "the claims it lists still hold their devices")
	}
	monitorHoldsNothing := n.claim("work", []string{"npu-2"})
	n.mustPrepare(monitorHoldsNothing)

	// The kubelet names the claims it unprepares; the checkpoint has them.
	var claims []*resourceapi.ResourceClaim
	for name, uid := range map[string]types.UID{"train": "uid-train-1", "infer": "uid-infer-2", "serve": "uid-serve-3", "monitor": "uid-monitor-4"} {
		claims = append(claims, &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid}})
	}
	n.unprepare(claims...)
	changes := n.commands.changes()
	require.Len(t, changes, 2)
	for _, cmd := range changes {
		require.True(t, strings.HasPrefix(cmd, "npu-smi set -t destroy-vnpu -i 1 -c 0 -v 11"), cmd)
	}
	require.Empty(t, n.partitionsOnChips())
	n.unprepare(monitorHoldsNothing)

	raw, err := os.ReadFile(filepath.Join(n.stateDir, driver.CheckpointFile))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"version": "`+checkpoint.Version+`"`, "saved in the current format")
	data, err := checkpoint.New(n.stateDir, driver.CheckpointFile).Load()
	require.NoError(t, err)
	require.Empty(t, data.Claims)
	require.Empty(t, n.cdiFiles())
}

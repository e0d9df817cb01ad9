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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
)

// TestARebootedNodeGetsItsClaimsBack: the node reboots while claims are
// prepared. /var/run/cdi is tmpfs, so the CDI specs (ours and the helper's
// device metadata specs) are gone, and so are the vNPUs and sMLUs; the
// checkpoint stays. The kubelet starts the pods' containers again with
// the CDI device IDs it recorded, without a new prepare: the restarted
// agent must have every spec and partition back by the time it publishes,
// and the kubelet's prepare, if it comes, gets the same IDs.
func TestARebootedNodeGetsItsClaimsBack(t *testing.T) {
	for v, n := range crashNodes {
		t.Run(string(v), func(t *testing.T) {
			a := newAgent(t, n.profile, n.chipModes)
			// The helper writes a device metadata CDI spec of its own per
			// request, which the kubelet's recorded IDs name too.
			a.cfg.DeviceMetadata = true
			setBootID(t, a, "boot-1")
			a.start("")
			drv := registry.DriverFor(v)
			var claims []*resourceapi.ResourceClaim
			ids := map[types.UID][]string{}
			wantPartitions := 0
			for i, k := range crashKinds {
				if k.vendor != v {
					continue
				}
				c := k.allocated(fmt.Sprintf("claim-%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
				a.addClaim(c)
				resp, err := a.prepare(drv, c)
				require.NoError(t, err)
				require.Empty(t, resp[string(c.UID)].Error)
				for _, d := range resp[string(c.UID)].Devices {
					ids[c.UID] = append(ids[c.UID], d.CdiDeviceIds...)
				}
				claims = append(claims, c)
				wantPartitions += k.partitions
			}
			uids := make([]types.UID, 0, len(claims))
			for _, c := range claims {
				uids = append(uids, c.UID)
			}
			require.Len(t, a.requireConsistent(v, uids, "prepared").partitions, wantPartitions)
			a.stop()

			// The reboot: tmpfs and partitions gone, a new boot id.
			require.NoError(t, os.RemoveAll(a.cfg.CDIDir))
			require.NoError(t, os.Remove(filepath.Join(a.cfg.StateDir, drv, profilenode.PartitionStateFile)))
			setBootID(t, a, "boot-2")
			a.start("")
			a.waitPublished() // the driver publishes after preparing again

			st := a.requireConsistent(v, uids, "after the reboot")
			require.ElementsMatch(t, uids, st.specs, "every prepared claim has its CDI spec again")
			require.Len(t, st.partitions, wantPartitions, "every partition is made again")
			require.Equal(t, "boot-2", st.checkpoint.BootID)
			exists := map[string]bool{}
			for _, p := range st.partitions {
				exists[p.DeviceNode] = true
			}
			for _, c := range claims {
				require.Contains(t, strings.Join(ids[c.UID], " "), "/metadata=", "the kubelet's IDs name the metadata spec")
				// What the container runtime does with the kubelet's IDs:
				// every spec they name is back.
				containerOf(t, a.cfg.CDIDir, ids[c.UID])
				for _, d := range st.checkpoint.Claims[c.UID].Devices {
					if d.Partition != nil {
						require.True(t, exists[d.Partition.DeviceNode], "claim %s's partition %s exists", c.UID, d.Partition.DeviceNode)
					}
				}
				resp, err := a.prepare(drv, c)
				require.NoError(t, err)
				require.Empty(t, resp[string(c.UID)].Error)
				var again []string
				for _, d := range resp[string(c.UID)].Devices {
					again = append(again, d.CdiDeviceIds...)
				}
				require.Equal(t, ids[c.UID], again, "the kubelet's prepare gets the same IDs")
			}
			require.Len(t, a.requireConsistent(v, uids, "re-prepared").partitions, wantPartitions, "the kubelet's prepare makes no partition twice")
			a.stop()
		})
	}
}

// setBootID sets the boot id the agent reads under its host root.
func setBootID(t *testing.T, a *agent, id string) {
	t.Helper()
	path := filepath.Join(a.cfg.Root, driver.BootIDFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(id+"\n"), 0o644))
}

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
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
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

// rebootKinds are, per vendor, a claim of a whole chip and a claim of
// two partitions on chip 1 (crashKinds), and a claim of the partition
// that still fits on chip 1 next to them.
var rebootKinds = map[inventory.Vendor]struct{ whole, parts, next claimKind }{
	ascend.Vendor: {whole: crashKinds[0], parts: crashKinds[1],
		next: claimKind{vendor: ascend.Vendor, devices: []string{"npu-1-vir05-1c-16g-1"}, partitions: 1}},
	cambricon.Vendor: {whole: crashKinds[3], parts: crashKinds[4],
		next: claimKind{vendor: cambricon.Vendor, devices: []string{"mlu-1-smlu-25p-1"}, partitions: 1}},
}

// TestARebootWhoseReprepareFailsRetriesUntilTheClaimIsBack: after the
// reboot the vendor tool fails (its driver not loaded yet), so the first
// re-prepare of the partition claim fails. The agent registers anyway and
// serves the whole chip's claim; /readyz names the missing claim; once
// the tool works the background retry brings it back, without a restart:
// its spec and partitions exist, the boot id is recorded, /readyz is ok.
func TestARebootWhoseReprepareFailsRetriesUntilTheClaimIsBack(t *testing.T) {
	for v, n := range crashNodes {
		t.Run(string(v), func(t *testing.T) {
			a := newAgent(t, n.profile, n.chipModes)
			a.cfg.DeviceMetadata = true
			a.cfg.HealthAddrFile = filepath.Join(t.TempDir(), "healthz-addr")
			setBootID(t, a, "boot-1")
			a.start("")
			drv := registry.DriverFor(v)
			kinds := rebootKinds[v]
			whole, parts := kinds.whole.allocated("whole", "uid-whole"), kinds.parts.allocated("parts", "uid-parts")
			ids := map[types.UID][]string{}
			for _, c := range []*resourceapi.ResourceClaim{whole, parts} {
				a.addClaim(c)
				ids[c.UID] = a.preparedIDs(drv, c)
			}
			a.stop()

			// The reboot: tmpfs and partitions gone, a new boot id, and
			// the tool fails until its driver is loaded.
			require.NoError(t, os.RemoveAll(a.cfg.CDIDir))
			state := filepath.Join(a.cfg.StateDir, drv, profilenode.PartitionStateFile)
			require.NoError(t, os.WriteFile(state, []byte("the device driver is not loaded"), 0o600))
			setBootID(t, a, "boot-2")
			a.start("") // registers although a claim is not back
			a.waitPublished()
			code, body := a.readyz()
			require.Equal(t, http.StatusServiceUnavailable, code, "/readyz fails while a claim is not back: %s", body)
			require.Contains(t, body, "default/parts (uid-parts)")
			require.NotContains(t, body, "uid-whole")
			require.Equal(t, []types.UID{whole.UID}, a.specs(v), "the whole chip's claim is back at once")
			containerOf(t, a.cfg.CDIDir, ids[whole.UID])

			require.NoError(t, os.Remove(state), "the tool works again")
			a.waitReady()
			st := a.requireConsistent(v, []types.UID{whole.UID, parts.UID}, "after the retry")
			require.ElementsMatch(t, []types.UID{whole.UID, parts.UID}, st.specs, "the retry wrote the claim's spec")
			require.Len(t, st.partitions, kinds.parts.partitions, "the retry made the partitions")
			require.Equal(t, "boot-2", st.checkpoint.BootID, "the boot id is recorded once every claim is back")
			containerOf(t, a.cfg.CDIDir, ids[parts.UID])
			require.ElementsMatch(t, partitionNodes(st, parts.UID), func() (out []string) {
				for _, p := range st.partitions {
					out = append(out, p.DeviceNode)
				}
				return out
			}(), "the claim's partitions exist")
			require.Subset(t, a.hostNodes(ids[parts.UID]), partitionNodes(st, parts.UID), "the claim's spec names its new partitions")
			require.Equal(t, ids[parts.UID], a.preparedIDs(drv, parts), "the kubelet's prepare gets the same IDs")
			require.True(t, a.alive(0), "no restart")
			a.stop()
		})
	}
}

// TestARebootOnAPersistentCDIDirNeverHandsAClaimAnothersPartition: the
// CDI directory survives the reboot (cdiDir: /etc/cdi), the partitions
// do not, and claim A cannot be read from the API at the first
// re-prepare. A's old spec names the device node of a partition id the
// tool hands out again: it must be gone before the driver registers, so
// the new claim B the kubelet prepares next, which gets that id, cannot
// be reached through it. The retry gives A a spec naming its own new
// partitions, never B's.
func TestARebootOnAPersistentCDIDirNeverHandsAClaimAnothersPartition(t *testing.T) {
	for v, n := range crashNodes {
		t.Run(string(v), func(t *testing.T) {
			a := newAgent(t, n.profile, n.chipModes)
			a.cfg.HealthAddrFile = filepath.Join(t.TempDir(), "healthz-addr")
			setBootID(t, a, "boot-1")
			a.start("")
			drv := registry.DriverFor(v)
			kinds := rebootKinds[v]
			claimA, claimB := kinds.parts.allocated("a", "uid-a"), kinds.next.allocated("b", "uid-b")
			a.addClaim(claimA)
			idsA := a.preparedIDs(drv, claimA)
			oldA := partitionNodes(a.state(v), claimA.UID)
			require.Len(t, oldA, kinds.parts.partitions)
			a.stop()

			// The reboot: the partitions are gone, the CDI specs stay;
			// the API cannot return A for now.
			require.NoError(t, os.Remove(filepath.Join(a.cfg.StateDir, drv, profilenode.PartitionStateFile)))
			setBootID(t, a, "boot-2")
			fileA := claimFile(a.cfg.ClaimsDir, claimA.Namespace, claimA.Name)
			good, err := os.ReadFile(fileA)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(fileA, []byte("{not json"), 0o644))
			a.launch("")
			require.Eventually(t, func() bool {
				_, err := os.Stat(a.registrarSocket(drv))
				return err == nil
			}, time.Minute, 10*time.Millisecond, "the driver registers although A is not back")
			require.Empty(t, a.specs(v), "A's old spec is gone before the driver registers")
			a.register()
			a.waitPublished()
			code, body := a.readyz()
			require.Equal(t, http.StatusServiceUnavailable, code, body)
			require.Contains(t, body, "default/a (uid-a)")

			a.addClaim(claimB)
			idsB := a.preparedIDs(drv, claimB)
			nodesB := partitionNodes(a.state(v), claimB.UID)
			require.Subset(t, oldA, nodesB, "B gets a partition id A had before the reboot: the case A's old spec would leak")
			require.Equal(t, []types.UID{claimB.UID}, a.specs(v), "no spec of A names B's partition")

			require.NoError(t, os.WriteFile(fileA, good, 0o644), "the API answers again")
			a.waitReady()
			st := a.requireConsistent(v, []types.UID{claimA.UID, claimB.UID}, "after the retry")
			require.Equal(t, "boot-2", st.checkpoint.BootID)
			nodesA := partitionNodes(st, claimA.UID)
			require.Len(t, nodesA, kinds.parts.partitions, "A's partitions are made again")
			inA, inB := a.hostNodes(idsA), a.hostNodes(idsB)
			require.Subset(t, inA, nodesA, "A's spec names its own new partitions")
			for _, p := range nodesB {
				require.NotContains(t, inA, p, "A's spec never names B's partition")
			}
			for _, p := range nodesA {
				require.NotContains(t, inB, p, "B's spec never names A's partition")
			}
			a.stop()
		})
	}
}

// partitionNodes are the device nodes of claim uid's partitions in st.
func partitionNodes(st nodeState, uid types.UID) []string {
	var out []string
	for _, d := range st.checkpoint.Claims[uid].Devices {
		if d.Partition != nil {
			out = append(out, d.Partition.DeviceNode)
		}
	}
	return out
}

// hostNodes are the host device nodes, under the agent's host root, that
// the CDI specs of the agent give a container of the CDI device ids.
func (a *agent) hostNodes(ids []string) []string {
	t := a.t
	t.Helper()
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(a.cfg.CDIDir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	var out []string
	for _, id := range ids {
		dev := cache.GetDevice(id)
		require.NotNil(t, dev, "CDI device %s", id)
		for _, n := range dev.ContainerEdits.DeviceNodes {
			out = append(out, strings.TrimPrefix(cmp.Or(n.HostPath, n.Path), a.cfg.Root))
		}
	}
	return out
}

// preparedIDs prepares c with the driver as the kubelet does, and
// returns its CDI device IDs.
func (a *agent) preparedIDs(drv string, c *resourceapi.ResourceClaim) []string {
	a.t.Helper()
	resp, err := a.prepare(drv, c)
	require.NoError(a.t, err)
	require.Empty(a.t, resp[string(c.UID)].Error)
	var ids []string
	for _, d := range resp[string(c.UID)].Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	return ids
}

// specs are the claims with a CDI spec of v's driver.
func (a *agent) specs(v inventory.Vendor) []types.UID {
	a.t.Helper()
	w, err := cdi.NewWriter(a.t.Context(), cdi.Config{Registry: registry, SpecDir: a.cfg.CDIDir})
	require.NoError(a.t, err)
	x, _ := registry.Lookup(v)
	uids, err := w.ClaimUIDs(x)
	require.NoError(a.t, err)
	return uids
}

// readyz is the agent's /readyz: its status code and body.
func (a *agent) readyz() (int, string) {
	a.t.Helper()
	var code int
	var body []byte
	require.Eventually(a.t, func() bool {
		addr, err := os.ReadFile(a.cfg.HealthAddrFile)
		if err != nil || len(addr) == 0 {
			return false
		}
		resp, err := http.Get("http://" + string(addr) + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		code = resp.StatusCode
		body, err = io.ReadAll(resp.Body)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the agent serves its probes")
	return code, string(body)
}

// waitReady waits for /readyz to answer ok: the background re-prepare
// backs off to 30 s between rounds.
func (a *agent) waitReady() {
	a.t.Helper()
	var body string
	require.Eventually(a.t, func() bool {
		var code int
		code, body = a.readyz()
		return code == http.StatusOK
	}, 2*time.Minute, 100*time.Millisecond, "/readyz answers ok; last: %s", body)
}

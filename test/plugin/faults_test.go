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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	healthpb "k8s.io/kubelet/pkg/apis/dra-health/v1"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/devicemonitor"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// The fault tests break what the agent depends on: the CDI
// directory, its checkpoint, its vendor tool. Each fault must give a clear
// error and lose nothing that was prepared.

// faultKinds are the kinds of Ascend claims prepared before a fault: a
// whole chip, two vNPUs and a share of chip 3 (faultChipModes), itself a
// vNPU.
var faultKinds = func() []claimKind {
	var out []claimKind
	for _, k := range crashKinds {
		if k.vendor == ascend.Vendor {
			out = append(out, k)
		}
	}
	return out
}()

const faultChipModes = "Partitioned,npu-3=Shared"

// prepareKinds prepares one claim of each kind, named prefix-<i>, and
// returns them; each gets the CDI device IDs of the contract.
func (a *agent) prepareKinds(prefix string, kinds []claimKind) []*resourceapi.ResourceClaim {
	a.t.Helper()
	var out []*resourceapi.ResourceClaim
	for i, k := range kinds {
		name := fmt.Sprintf("%s-%d", prefix, i)
		c := k.allocated(name, types.UID("uid-"+name))
		a.addClaim(c)
		a.mustPrepare(k, c)
		out = append(out, c)
	}
	return out
}

// mustPrepare prepares c, a claim of kind k, and checks its CDI device IDs.
func (a *agent) mustPrepare(k claimKind, c *resourceapi.ResourceClaim) {
	a.t.Helper()
	resp, err := a.prepare(registry.DriverFor(k.vendor), c)
	require.NoError(a.t, err)
	require.Empty(a.t, resp[string(c.UID)].Error, "prepare %s", c.Name)
	var ids []string
	for _, d := range resp[string(c.UID)].Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	require.Equal(a.t, cdiIDs(k.vendor, c.UID, k.devices...), ids, "the CDI device IDs of %s", c.Name)
}

// mustUnprepare unprepares Ascend claims and checks each succeeded.
func (a *agent) mustUnprepare(claims ...*resourceapi.ResourceClaim) {
	a.t.Helper()
	resp, err := a.unprepare(ascend.Driver, claims...)
	require.NoError(a.t, err)
	for _, c := range claims {
		require.Empty(a.t, resp[string(c.UID)].Error, "unprepare %s", c.Name)
	}
}

func uidsOf(claims ...*resourceapi.ResourceClaim) []types.UID {
	out := make([]types.UID, 0, len(claims))
	for _, c := range claims {
		out = append(out, c.UID)
	}
	return out
}

// requireRunning asserts that the agent has not exited (panicked, or
// stopped on an error).
func (a *agent) requireRunning() {
	a.t.Helper()
	require.NotNil(a.t, a.cmd, "the agent is not running")
	select {
	case err := <-a.exited:
		a.exited <- err // for wait and kill
		a.t.Fatalf("the agent exited: %v", err)
	default:
	}
}

// logOfThisStart is what the agent logged since it was last started.
func (a *agent) logOfThisStart() string {
	a.t.Helper()
	out, err := os.ReadFile(a.log.Name())
	require.NoError(a.t, err)
	marker := fmt.Sprintf("=== start %d,", a.starts)
	i := bytes.LastIndex(out, []byte(marker))
	require.GreaterOrEqual(a.t, i, 0, "the log has no %q", marker)
	return string(out[i:])
}

// runUntilExit runs the agent expecting it to refuse to start, and
// returns what it printed and how it exited.
func (a *agent) runUntilExit() (string, error) {
	a.t.Helper()
	raw, err := json.Marshal(a.cfg)
	require.NoError(a.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBinary(a.t), "-test.run=^$")
	cmd.Env = append(os.Environ(), agentEnv+"="+string(raw))
	out, err := cmd.CombinedOutput()
	require.NoError(a.t, ctx.Err(), "the agent neither started nor exited")
	fmt.Fprintf(a.log, "=== run until exit\n%s", out)
	return string(out), err
}

// holdClaims starts the agent, prepares a claim of each fault kind and
// stops it, and returns the claims and what the node holds for them.
func (a *agent) holdClaims() ([]*resourceapi.ResourceClaim, nodeState) {
	a.t.Helper()
	a.start("")
	claims := a.prepareKinds("held", faultKinds)
	held := a.requireConsistent(ascend.Vendor, uidsOf(claims...), "prepared")
	a.stop()
	return claims, held
}

// rewriteCheckpoint replaces the Ascend driver's checkpoint by what
// change makes of it, and returns its path and both contents.
func (a *agent) rewriteCheckpoint(change func([]byte) []byte) (path string, was, is []byte) {
	a.t.Helper()
	path = filepath.Join(a.cfg.StateDir, ascend.Driver, driver.CheckpointFile)
	was, err := os.ReadFile(path)
	require.NoError(a.t, err)
	is = change(bytes.Clone(was))
	require.NotEqual(a.t, was, is, "the checkpoint is changed")
	require.NoError(a.t, os.WriteFile(path, is, 0o600))
	return path, was, is
}

// editDevice changes a device name inside a checkpoint, which its
// checksum no longer matches.
func editDevice(raw []byte) []byte {
	return bytes.Replace(raw, []byte(`"npu-0"`), []byte(`"npu-7"`), 1)
}

// mountTmpfs mounts a tmpfs with options on dir, created if missing, for
// the rest of the test: as root, only a read-only or full file system
// makes a write fail.
func mountTmpfs(t *testing.T, dir, options string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, options))
	// Detached, so it is gone even if a failed test left a file open there.
	t.Cleanup(func() { require.NoError(t, unix.Unmount(dir, unix.MNT_DETACH)) })
}

// remountFlags remounts the file system at dir with flags (MS_RDONLY, or
// 0 for read-write).
func remountFlags(t *testing.T, dir string, flags uintptr) {
	t.Helper()
	require.NoError(t, unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV|flags, ""))
}

// fillUp takes all free space of the file system at dir with one file
// and returns what removes it.
func fillUp(t *testing.T, dir string) (free func()) {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize))
	return func() { require.NoError(t, os.Remove(filler)) }
}

// specPath is where the Ascend driver writes the CDI spec of a claim.
func specPath(cdiDir string, uid types.UID) string {
	return filepath.Join(cdiDir, "accel-dra.dev-ascend_"+string(uid)+".json")
}

// TestAnUnwritableOrFullCDIDirectoryFailsOnlyNewClaimsAndLosesNothing
// runs the agent with its CDI directory on a tmpfs that becomes read-only
// or full after claims of each kind were prepared: preparing more claims
// fails, each with an error naming the claim and its spec file, leaving no
// file in the CDI directory (no temporary either), no entry in the
// checkpoint and no partition; the claims prepared before stay prepared.
// Once the directory is writable again, the kubelet's retries succeed and
// everything unprepares.
func TestAnUnwritableOrFullCDIDirectoryFailsOnlyNewClaimsAndLosesNothing(t *testing.T) {
	late := []claimKind{
		{vendor: ascend.Vendor, devices: []string{"npu-4"}},
		{vendor: ascend.Vendor, devices: []string{"npu-5-vir05-1c-16g-0"}, partitions: 1},
		{vendor: ascend.Vendor, devices: []string{"npu-3"}, shareUnits: 1, partitions: 1}, // a vNPU share
	}
	tests := []struct {
		name string
		// breakDir makes writes to the CDI directory fail; it returns what
		// repairs it.
		breakDir func(t *testing.T, dir string) (repair func())
		wantErr  string
		// unprepareErr is what unpreparing a claim says meanwhile; "" if it
		// works (removing a file needs no room).
		unprepareErr string
	}{
		{
			name: "read-only",
			breakDir: func(t *testing.T, dir string) func() {
				remountFlags(t, dir, unix.MS_RDONLY)
				return func() { remountFlags(t, dir, 0) }
			},
			wantErr:      "read-only file system",
			unprepareErr: "read-only file system",
		},
		{name: "full", breakDir: fillUp, wantErr: "no space left on device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, "atlas-800t-a2", faultChipModes)
			mountTmpfs(t, a.cfg.CDIDir, "size=256k")
			a.start("")
			v := ascend.Vendor
			before := a.prepareKinds("before", faultKinds)

			repair := tt.breakDir(t, a.cfg.CDIDir)
			files := a.cdiFiles()
			var failed []*resourceapi.ResourceClaim
			for i, k := range late {
				c := k.allocated(fmt.Sprintf("late-%d", i), types.UID(fmt.Sprintf("uid-late-%d", i)))
				a.addClaim(c)
				resp, err := a.prepare(ascend.Driver, c)
				require.NoError(t, err, "the agent answers")
				msg := resp[string(c.UID)].Error
				require.Contains(t, msg, fmt.Sprintf("claim default/%s (%s): ", c.Name, c.UID))
				require.Contains(t, msg, "to "+specPath(a.cfg.CDIDir, c.UID)+": ")
				require.Contains(t, msg, tt.wantErr)
				require.Empty(t, resp[string(c.UID)].Devices)
				failed = append(failed, c)
			}
			require.Equal(t, files, a.cdiFiles(), "the failed prepares leave no file, not even a temporary one")
			a.requireConsistent(v, uidsOf(before...), "the failed claims are neither in the checkpoint nor on the chips")

			un, err := a.unprepare(ascend.Driver, before[0])
			require.NoError(t, err)
			if tt.unprepareErr != "" {
				msg := un[string(before[0].UID)].Error
				require.Contains(t, msg, fmt.Sprintf("claim default/%s (%s): removing CDI spec: ", before[0].Name, before[0].UID))
				require.Contains(t, msg, tt.unprepareErr)
				a.requireConsistent(v, uidsOf(before...), "a claim that could not be unprepared stays prepared")
			} else {
				require.Empty(t, un[string(before[0].UID)].Error)
				before = before[1:]
			}
			a.requireRunning()

			repair()
			for i, c := range failed {
				a.mustPrepare(late[i], c)
			}
			st := a.requireConsistent(v, uidsOf(append(before, failed...)...), "the retries succeeded")
			require.Len(t, st.specs, len(before)+len(failed))
			a.mustUnprepare(append(before, failed...)...)
			st = a.requireConsistent(v, nil, "unprepared")
			require.Empty(t, st.partitions)
			require.Empty(t, a.cdiFiles())
			a.stop()
		})
	}
}

// files are the contents of every file under dirs, by path; a missing
// directory has none.
func files(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			out[path] = string(b)
			return err
		})
		require.NoError(t, err)
	}
	return out
}

// TestAnAgentRefusesACheckpointOfAnotherVersionAndTouchesNothing: a
// checkpoint written by another version of the plugin (before a
// downgrade) makes the agent exit non-zero, naming the file and both
// versions, without changing the checkpoint, the CDI specs or the
// partitions. The version that reads it still has every claim.
func TestAnAgentRefusesACheckpointOfAnotherVersionAndTouchesNothing(t *testing.T) {
	a := newAgent(t, "atlas-800t-a2", faultChipModes)
	claims, _ := a.holdClaims()
	const newer = "accel-dra.dev/checkpoint/v5"
	path, v1, _ := a.rewriteCheckpoint(func(raw []byte) []byte {
		return bytes.Replace(raw, []byte(`"`+checkpoint.Version+`"`), []byte(`"`+newer+`"`), 1)
	})
	was := files(t, a.cfg.StateDir, a.cfg.CDIDir)
	require.Len(t, a.cdiFiles(), len(claims))

	out, err := a.runUntilExit()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the agent exits non-zero:\n%s", out)
	require.Equal(t, 1, exit.ExitCode(), out)
	require.Contains(t, out, fmt.Sprintf("checkpoint %s has format version %q, this plugin reads only %q and older: refusing to start", path, newer, checkpoint.Version))
	require.NotContains(t, out, "panic")
	require.Equal(t, was, files(t, a.cfg.StateDir, a.cfg.CDIDir), "nothing was changed")

	require.NoError(t, os.WriteFile(path, v1, 0o600))
	a.start("")
	require.Len(t, a.requireConsistent(ascend.Vendor, uidsOf(claims...), "with the checkpoint back in this version").partitions, 3, "two vNPUs and the share's")
	a.mustUnprepare(claims...)
	require.Empty(t, a.requireConsistent(ascend.Vendor, nil).partitions)
	require.Empty(t, a.cdiFiles())
	a.stop()
}

// TestAnAgentSetsACorruptCheckpointAsideAndKeepsItsClaims: with a
// checkpoint that was edited, truncated or emptied, the agent starts,
// logs that it set the file aside (kept for the operator as .corrupt) and
// rebuilds the prepared claims from their CDI specs: the kubelet's
// repeated prepare gets the same devices without making partitions,
// another claim cannot take their chips, and unprepare removes their specs
// and partitions.
func TestAnAgentSetsACorruptCheckpointAsideAndKeepsItsClaims(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(raw []byte) []byte
		reason  string
	}{
		{name: "an edited device", corrupt: editDevice, reason: "does not match the content"},
		{name: "truncated", corrupt: func(raw []byte) []byte { return raw[:len(raw)/2] }, reason: "not JSON"},
		{name: "empty", corrupt: func([]byte) []byte { return []byte{} }, reason: "the file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, "atlas-800t-a2", faultChipModes)
			v := ascend.Vendor
			claims, held := a.holdClaims()
			path, _, bad := a.rewriteCheckpoint(tt.corrupt)

			a.start("")
			log := a.logOfThisStart()
			require.Contains(t, log, "Checkpoint is corrupt; set it aside and rebuilding the prepared claims from the CDI specs")
			require.Contains(t, log, fmt.Sprintf("checkpoint %s is corrupt: ", path))
			require.Contains(t, log, tt.reason)
			aside, err := os.ReadFile(path + ".corrupt")
			require.NoError(t, err)
			require.Equal(t, bad, aside, "the corrupt file is kept for the operator")

			st := a.requireConsistent(v, uidsOf(claims...), "rebuilt from the CDI specs")
			require.Equal(t, held.partitions, st.partitions)
			for uid, c := range held.checkpoint.Claims {
				for i, d := range st.checkpoint.Claims[uid].Devices {
					require.Equal(t, c.Devices[i].Partition, d.Partition, "%s: the partition of %s", uid, d.Device)
					require.Equal(t, c.Devices[i].Share, d.Share, "%s: the share of %s", uid, d.Device)
				}
			}

			thief := faultKinds[0].allocated("thief", "uid-thief")
			a.addClaim(thief)
			resp, err := a.prepare(ascend.Driver, thief)
			require.NoError(t, err)
			require.Contains(t, resp[string(thief.UID)].Error, fmt.Sprintf("device %s is already prepared for claim default/%s", faultKinds[0].devices[0], claims[0].Name))

			for i, c := range claims {
				a.mustPrepare(faultKinds[i], c)
			}
			require.Equal(t, held.partitions, a.requireConsistent(v, uidsOf(claims...), "prepared again").partitions, "a repeated prepare makes no partition")
			a.mustUnprepare(claims...)
			require.Empty(t, a.requireConsistent(v, nil, "unprepared").partitions)
			require.Equal(t, []string(nil), a.cdiFiles())
			a.stop()
		})
	}
}

// Fake vendor tools (run through the real discovery.ExecRunner): recorded
// answers from the recordings beside its link, garbage prints garbage,
// hangs never answers.
var (
	recordedTool = mustAbs("testdata/tools/recorded")
	garbageTool  = mustAbs("testdata/tools/garbage")
	hangsTool    = mustAbs("../../pkg/discovery/testdata/tools/hangs")
)

func mustAbs(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return abs
}

// installTool makes dir/npu-smi run script, replacing what it ran before
// at once (a rename), and returns its path.
func installTool(t *testing.T, dir, script string) string {
	t.Helper()
	link := filepath.Join(dir, "npu-smi")
	require.NoError(t, os.Symlink(script, link+".new"))
	require.NoError(t, os.Rename(link+".new", link))
	return link
}

// toolTimeout is --tool-timeout in the tool tests: short, so a hanging
// tool fails a query fast.
const toolTimeout = 300 * time.Millisecond

// TestAVendorToolThatHangsOrPrintsGarbageFailsTheStartClearly runs the
// node agent on the Atlas 800T A2 fixture with npu-smi run through the
// real command runner: with the recorded answers it serves the chips; a
// hanging npu-smi is killed at --tool-timeout and a garbage answer is
// refused, and either way the agent stops with an error saying so instead
// of hanging or serving no chips.
func TestAVendorToolThatHangsOrPrintsGarbageFailsTheStartClearly(t *testing.T) {
	tests := []struct {
		name, tool, wantErr string
	}{
		{name: "recorded", tool: recordedTool},
		{name: "hangs", tool: hangsTool, wantErr: fmt.Sprintf("listing Ascend chips: running npu-smi info: timed out after %s (--tool-timeout)", toolTimeout)},
		{name: "garbage", tool: garbageTool, wantErr: `listing Ascend chips: parsing npu-smi info: no NPU table in the output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			o, client := simulatedAgent(t, "")
			fixture := filepath.Join("..", "..", "pkg", "vendors", "ascend", "testdata", "atlas-800t-a2")
			tools := discoverytest.CopyTree(t, filepath.Join(fixture, "npu-smi"))
			o.Discovery = source.Options{Registry: registry, Root: discoverytest.CopyTree(t, filepath.Join(fixture, "root")), NodeName: nodeName,
				Tools: map[string]string{ascend.NpuSmi: installTool(t, tools, tt.tool)}, ToolTimeout: toolTimeout}
			o.FakeDevices, o.Publish.ChipModes = false, "Whole"
			done := make(chan error, 1)
			go func() { done <- nodeagent.Run(ctx, o) }()

			if tt.wantErr == "" {
				require.Eventually(t, func() bool {
					list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
					require.NoError(t, err)
					return len(list.Items) == 1 && len(list.Items[0].Spec.Devices) == 8
				}, time.Minute, 20*time.Millisecond, "the 8 chips are published")
				cancel()
			}
			select {
			case err := <-done:
				if tt.wantErr == "" {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, tt.wantErr)
			case <-time.After(time.Minute):
				t.Fatal("the agent neither started nor stopped")
			}
			list, err := client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Empty(t, list.Items, "nothing is published")
			require.Empty(t, files(t, o.CDI.Dir, o.Plugin.StateDir))
		})
	}
}

// logged counts the log entries of the node's plugin with message whose
// error contains errText (any error, or none, for "").
func (n *node) logged(message, errText string) int {
	count := 0
	for _, e := range klog.FromContext(n.ctx).GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Message == message && (errText == "" || e.Err != nil && strings.Contains(e.Err.Error(), errText)) {
			count++
		}
	}
	return count
}

// TestAVendorToolThatHangsOrPrintsGarbageWhileServingChangesNothing runs
// the plugin on the Atlas 800T A2 fixture with its device monitor polling
// npu-smi through the real command runner every 50ms. npu-1 alarms and is
// tainted; then npu-smi hangs, and later prints garbage: each failed poll
// logs an error naming the command and the timeout or what it could not
// parse, the slices keep their last state (npu-1 tainted, the others not,
// nothing written), the kubelet's last report stands, the prepared claim
// stays prepared and claims still prepare and unprepare. When npu-smi
// answers again, the monitor says so.
func TestAVendorToolThatHangsOrPrintsGarbageWhileServingChangesNothing(t *testing.T) {
	m := newMonitoredNode(t, "ascend", "atlas-800t-a2", "npu-smi", ascend.Vendor, "Whole")
	opts := source.Options{Registry: registry, Root: m.root, NodeName: nodeName, Tools: map[string]string{ascend.NpuSmi: installTool(t, m.tools, recordedTool)}, ToolTimeout: toolTimeout}
	monitor, err := devicemonitor.New(devicemonitor.Config{Discovery: opts, Interval: 50 * time.Millisecond, Initial: m.inv, Targets: []devicemonitor.Target{m.driver}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		monitor.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done }) // before the plugin stops

	m.edit("| OK            | 92.0", "| Alarm         | 92.0", "info")
	m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d["npu-1"].Taints) > 0 }, "npu-1 tainted")
	m.watchHealth(t).waitFor(statusOf("npu-1", healthpb.HealthStatus_UNHEALTHY), "npu-1 is unhealthy")
	held := m.claim("held", []string{"npu-0"})
	ids := m.mustPrepare(held)

	const failedPoll = "Cannot re-read the chips: keeping their last known health and slices"
	for _, fault := range []struct{ name, tool, wantErr string }{
		{name: "hangs", tool: hangsTool, wantErr: fmt.Sprintf("listing Ascend chips: running npu-smi info: timed out after %s (--tool-timeout)", toolTimeout)},
		{name: "garbage", tool: garbageTool, wantErr: "listing Ascend chips: parsing npu-smi info: no NPU table in the output"},
	} {
		failures, recoveries := m.logged(failedPoll, fault.wantErr), m.logged("Chips readable again", "")
		installTool(t, m.tools, fault.tool)
		// The poll running while the tool is swapped may read the old
		// tool's chip list and the new one's topology, which costs the
		// links only (PCIe-only) and may be published; every later poll
		// fails at the chip list and must change nothing.
		require.Eventually(t, func() bool { return m.logged(failedPoll, fault.wantErr) >= failures+2 }, time.Minute, 10*time.Millisecond,
			"%s: the failed polls are logged with what failed", fault.name)
		writes := m.sliceWrites()
		require.Eventually(t, func() bool { return m.logged(failedPoll, fault.wantErr) >= failures+4 }, time.Minute, 10*time.Millisecond,
			"%s: more failed polls", fault.name)

		devices := m.publishedDevices()
		require.Len(t, devices, 8, fault.name)
		for name, d := range devices {
			if name == "npu-1" {
				require.Equal(t, unhealthyTaint(names.TaintHealth, "HealthAlarm"), d.Taints, "%s: the last known health is kept", fault.name)
				continue
			}
			require.Empty(t, d.Taints, "%s: %s", fault.name, name)
		}
		require.Equal(t, writes, m.sliceWrites(), "%s: no slice is written", fault.name)
		report := m.watchHealth(t).waitFor(func(map[string]*healthpb.DeviceHealth) bool { return true }, "a report arrives")
		for name, d := range report {
			want := healthpb.HealthStatus_HEALTHY
			if name == "npu-1" {
				want = healthpb.HealthStatus_UNHEALTHY
			}
			require.Equal(t, want, d.GetHealth(), "%s: %s, as last read", fault.name, name)
		}

		require.Equal(t, []types.UID{held.UID}, m.driver.PreparedClaims(), fault.name)
		require.Equal(t, ids, m.mustPrepare(held), "%s: the kubelet's repeated prepare", fault.name)
		other := m.claim("other-"+fault.name, []string{"npu-2"})
		m.mustPrepare(other)
		m.unprepare(other)

		installTool(t, m.tools, recordedTool)
		require.Eventually(t, func() bool { return m.logged("Chips readable again", "") > recoveries }, time.Minute, 10*time.Millisecond,
			"%s: the monitor reads the chips again", fault.name)
	}
	m.unprepare(held)
	require.Empty(t, m.cdiFiles())
}

// TestACorruptCheckpointThatCannotBeReplacedIsStillThereAtTheNextStart:
// the state directory is full when the agent finds its checkpoint
// corrupt, so the rebuilt checkpoint cannot be saved and the agent stops.
// The next start, with room again, must still find the corrupt file and
// rebuild the claims, not start from an empty checkpoint that would
// delete their CDI specs and partitions.
func TestACorruptCheckpointThatCannotBeReplacedIsStillThereAtTheNextStart(t *testing.T) {
	a := newAgent(t, "atlas-800t-a2", faultChipModes)
	v := ascend.Vendor
	mountTmpfs(t, a.cfg.StateDir, "size=256k")
	claims, held := a.holdClaims()
	path, _, bad := a.rewriteCheckpoint(editDevice)
	free := fillUp(t, a.cfg.StateDir)
	out, err := a.runUntilExit()
	require.Error(t, err, "the agent cannot save the rebuilt checkpoint:\n%s", out)
	require.Contains(t, out, "saving the checkpoint rebuilt from the CDI specs (the corrupt one stays for the next start): ")
	require.Contains(t, out, "no space left on device")
	require.NotContains(t, out, "panic")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, bad, raw, "the corrupt checkpoint is still there")
	free()

	a.start("")
	st := a.requireConsistent(v, uidsOf(claims...), "rebuilt at the next start")
	require.Equal(t, held.partitions, st.partitions)
	require.Len(t, st.specs, len(claims))
	a.mustUnprepare(claims...)
	require.Empty(t, a.requireConsistent(v, nil, "unprepared").partitions)
	a.stop()
}

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
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	healthpb "k8s.io/kubelet/pkg/apis/dra-health/v1"

	"github.com/accel-dra/accel-dra/pkg/devicemonitor"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// monitoredNode is a plugin serving the chips of a discovery fixture node
// (a copy the test changes: device files, sysfs, recorded npu-smi/cnmon
// output) with the device monitor polling them when the test says.
type monitoredNode struct {
	*node
	root, tools, tool string
	monitor           *devicemonitor.Monitor
	// writes counts the ResourceSlice writes the fake API server accepted.
	writes *atomic.Int64
}

// newMonitoredNode copies fixture testdata/<node> of a discovery backend
// (vendorDir ascend or cambricon, recordings of tool), discovers it and
// starts the plugin on what it found. The plugin's log is kept at V(5),
// where the resourceslice controller says when it has synced.
func newMonitoredNode(t *testing.T, vendorDir, fixture, tool string, vendor inventory.Vendor, chipModes string) *monitoredNode {
	t.Helper()
	dir := filepath.Join("..", "..", "pkg", "vendors", vendorDir, "testdata", fixture)
	m := &monitoredNode{tool: tool, writes: &atomic.Int64{},
		root:  discoverytest.CopyTree(t, filepath.Join(dir, "root")),
		tools: discoverytest.CopyTree(t, filepath.Join(dir, tool))}
	opts := source.Options{Registry: registry, Root: m.root, ToolOutput: m.tools, NodeName: nodeName}
	inv, err := source.Discover(context.Background(), opts)
	require.NoError(t, err)
	interval := time.Second // Poll is called by the test; this sets the timeout the kubelet is told
	m.node = startNode(t, nodeOptions{Inventory: inv, Vendor: vendor, ChipModes: chipModes, Setup: func(n *node) {
		n.logs = ktesting.NewConfig(ktesting.Verbosity(5), ktesting.BufferLogs(true))
		checkSliceVersions(n.client, m.writes)
		n.configure = func(cfg *driver.Config) { cfg.HealthCheckTimeout = devicemonitor.CheckTimeout(interval) }
	}})
	m.monitor, err = devicemonitor.New(devicemonitor.Config{Discovery: opts, Interval: interval, Initial: inv, Targets: []devicemonitor.Target{m.driver}})
	require.NoError(t, err)
	return m
}

func (m *monitoredNode) recording(args ...string) string {
	return filepath.Join(m.tools, discovery.RecordingName(m.tool, args...))
}

// edit replaces old by new, once, in the recorded output of `tool args…`.
func (m *monitoredNode) edit(old, new string, args ...string) {
	b, err := os.ReadFile(m.recording(args...))
	require.NoError(m.t, err)
	require.NoError(m.t, os.WriteFile(m.recording(args...), []byte(discoverytest.ReplaceOnce(m.t, string(b), old, new)), 0o644))
}

// syncs counts the resourceslice controller's completed syncs of the pool
// (its V(5) "Completed comparison" line), so a test knows a sync ran even
// when it wrote nothing.
func (m *monitoredNode) syncs() int {
	n := 0
	for _, e := range klog.FromContext(m.ctx).GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Message == "Completed comparison" {
			n++
		}
	}
	return n
}

// poll runs one monitor poll and waits until the resourceslice controller
// has synced the pool after it.
func (m *monitoredNode) poll() {
	m.t.Helper()
	before := m.syncs()
	require.NoError(m.t, m.monitor.Poll(m.ctx))
	require.Eventually(m.t, func() bool { return m.syncs() > before }, time.Minute, 10*time.Millisecond, "the controller syncs after an update")
}

// sliceWrites counts the ResourceSlice creates, updates and deletes the
// fake API server accepted.
func (m *monitoredNode) sliceWrites() int { return int(m.writes.Load()) }

// checkSliceVersions gives the fake clientset the API server's optimistic
// concurrency for ResourceSlices: each write gets a new resourceVersion
// and an update of an older one fails with a conflict. Without it, a sync
// of the resourceslice controller that runs before its informer has seen
// its last write (Update queues the pool twice) writes the same change
// again, which a real API server refuses. writes counts what is accepted.
func checkSliceVersions(c *fake.Clientset, writes *atomic.Int64) {
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	var version int64 // the fake calls reactors one at a time
	c.PrependReactor("*", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "delete":
			writes.Add(1)
		case "create", "update":
			obj := action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
			if action.GetVerb() == "update" {
				stored, err := c.Tracker().Get(gvr, "", obj.Name)
				if err != nil {
					return false, nil, nil //nolint:nilerr // not found: the tracker answers NotFound itself
				}
				if current := stored.(*resourceapi.ResourceSlice).ResourceVersion; obj.ResourceVersion != current {
					return true, nil, apierrors.NewConflict(gvr.GroupResource(), obj.Name,
						fmt.Errorf("resourceVersion %q is not the current %q", obj.ResourceVersion, current))
				}
			}
			version++
			obj.ResourceVersion = strconv.FormatInt(version, 10)
			writes.Add(1)
		}
		return false, nil, nil
	})
}

// healthStream is the kubelet's side of WatchHealthStatus, through the
// real v1 health gRPC client.
type healthStream struct {
	t       *testing.T
	reports chan *healthpb.NodeWatchResourcesResponse
}

func (n *node) watchHealth(t *testing.T) *healthStream {
	stream, err := healthpb.NewDRAResourceHealthClient(n.draConn).NodeWatchResources(n.ctx, &healthpb.NodeWatchResourcesRequest{})
	require.NoError(t, err)
	s := &healthStream{t: t, reports: make(chan *healthpb.NodeWatchResourcesResponse, 16)}
	go func() {
		defer close(s.reports)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			s.reports <- resp
		}
	}()
	return s
}

// waitFor reads reports until one satisfies ok and returns its devices by
// name. The plugin sends a report at once when health changes.
func (s *healthStream) waitFor(ok func(map[string]*healthpb.DeviceHealth) bool, msg string) map[string]*healthpb.DeviceHealth {
	s.t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case resp, open := <-s.reports:
			require.True(s.t, open, "the health stream ended while waiting until %s", msg)
			got := map[string]*healthpb.DeviceHealth{}
			for _, d := range resp.GetDevices() {
				got[d.GetDevice().GetDeviceName()] = d
			}
			if ok(got) {
				return got
			}
		case <-deadline:
			s.t.Fatalf("no health report in which %s", msg)
		}
	}
}

func statusOf(name string, want healthpb.HealthStatus) func(map[string]*healthpb.DeviceHealth) bool {
	return func(got map[string]*healthpb.DeviceHealth) bool { return got[name].GetHealth() == want }
}

// unhealthyTaint is the blocking taint of one cause: its key and reason.
func unhealthyTaint(key, value string) []resourceapi.DeviceTaint {
	return []resourceapi.DeviceTaint{{Key: key, Value: value, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
}

// TestTheMonitorTaintsAnAlarmingChipTellsTheKubeletAndUntaintsItOnRecovery
// runs the plugin on the Atlas 800T A2 fixture, whole chips in one slice:
// npu-smi reporting Alarm for NPU 1 taints npu-1 in the published slice
// and the kubelet's health stream says Unhealthy with the reason and the
// chip's error codes (the fixture's recording of NPU 1's health); when it
// reports OK again the taint goes. Each change is one write; a poll that
// finds nothing changed writes nothing.
func TestTheMonitorTaintsAnAlarmingChipTellsTheKubeletAndUntaintsItOnRecovery(t *testing.T) {
	m := newMonitoredNode(t, "ascend", "atlas-800t-a2", "npu-smi", ascend.Vendor, "Whole")
	kubelet := m.watchHealth(t)
	m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d) == 8 }, "8 chips published")
	first := kubelet.waitFor(statusOf("npu-1", healthpb.HealthStatus_HEALTHY), "npu-1 is healthy")
	require.Len(t, first, 8)
	require.Equal(t, int64(30), first["npu-1"].GetHealthCheckTimeoutSeconds(), "the kubelet trusts a report for three polls, at least its default")
	writes := m.sliceWrites()

	m.poll()
	require.Equal(t, writes, m.sliceWrites(), "nothing changed, nothing written")

	m.edit("| OK            | 92.0", "| Alarm         | 92.0", "info")
	m.poll()
	devices := m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d["npu-1"].Taints) > 0 }, "npu-1 tainted")
	require.Equal(t, unhealthyTaint(names.TaintHealth, "HealthAlarm"), devices["npu-1"].Taints)
	require.False(t, *devices["npu-1"].Attributes[names.AttrHealthy].BoolValue)
	for name, d := range devices {
		if name != "npu-1" {
			require.Empty(t, d.Taints, name)
		}
	}
	require.Equal(t, writes+1, m.sliceWrites(), "one slice update")
	got := kubelet.waitFor(statusOf("npu-1", healthpb.HealthStatus_UNHEALTHY), "npu-1 is unhealthy")
	require.Equal(t, "HealthAlarm: npu-smi reports health Alarm, error codes 0xA4025021, 0x8C03A000, 0x8C084E00: "+
		"ascend_monitor adda heart beat lost error; "+
		"node type=process-manager, sensor type=General Software, event state=The process start failed or exit abnormally; "+
		"node type=adda, sensor type=Heartbeat Sensor, event state=Heartbeat Lost.",
		got["npu-1"].GetMessage(), "the reason and the error codes npu-smi info -t health lists for NPU 1")
	require.Equal(t, healthpb.HealthStatus_HEALTHY, got["npu-0"].GetHealth())

	m.poll()
	require.Equal(t, writes+1, m.sliceWrites(), "still Alarm: nothing written")

	m.edit("| Alarm         | 92.0", "| OK            | 92.0", "info")
	m.poll()
	devices = m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d["npu-1"].Taints) == 0 }, "npu-1 untainted")
	require.True(t, *devices["npu-1"].Attributes[names.AttrHealthy].BoolValue)
	require.Equal(t, writes+2, m.sliceWrites())
	got = kubelet.waitFor(statusOf("npu-1", healthpb.HealthStatus_HEALTHY), "npu-1 recovered")
	require.Empty(t, got["npu-1"].GetMessage())
}

// TestAChipWhoseDeviceFileVanishesIsTaintedWithItsPartitions: deleting
// /dev/davinci3 taints npu-3 and every vNPU device of it.
func TestAChipWhoseDeviceFileVanishesIsTaintedWithItsPartitions(t *testing.T) {
	m := newMonitoredNode(t, "ascend", "atlas-800t-a2", "npu-smi", ascend.Vendor, "Partitioned")
	kubelet := m.watchHealth(t)
	require.NoError(t, os.Remove(filepath.Join(m.root, "dev", "davinci3")))
	m.poll()
	devices := m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d["npu-3"].Taints) > 0 }, "npu-3 tainted")
	partitions := 0
	for name, d := range devices {
		onChip3 := name == "npu-3" || strings.HasPrefix(name, "npu-3-")
		if !onChip3 {
			require.Empty(t, d.Taints, name)
			continue
		}
		require.Equal(t, unhealthyTaint(names.TaintDeviceFileMissing, inventory.ReasonDeviceFileMissing), d.Taints, name)
		if name != "npu-3" {
			partitions++
		}
	}
	require.Positive(t, partitions, "the vNPU devices of npu-3 are tainted too")
	got := kubelet.waitFor(statusOf("npu-3", healthpb.HealthStatus_UNHEALTHY), "npu-3 is unhealthy")
	require.Equal(t, "DeviceFileMissing: device file /dev/davinci3 is missing", got["npu-3"].GetMessage())
	for name, d := range got {
		if strings.HasPrefix(name, "npu-3-") {
			require.Equal(t, healthpb.HealthStatus_UNHEALTHY, d.GetHealth(), name)
			require.Equal(t, "chip npu-3: DeviceFileMissing: device file /dev/davinci3 is missing", d.GetMessage(), name)
		}
	}
}

// TestChipsRemovedAndAddedWhileRunningChangeTheSlices: card 7 of an
// MLU370-X8 node disappears (cnmon no longer lists it) while a claim holds
// an sMLU of it: it leaves the slice, cannot be prepared any more, the
// kubelet is told the held partition is Unhealthy, and unpreparing still
// destroys the partition. Plugged back in, it is published again.
func TestChipsRemovedAndAddedWhileRunningChangeTheSlices(t *testing.T) {
	m := newMonitoredNode(t, "cambricon", "mlu370-x8", "cnmon", cambricon.Vendor, "Partitioned")
	kubelet := m.watchHealth(t)
	m.waitPublished(func(d map[string]resourceapi.Device) bool { _, ok := d["mlu-7"]; return ok }, "mlu-7 published")
	held := m.claim("held", []string{"mlu-7-smlu-25p-0"})
	m.mustPrepare(held)
	require.Len(t, m.partitionsOnChips(), 1)

	full, err := os.ReadFile(m.recording("info"))
	require.NoError(t, err)
	card7 := strings.Index(string(full), "Card 7")
	require.Positive(t, card7)
	require.NoError(t, os.WriteFile(m.recording("info"), full[:card7], 0o644))
	m.poll()
	devices := m.waitPublished(func(d map[string]resourceapi.Device) bool { _, ok := d["mlu-7"]; return !ok }, "mlu-7 unpublished")
	for name := range devices {
		require.False(t, strings.HasPrefix(name, "mlu-7"), "%s is still published", name)
	}
	require.Contains(t, devices, "mlu-6")

	late := m.claim("late", []string{"mlu-7"})
	require.Contains(t, m.prepare(late)[string(late.UID)].Error, `device "mlu-7" is not a chip of cambricon.accel-dra.dev on node node-0`)

	got := kubelet.waitFor(func(got map[string]*healthpb.DeviceHealth) bool { _, ok := got["mlu-7"]; return !ok }, "mlu-7 is not reported")
	require.Equal(t, healthpb.HealthStatus_UNHEALTHY, got["mlu-7-smlu-25p-0"].GetHealth(), "the pod's partition of the gone chip")
	require.Contains(t, got["mlu-7-smlu-25p-0"].GetMessage(), "ChipGone")

	m.unprepare(held)
	require.Empty(t, m.partitionsOnChips(), "the partition of the gone chip is destroyed")

	require.NoError(t, os.WriteFile(m.recording("info"), full, 0o644))
	m.poll()
	devices = m.waitPublished(func(d map[string]resourceapi.Device) bool { _, ok := d["mlu-7"]; return ok }, "mlu-7 published again")
	require.Empty(t, devices["mlu-7"].Taints)
	kubelet.waitFor(statusOf("mlu-7", healthpb.HealthStatus_HEALTHY), "mlu-7 is back")
}

// TestAFailedPollKeepsTheSlicesAndTheKubeletsLastReport: cnmon failing
// changes nothing that was published.
func TestAFailedPollKeepsTheSlicesAndTheKubeletsLastReport(t *testing.T) {
	m := newMonitoredNode(t, "cambricon", "mlu270", "cnmon", cambricon.Vendor, "")
	m.waitPublished(func(d map[string]resourceapi.Device) bool { return len(d) == 3 }, "3 chips published")
	writes := m.sliceWrites()
	require.NoError(t, os.Remove(m.recording("info")))
	require.ErrorContains(t, m.monitor.Poll(m.ctx), "polling cambricon chips")
	require.Len(t, m.publishedDevices(), 3)
	require.Equal(t, writes, m.sliceWrites())
	got := m.watchHealth(t).waitFor(func(map[string]*healthpb.DeviceHealth) bool { return true }, "a report arrives")
	for name, d := range got {
		require.Equal(t, healthpb.HealthStatus_HEALTHY, d.GetHealth(), name)
	}
}

// TestAChipGoneAtStartLetsItsPartitionsClaimUnprepare: a claim holds an
// sMLU of card 2, and the agent restarts on a node without card 2 (it
// fell off the bus while the agent was down). Start-up forgets the sMLU
// with a warning and removes the claim's spec, so the kubelet's
// unprepare succeeds, as it does when the chip goes while the agent runs
// (TestChipsRemovedAndAddedWhileRunningChangeTheSlices), instead of
// failing at every retry because no chip 2 is there to destroy it on.
func TestAChipGoneAtStartLetsItsPartitionsClaimUnprepare(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu370-x8", Vendor: cambricon.Vendor, ChipModes: "Partitioned"})
	held := n.claim("held", []string{"mlu-2-smlu-25p-0"})
	n.mustPrepare(held)
	require.Len(t, n.partitionsOnChips(), 1)

	n.stop()
	var chips []inventory.Chip
	for _, c := range n.inv.Chips {
		if c.Index != 2 {
			chips = append(chips, c)
		}
	}
	n.inv.Chips, n.fake.Chips = chips, chips
	n.start()
	require.Contains(t, n.logOf(), "Forgetting a recorded partition whose chip is not on this node any more")
	require.Empty(t, n.cdiFiles(), "the claim's spec named a device node of the gone chip")

	n.unprepare(held)
	require.Empty(t, n.driver.PreparedClaims())
}

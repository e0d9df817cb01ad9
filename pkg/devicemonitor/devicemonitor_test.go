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

package devicemonitor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/accel-dra/accel-dra/pkg/devicemonitor"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// fixtureNode is a writable copy of a discovery fixture node (host root
// and recorded tool output) that a test changes between polls.
type fixtureNode struct {
	t           *testing.T
	root, tools string
	tool        string
}

func copyFixture(t *testing.T, vendorDir, node, tool string) *fixtureNode {
	dir := filepath.Join("..", "vendors", vendorDir, "testdata", node)
	return &fixtureNode{t: t, tool: tool,
		root:  discoverytest.CopyTree(t, filepath.Join(dir, "root")),
		tools: discoverytest.CopyTree(t, filepath.Join(dir, tool))}
}

func (f *fixtureNode) options() source.Options {
	return source.Options{Registry: registry, Root: f.root, ToolOutput: f.tools, NodeName: "node-0"}
}

// recording is the path of the recorded output of `tool args…`.
func (f *fixtureNode) recording(args ...string) string {
	return filepath.Join(f.tools, discovery.RecordingName(f.tool, args...))
}

// read returns the recorded output of `tool args…`.
func (f *fixtureNode) read(args ...string) []byte {
	b, err := os.ReadFile(f.recording(args...))
	require.NoError(f.t, err)
	return b
}

// edit replaces old by new, once, in the recorded output of `tool args…`.
func (f *fixtureNode) edit(old, new string, args ...string) {
	b := f.read(args...)
	require.NoError(f.t, os.WriteFile(f.recording(args...), []byte(discoverytest.ReplaceOnce(f.t, string(b), old, new)), 0o644))
}

// slicesTarget stands where the driver does: it publishes each update
// with the real slice builder and keeps the last result.
type slicesTarget struct {
	vendor  inventory.Vendor
	effect  resourceapi.DeviceTaintEffect
	updates int
	devices map[string]resourceapi.Device
}

func (s *slicesTarget) Vendor() inventory.Vendor { return s.vendor }

func (s *slicesTarget) Update(_ context.Context, inv inventory.Inventory, verified time.Time) error {
	if verified.IsZero() {
		panic("an update must say when it was verified")
	}
	s.updates++
	devices, _ := resourceslices.DevicesFor(registry, inv, s.vendor, resourceslices.Options{UnhealthyTaintEffect: s.effect})
	s.devices = map[string]resourceapi.Device{}
	for _, d := range devices {
		s.devices[d.Name] = d
	}
	return nil
}

// taints is the health taint value of each tainted device, whose key
// must be the one of its cause.
func (s *slicesTarget) taints() map[string]string {
	out := map[string]string{}
	for name, d := range s.devices {
		for _, taint := range d.Taints {
			if key := resourceslices.TaintKey(taint.Value); taint.Key != key {
				panic(fmt.Sprintf("device %s: taint %s=%s, want key %s", name, taint.Key, taint.Value, key))
			}
			out[name] = taint.Value
		}
	}
	return out
}

// chipTaints is taints() for the whole-chip devices only.
func (s *slicesTarget) chipTaints() map[string]string {
	out := map[string]string{}
	for name, v := range s.taints() {
		if *s.devices[name].Attributes[names.AttrType].StringValue == names.TypeChip {
			out[name] = v
		}
	}
	return out
}

func newMonitor(t *testing.T, ctx context.Context, f *fixtureNode, target *slicesTarget) *devicemonitor.Monitor {
	t.Helper()
	initial, err := source.Discover(ctx, f.options())
	require.NoError(t, err)
	m, err := devicemonitor.New(devicemonitor.Config{Discovery: f.options(), Interval: time.Second, Initial: initial, Targets: []devicemonitor.Target{target}})
	require.NoError(t, err)
	return m
}

func TestAChipTheToolCallsUnhealthyIsTaintedWithTheReasonAndRecovers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		vendorDir    string
		node, tool   string
		args         []string
		healthy, bad string
		device       string
		reason       string
	}{
		{name: "npu-smi says Alarm", vendorDir: "ascend", node: "atlas-800t-a2", tool: "npu-smi", args: []string{"info"},
			healthy: "| OK            | 92.0", bad: "| Alarm         | 92.0", device: "npu-1", reason: "HealthAlarm"},
		{name: "npu-smi says Critical", vendorDir: "ascend", node: "atlas-800t-a2", tool: "npu-smi", args: []string{"info"},
			healthy: "| OK            | 92.0", bad: "| Critical      | 92.0", device: "npu-1", reason: "HealthCritical"},
		{name: "cnmon says the device is not Good", vendorDir: "cambricon", node: "mlu590", tool: "cnmon", args: []string{"info"},
			healthy: "Device                     : Good", bad: "Device                     : Bad", device: "mlu-0", reason: "HealthBad"},
		{name: "cnmon says the driver is not running", vendorDir: "cambricon", node: "mlu590", tool: "cnmon", args: []string{"info"},
			healthy: "Driver                     : Running", bad: "Driver                     : Stopped", device: "mlu-0", reason: inventory.ReasonDriverNotRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			f := copyFixture(t, tc.vendorDir, tc.node, tc.tool)
			vendor := ascend.Vendor
			if tc.vendorDir == "cambricon" {
				vendor = cambricon.Vendor
			}
			target := &slicesTarget{vendor: vendor}
			m := newMonitor(t, ctx, f, target)

			require.NoError(t, m.Poll(ctx))
			require.Empty(t, target.taints())

			f.edit(tc.healthy, tc.bad, tc.args...)
			require.NoError(t, m.Poll(ctx))
			require.Equal(t, map[string]string{tc.device: tc.reason}, target.chipTaints())
			for name, d := range target.devices {
				_, tainted := target.taints()[name]
				require.Equal(t, !tainted, *d.Attributes[names.AttrHealthy].BoolValue, "the healthy attribute of %s follows the taint", name)
			}
			require.Contains(t, logs(), "Chip became unhealthy")

			f.edit(tc.bad, tc.healthy, tc.args...)
			require.NoError(t, m.Poll(ctx))
			require.Empty(t, target.taints(), "a recovered chip loses its taint")
			require.Contains(t, logs(), "Chip recovered")
		})
	}
}

func TestMissingDeviceFilesAndPCIFunctionsTaintTheirChip(t *testing.T) {
	ctx, _ := discoverytest.BufferedContext(t)
	f := copyFixture(t, "ascend", "atlas-800t-a2", "npu-smi")
	target := &slicesTarget{vendor: ascend.Vendor, effect: resourceapi.DeviceTaintEffectNoExecute}
	m := newMonitor(t, ctx, f, target)
	require.NoError(t, m.Poll(ctx))
	before := target.devices["npu-2"]

	dev3 := filepath.Join(f.root, "dev", "davinci3")
	require.NoError(t, os.Remove(dev3))
	pci2 := filepath.Join(f.root, "sys", "bus", "pci", "devices", "0000:81:00.0")
	link, err := os.Readlink(pci2)
	require.NoError(t, err)
	require.NoError(t, os.Remove(pci2))
	require.NoError(t, m.Poll(ctx))
	require.Equal(t, map[string]string{"npu-2": inventory.ReasonPCIDeviceMissing, "npu-3": inventory.ReasonDeviceFileMissing}, target.chipTaints())
	require.Equal(t, resourceapi.DeviceTaintEffectNoExecute, target.devices["npu-3"].Taints[0].Effect, "the operator opted in to NoExecute")
	after := target.devices["npu-2"]
	for _, attr := range []resourceapi.QualifiedName{names.AttrNUMANode, names.AttrUUID, "resource.kubernetes.io/pcieRoot", "resource.kubernetes.io/pciBusID"} {
		require.Equal(t, before.Attributes[attr], after.Attributes[attr], "a chip off the bus keeps its %s while tainted", attr)
	}

	require.NoError(t, os.WriteFile(dev3, nil, 0o644))
	require.NoError(t, os.Symlink(link, pci2))
	require.NoError(t, m.Poll(ctx))
	require.Empty(t, target.taints())
}

func TestChipsAddedAndRemovedWhileRunningChangeTheDevices(t *testing.T) {
	ctx, logs := discoverytest.BufferedContext(t)
	f := copyFixture(t, "cambricon", "mlu270", "cnmon")
	full := f.read("info")
	target := &slicesTarget{vendor: cambricon.Vendor}
	m := newMonitor(t, ctx, f, target)
	require.NoError(t, m.Poll(ctx))
	require.Len(t, target.devices, 3)

	// Card 2 is hot-removed: cnmon no longer lists it, its device file is gone.
	f.edit(string(full[bytesIndex(t, full, "Card 2"):]), "", "info")
	require.NoError(t, os.Remove(filepath.Join(f.root, "dev", "cambricon_dev2")))
	require.NoError(t, m.Poll(ctx))
	require.Contains(t, target.devices, "mlu-0")
	require.Contains(t, target.devices, "mlu-1")
	require.NotContains(t, target.devices, "mlu-2")
	require.Contains(t, logs(), "Chip removed")

	// And plugged back in.
	require.NoError(t, os.WriteFile(f.recording("info"), full, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "dev", "cambricon_dev2"), nil, 0o644))
	require.NoError(t, m.Poll(ctx))
	require.Contains(t, target.devices, "mlu-2")
	require.Empty(t, target.taints())
	require.Contains(t, logs(), "Chip added")
}

func bytesIndex(t *testing.T, b []byte, s string) int {
	t.Helper()
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	t.Fatalf("%q not found", s)
	return -1
}

func TestAFailedPollKeepsTheLastKnownState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(f *fixtureNode)
		msg     string
	}{
		{name: "the tool fails", breakIt: func(f *fixtureNode) { require.NoError(f.t, os.Remove(f.recording("info"))) }, msg: "no recorded output"},
		{name: "the tool prints garbage", breakIt: func(f *fixtureNode) {
			require.NoError(f.t, os.WriteFile(f.recording("info"), []byte("Card 0\n    Product Name : \x00\n"), 0o644))
		}, msg: "listing MLU cards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			f := copyFixture(t, "cambricon", "mlu590", "cnmon")
			good := f.read("info")
			target := &slicesTarget{vendor: cambricon.Vendor}
			m := newMonitor(t, ctx, f, target)
			f.edit("Device                     : Good", "Device                     : Bad", "info")
			require.NoError(t, m.Poll(ctx))
			require.Len(t, target.chipTaints(), 1)
			state := target.devices

			tc.breakIt(f)
			err := m.Poll(ctx)
			require.ErrorContains(t, err, "polling cambricon chips")
			require.ErrorContains(t, err, tc.msg)
			require.Equal(t, 1, target.updates, "a failed poll changes nothing")
			require.Equal(t, state, target.devices)
			require.Contains(t, logs(), "keeping their last known health")

			require.NoError(t, os.WriteFile(f.recording("info"), good, 0o644))
			require.NoError(t, m.Poll(ctx))
			require.Empty(t, target.taints())
			require.Contains(t, logs(), "Chips readable again")
		})
	}
}

func TestCheckTimeoutCoversThreePollsAndNeverUndercutsTheKubelet(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{
		0: 0, time.Second: 30 * time.Second, 10 * time.Second: 30 * time.Second, time.Minute: 3 * time.Minute,
	} {
		require.Equal(t, want, devicemonitor.CheckTimeout(interval), "interval %s", interval)
	}
}

func TestADisabledMonitorReturnsAtOnce(t *testing.T) {
	ctx, logs := discoverytest.BufferedContext(t)
	m, err := devicemonitor.New(devicemonitor.Config{Discovery: source.Options{Registry: registry}, Interval: 0, Targets: []devicemonitor.Target{&slicesTarget{vendor: ascend.Vendor}}})
	require.NoError(t, err)
	m.Run(ctx) // would block until ctx is done if it polled
	require.Contains(t, logs(), "Device monitor disabled")
}

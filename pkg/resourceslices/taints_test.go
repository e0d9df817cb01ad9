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

package resourceslices_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// sick marks chips of inv unhealthy: index → reason.
func sick(inv inventory.Inventory, reasons map[int]string) inventory.Inventory {
	out := inventory.Inventory{SharedDeviceNodes: inv.SharedDeviceNodes}
	for _, c := range inv.Chips {
		if r, ok := reasons[c.Index]; ok {
			c.MarkUnhealthy(r, "test")
		}
		out.Chips = append(out.Chips, c)
	}
	return out
}

// Each cause has its own key, the reason is the value, and a
// warning-level state is shown with effect None while the others keep
// claims off the chip with the configured effect.
func TestTaintsSayWhyAChipIsUnhealthy(t *testing.T) {
	chip := inventory.Chip{Vendor: ascend.Vendor, Model: "Ascend910B3", Index: 0, Healthy: true}
	taint := func(key, value string, effect resourceapi.DeviceTaintEffect) resourceapi.DeviceTaint {
		return resourceapi.DeviceTaint{Key: key, Value: value, Effect: effect}
	}
	const (
		none       = resourceapi.DeviceTaintEffectNone
		noSchedule = resourceapi.DeviceTaintEffectNoSchedule
		noExecute  = resourceapi.DeviceTaintEffectNoExecute
	)
	for _, tc := range []struct {
		name    string
		reasons []string // none keeps the chip healthy
		effect  resourceapi.DeviceTaintEffect
		want    []resourceapi.DeviceTaint
	}{
		{name: "a healthy chip has no taint", want: nil},
		{name: "Ascend Warning is shown, not blocking", reasons: []string{inventory.ReasonToolHealth("Warning")},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthWarning", none)}},
		{name: "Ascend Warning stays None under NoExecute", reasons: []string{inventory.ReasonToolHealth("Warning")}, effect: noExecute,
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthWarning", none)}},
		{name: "Ascend Alarm", reasons: []string{inventory.ReasonToolHealth("Alarm")},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthAlarm", noSchedule)}},
		{name: "Ascend Critical, NoExecute by opt-in", reasons: []string{inventory.ReasonToolHealth("Critical")}, effect: noExecute,
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthCritical", noExecute)}},
		{name: "Ascend UNKNOWN", reasons: []string{inventory.ReasonToolHealth("UNKNOWN")},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthUnknown", noSchedule)}},
		{name: "Cambricon In problem", reasons: []string{inventory.ReasonToolHealth("In problem")},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthInproblem", noSchedule)}},
		{name: "the driver not running", reasons: []string{inventory.ReasonDriverNotRunning},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/driver-not-running", "DriverNotRunning", noSchedule)}},
		{name: "a missing device file, NoExecute by opt-in", reasons: []string{inventory.ReasonDeviceFileMissing}, effect: noExecute,
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/device-file-missing", "DeviceFileMissing", noExecute)}},
		{name: "a PCI function gone", reasons: []string{inventory.ReasonPCIDeviceMissing},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/pci-device-missing", "PCIDeviceMissing", noSchedule)}},
		{name: "a failed library call", reasons: []string{inventory.ReasonLibraryError},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/library-error", "LibraryError", noSchedule)}},
		{name: "the super pod's fabric calls the chip abnormal", reasons: []string{inventory.ReasonSuperPodLinkAbnormal},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/superpod-link", "SuperPodLinkAbnormal", noSchedule)}},
		{name: "a simulated unhealthy chip", reasons: []string{inventory.ReasonSimulated},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/unhealthy", "SimulatedUnhealthy", noSchedule)}},
		{name: "a reason that is no label value becomes Unhealthy", reasons: []string{"bad reason!"},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/unhealthy", "Unhealthy", noSchedule)}},
		{name: "several causes, a taint each in the order found", reasons: []string{inventory.ReasonDeviceFileMissing, inventory.ReasonToolHealth("Warning"), inventory.ReasonDriverNotRunning},
			want: []resourceapi.DeviceTaint{
				taint("accel-dra.dev/device-file-missing", "DeviceFileMissing", noSchedule),
				taint("accel-dra.dev/health", "HealthWarning", none),
				taint("accel-dra.dev/driver-not-running", "DriverNotRunning", noSchedule),
			}},
		{name: "two reasons of one cause: the first stays", reasons: []string{inventory.ReasonToolHealth("Alarm"), inventory.ReasonToolHealth("Warning"), inventory.ReasonToolHealth("Alarm")},
			want: []resourceapi.DeviceTaint{taint("accel-dra.dev/health", "HealthAlarm", noSchedule)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chip
			for _, r := range tc.reasons {
				c.MarkUnhealthy(r, "test")
			}
			require.Equal(t, tc.want, resourceslices.Taints(c, tc.effect))
		})
	}
	// A chip whose reason was set without MarkUnhealthy.
	c := chip
	c.Healthy, c.HealthReason = false, inventory.ReasonPCIDeviceMissing
	require.Equal(t, []resourceapi.DeviceTaint{taint("accel-dra.dev/pci-device-missing", "PCIDeviceMissing", noSchedule)}, resourceslices.Taints(c, ""))
	c.HealthReason = ""
	require.Equal(t, []resourceapi.DeviceTaint{taint("accel-dra.dev/unhealthy", "Unhealthy", noSchedule)}, resourceslices.Taints(c, ""))
}

func TestParseTaintEffectAcceptsNoScheduleAndNoExecuteOnly(t *testing.T) {
	for in, want := range map[string]resourceapi.DeviceTaintEffect{
		"": resourceapi.DeviceTaintEffectNoSchedule, "NoSchedule": resourceapi.DeviceTaintEffectNoSchedule, "NoExecute": resourceapi.DeviceTaintEffectNoExecute,
	} {
		got, err := resourceslices.ParseTaintEffect(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := resourceslices.ParseTaintEffect("None")
	require.EqualError(t, err, `unhealthy taint effect "None" is not one of NoSchedule, NoExecute`)
}

func TestEveryDeviceOfAChipCarriesItsHealth(t *testing.T) {
	inv := sick(inventoryOf(t, "n", "atlas-800t-a2"), map[int]string{1: "HealthCritical"})
	for _, effect := range []resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute} {
		devices, _ := resourceslices.DevicesFor(registry, inv, ascend.Vendor, resourceslices.Options{Policy: partitioned.Policy, UnhealthyTaintEffect: effect})
		tainted := 0
		for _, d := range devices {
			parent := d.Name
			if p, ok := d.Attributes[resourceslices.AttrParentDevice]; ok {
				parent = *p.StringValue
			}
			healthy := parent != "npu-1"
			require.Equal(t, healthy, *d.Attributes[names.AttrHealthy].BoolValue, d.Name)
			if healthy {
				require.Empty(t, d.Taints, d.Name)
				continue
			}
			tainted++
			require.Equal(t, []resourceapi.DeviceTaint{{Key: names.TaintHealth, Value: "HealthCritical", Effect: effect}}, d.Taints, d.Name)
		}
		require.Greater(t, tainted, 1, "the chip and its partitions")
	}
}

func TestARecoveredChipLosesItsTaint(t *testing.T) {
	healthy := inventoryOf(t, "n", "mlu370-x8")
	before := resourceslices.SlicesFor(registry, "n", sick(healthy, map[int]string{3: inventory.ReasonPCIDeviceMissing}), resourceslices.Options{})
	after := resourceslices.SlicesFor(registry, "n", healthy, resourceslices.Options{})
	require.NotEqual(t, before, after)
	require.Equal(t, resourceslices.SlicesFor(registry, "n", healthy, resourceslices.Options{}), after, "recovered is the same as never sick")
}

func TestTaintedSlicesMatchTheGoldenYAML(t *testing.T) {
	for _, tc := range []struct {
		golden  string
		profile string
		reasons map[int]string
		effect  resourceapi.DeviceTaintEffect
	}{
		{"atlas-800t-a2-alarm-noschedule", "atlas-800t-a2", map[int]string{1: "HealthAlarm"}, ""},
		{"mlu370-x8-gone-noexecute", "mlu370-x8", map[int]string{0: inventory.ReasonDeviceFileMissing, 5: inventory.ReasonPCIDeviceMissing}, resourceapi.DeviceTaintEffectNoExecute},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			inv := sick(inventoryOf(t, "node-0", tc.profile), tc.reasons)
			requireGolden(t, filepath.Join("testdata", "golden-taints", tc.golden+".yaml"),
				resourceslices.SlicesFor(registry, "node-0", inv, resourceslices.Options{Policy: partitioned.Policy, UnhealthyTaintEffect: tc.effect}))
		})
	}
}

// requireGolden compares slices, as YAML documents, with the golden file
// (rewritten with -update).
func requireGolden(t *testing.T, golden string, slices []*resourceapi.ResourceSlice) {
	t.Helper()
	var out []byte
	for _, s := range slices {
		b, err := yaml.Marshal(s)
		require.NoError(t, err)
		out = append(append(out, "---\n"...), b...)
	}
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, out, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./pkg/resourceslices -update to create it")
	require.Equal(t, string(want), string(out))
}

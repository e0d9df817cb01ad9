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
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// TestTelemetryReadsEachMLUThroughCNDev reads a busy, an idle and an MLU
// whose temperature call fails through the mock libcndev: the failing
// call leaves only that chip's temperature out and names the call.
func TestTelemetryReadsEachMLUThroughCNDev(t *testing.T) {
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvTelemetry, filepath.Join(cndevtest.Dir(), "telemetry-busy-idle.txt"))
	tel := Cambricon{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
	chips := []inventory.Chip{{Index: 0, UUID: "a"}, {Index: 1, UUID: "b"}, {Index: 2, UUID: "c"}, {Index: 9, UUID: "gone"}}
	samples, err := tel.Read(t.Context(), chips)
	require.NoError(t, err)
	require.Len(t, samples, 4)
	total := float64(23308 * mebibyte)
	healthy := true
	want := []vendors.ChipSample{
		{Index: 0, UUID: "a", UtilizationRatio: vendors.Value(0.92), MemoryUsedBytes: vendors.Value(0), MemoryTotalBytes: &total,
			TemperatureCelsius: vendors.Value(66), PowerWatts: vendors.Value(214), Healthy: &healthy},
		{Index: 1, UUID: "b", UtilizationRatio: vendors.Value(0), MemoryUsedBytes: vendors.Value(0), MemoryTotalBytes: &total,
			TemperatureCelsius: vendors.Value(36), PowerWatts: vendors.Value(32), Healthy: &healthy},
		{Index: 2, UUID: "c", UtilizationRatio: vendors.Value(0.4), MemoryUsedBytes: vendors.Value(0), MemoryTotalBytes: &total,
			PowerWatts: vendors.Value(120), Healthy: &healthy},
		{Index: 9, UUID: "gone"},
	}
	require.Len(t, samples[2].Errors, 1)
	assert.Equal(t, "cndevGetTemperatureInfo", samples[2].Errors[0].Call)
	assert.ErrorContains(t, samples[2].Errors[0], "cndev error 7")
	samples[2].Errors = nil
	require.Len(t, samples[3].Errors, 1)
	assert.Equal(t, "cndevGetDeviceHandleByIndex", samples[3].Errors[0].Call)
	samples[3].Errors = nil
	assert.Equal(t, want, samples)

	// The load changes between reads.
	path := filepath.Join(t.TempDir(), "telemetry.txt")
	require.NoError(t, os.WriteFile(path, []byte("load dev=1 util=55 temp=50 power=150\n"), 0o644))
	t.Setenv(cndevtest.EnvTelemetry, path)
	samples, err = tel.Read(t.Context(), chips[1:2])
	require.NoError(t, err)
	assert.Equal(t, 0.55, *samples[0].UtilizationRatio)
}

// TestTelemetryReportsEachSMLUInstance reads a chip with two sMLU
// instances (a half and a quarter, in the mock's state file): one
// instance sample each, with the instance's memory share.
func TestTelemetryReportsEachSMLUInstance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "smlu-state")
	require.NoError(t, os.WriteFile(state, []byte("1 1 1 half\n1 2 2 quarter\n"), 0o644))
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvState, state)
	samples, err := Cambricon{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib}).Read(t.Context(),
		[]inventory.Chip{{Index: 0, UUID: "a"}, {Index: 1, UUID: "b"}})
	require.NoError(t, err)
	assert.Empty(t, samples[0].Instances, "no instances on chip 0")
	zero := vendors.Value(0)
	assert.Equal(t, []vendors.InstanceSample{
		{ID: 1, UtilizationRatio: zero, MemoryUsedBytes: zero, MemoryTotalBytes: vendors.Value(float64(23308 / 2 * mebibyte))},
		{ID: 2, UtilizationRatio: zero, MemoryUsedBytes: zero, MemoryTotalBytes: vendors.Value(float64(23308 / 4 * mebibyte))},
	}, samples[1].Instances, "the mock reports no use of an instance")
}

// TestTelemetryWithoutCNDevReadsCnmon reads the recorded nodes without a
// library: cnmon info's values of the first card.
func TestTelemetryWithoutCNDevReadsCnmon(t *testing.T) {
	for _, tc := range []struct {
		node string
		// want: utilization, memory used and total in MiB, board
		// temperature, power.
		want [5]float64
		// health: cnmon's Health State; CNMON v4 (the MLU270's) has none.
		health bool
	}{
		{node: "mlu370-x8", want: [5]float64{0, 112, 23308, 34, 38}, health: true},
		{node: "mlu270", want: [5]float64{0, 0, 16384, 38, 22}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			root, runner := fixture(tc.node)
			cfg := vendors.BackendConfig{Root: root, Runner: runner, Library: vendors.LibraryNone}
			inv, err := Cambricon{}.NewBackend(cfg).Discover(t.Context())
			require.NoError(t, err)
			samples, err := Cambricon{}.NewTelemetry(cfg).Read(t.Context(), inv.Chips)
			require.NoError(t, err)
			require.Len(t, samples, len(inv.Chips))
			s := samples[0]
			require.Empty(t, s.Errors)
			mib := float64(mebibyte)
			if tc.health {
				require.NotNil(t, s.Healthy)
				assert.True(t, *s.Healthy, "cnmon says Good and Running")
			} else {
				assert.Nil(t, s.Healthy)
			}
			assert.Equal(t, tc.want, [5]float64{*s.UtilizationRatio, *s.MemoryUsedBytes / mib, *s.MemoryTotalBytes / mib, *s.TemperatureCelsius, *s.PowerWatts})
			for i, s := range samples {
				assert.Equal(t, inv.Chips[i].MemoryBytes, int64(*s.MemoryTotalBytes), "card %d: cnmon's total is discovery's", i)
			}
		})
	}
}

func TestTelemetryWithoutCNDevOrCnmonFails(t *testing.T) {
	tel := Cambricon{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Runner: discovery.RecordedRunner{Dir: t.TempDir()}, Library: vendors.LibraryNone})
	_, err := tel.Read(t.Context(), []inventory.Chip{{Index: 0}})
	require.ErrorContains(t, err, "without libcndev.so")
}

// Telemetry grades a card's health as discovery does: with
// cndevGetCardHealthStateV2 an overall Warn or Fail is no healthy card in
// either, and a card the metrics call healthy is one discovery publishes
// healthy.
func TestTelemetryHealthAgreesWithDiscovery(t *testing.T) {
	f := gradedMLU590Fixture(t, "health=problem")
	root, _ := fixture("mlu590")
	for _, tc := range []struct {
		name   string
		cflags []string
	}{
		{name: "with cndevGetCardHealthStateV2"},
		{name: "an older library without it", cflags: noHealthV2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := mockNode(t, f, tc.cflags...)
			inv, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			samples, err := Cambricon{}.NewTelemetry(vendors.BackendConfig{Root: root, Library: lib}).Read(ctx, inv.Chips)
			require.NoError(t, err)
			require.Len(t, samples, len(inv.Chips))
			for i, c := range inv.Chips {
				require.NotNil(t, samples[i].Healthy, "chip %d", c.Index)
				require.Equal(t, c.Healthy, *samples[i].Healthy, "chip %d (%s)", c.Index, c.HealthReason)
			}
		})
	}
}

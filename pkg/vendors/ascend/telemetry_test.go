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
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

func chipsWithLogicIDs(ids ...int) []inventory.Chip {
	var out []inventory.Chip
	for _, id := range ids {
		out = append(out, inventory.Chip{Vendor: Vendor, Index: id, UUID: "uuid-" + string(rune('0'+id)),
			Extra: map[string]inventory.Value{ExtraLogicID: inventory.IntValue(int64(id))}})
	}
	return out
}

// TestTelemetryReadsEachChipThroughDCMI reads a busy, an idle and a chip
// whose temperature call fails through the mock libdcmi.so: the failing
// call leaves only that chip's temperature out, and says which call.
func TestTelemetryReadsEachChipThroughDCMI(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-800t-a2", "vdev 3 148 vir04")
	t.Setenv("ACCEL_DRA_DCMI_TELEMETRY", filepath.Join("testdata", "dcmi", "telemetry-busy-idle.txt"))
	tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
	samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0, 1, 2, 3))
	require.NoError(t, err)
	require.Len(t, samples, 4)
	hbm := float64(65536) * dcmiMiB
	used := float64(65536/20) * dcmiMiB // the mock's dcmi_get_device_hbm_info
	healthy := true
	want := []vendors.ChipSample{
		{Index: 0, UUID: "uuid-0", UtilizationRatio: vendors.Value(0.87), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			TemperatureCelsius: vendors.Value(61), PowerWatts: vendors.Value(231.5), Healthy: &healthy},
		{Index: 1, UUID: "uuid-1", UtilizationRatio: vendors.Value(0), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			TemperatureCelsius: vendors.Value(38), PowerWatts: vendors.Value(70.2), Healthy: &healthy},
		{Index: 2, UUID: "uuid-2", UtilizationRatio: vendors.Value(0.45), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			PowerWatts: vendors.Value(150), Healthy: &healthy},
		{Index: 3, UUID: "uuid-3", UtilizationRatio: vendors.Value(0), MemoryUsedBytes: &used, MemoryTotalBytes: &hbm,
			TemperatureCelsius: vendors.Value(40), PowerWatts: vendors.Value(70), Healthy: &healthy,
			// A 910B vNPU's activity query fails (-8255: DCMI reads vNPU
			// memory on 310P only): listed, no figures, no error.
			Instances: []vendors.InstanceSample{{ID: 148}}},
	}
	require.Len(t, samples[2].Errors, 1)
	assert.Equal(t, "dcmi_get_device_temperature", samples[2].Errors[0].Call)
	assert.ErrorContains(t, samples[2].Errors[0], "dcmi_get_device_temperature returned -8020")
	samples[2].Errors = nil
	assert.Equal(t, want, samples)
}

// dcmiTelemetryOf is the telemetry of mock DCMI library lib, whose
// telemetry calls report the chips' load as the lines of load say
// (format in mock_dcmi.c).
func dcmiTelemetryOf(t *testing.T, lib, load string) vendors.Telemetry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "telemetry.txt")
	require.NoError(t, os.WriteFile(path, []byte(load), 0o644))
	t.Setenv("ACCEL_DRA_DCMI_TELEMETRY", path)
	return Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
}

func TestTelemetryFollowsTheChipsLoad(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-800t-a2")
	path := filepath.Join(t.TempDir(), "telemetry.txt")
	t.Setenv("ACCEL_DRA_DCMI_TELEMETRY", path)
	tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
	for _, util := range []string{"10", "95", "0"} {
		require.NoError(t, os.WriteFile(path, []byte("load 5 "+util+" 50 1000\n"), 0o644))
		samples, err := tel.Read(t.Context(), chipsWithLogicIDs(5))
		require.NoError(t, err)
		require.Empty(t, samples[0].Errors)
		assert.Equal(t, map[string]float64{"10": 0.1, "95": 0.95, "0": 0}[util], *samples[0].UtilizationRatio)
	}
}

// TestTelemetryWithoutDCMIReadsTheNpuSmiTable reads the recorded nodes
// without a library: the values npu-smi info prints, chip by chip, with
// the 310P's NA power left out and said so.
func TestTelemetryWithoutDCMIReadsTheNpuSmiTable(t *testing.T) {
	for _, tc := range []struct {
		node string
		// want are the first chip's utilization, memory used and total in
		// MiB, temperature and power (-1: absent).
		want [5]float64
		na   bool
	}{
		{node: "atlas-800t-a2", want: [5]float64{0, 3318, 65536, 43, 101.8}},
		// 310P: npu-smi prints no power (NA), by design, not as a failure.
		{node: "atlas-300i-duo", want: [5]float64{0, 1529, 44280, 48, -1}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			root, runner := fixture(tc.node)
			cfg := vendors.BackendConfig{Root: root, Runner: runner, Library: vendors.LibraryNone}
			inv, err := Ascend{}.NewBackend(cfg).Discover(t.Context())
			require.NoError(t, err)
			samples, err := Ascend{}.NewTelemetry(cfg).Read(t.Context(), inv.Chips)
			require.NoError(t, err)
			require.Len(t, samples, len(inv.Chips))
			s := samples[0]
			got := [5]float64{*s.UtilizationRatio, *s.MemoryUsedBytes / dcmiMiB, *s.MemoryTotalBytes / dcmiMiB, *s.TemperatureCelsius, -1}
			if s.PowerWatts != nil {
				got[4] = *s.PowerWatts
			}
			assert.Equal(t, tc.want, got)
			require.NotNil(t, s.Healthy)
			assert.True(t, *s.Healthy, "npu-smi says OK")
			if tc.na {
				require.Len(t, s.Errors, 1)
				assert.ErrorContains(t, s.Errors[0], "some values are NA")
			} else {
				assert.Empty(t, s.Errors)
			}
			for i, s := range samples {
				assert.Equal(t, inv.Chips[i].MemoryBytes, int64(*s.MemoryTotalBytes), "chip %d: the table's total is discovery's", i)
			}
		})
	}
}

func TestTelemetryWithoutDCMIOrNpuSmiFails(t *testing.T) {
	tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Runner: discovery.RecordedRunner{Dir: t.TempDir()}, Library: vendors.LibraryNone})
	_, err := tel.Read(t.Context(), chipsWithLogicIDs(0))
	require.ErrorContains(t, err, "without libdcmi.so")
}

func TestTelemetryOfAChipDCMIDoesNotKnow(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-800t-a2")
	tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
	samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0, 42))
	require.NoError(t, err)
	assert.Empty(t, samples[0].Errors)
	require.Len(t, samples[1].Errors, 1)
	assert.ErrorContains(t, samples[1].Errors[0], "no chip with logic id 42")
	assert.Nil(t, samples[1].UtilizationRatio)
}

// A chip npu-smi prints without its NPU row (health 0xFFFFFFFF) reads as
// unhealthy, as discovery publishes it, and the table still gives the
// other chips' usage.
func TestTelemetryWithoutDCMIReportsAChipWithoutItsNPURowUnhealthy(t *testing.T) {
	root, _ := fixture("atlas-800t-a2")
	runner := recordings(t, "atlas-800t-a2")
	cfg := vendors.BackendConfig{Root: root, Runner: runner, Library: vendors.LibraryNone}
	inv, err := Ascend{}.NewBackend(cfg).Discover(t.Context())
	require.NoError(t, err)
	runner[cmdInfo] = dropLines(t, runner[cmdInfo], "| 1     910B3 ")
	samples, err := Ascend{}.NewTelemetry(cfg).Read(t.Context(), inv.Chips)
	require.NoError(t, err)
	require.Len(t, samples, 8)
	for i, s := range samples {
		require.NotNil(t, s.Healthy, "chip %d", i)
		require.Equal(t, i != 1, *s.Healthy, "chip %d", i)
		if i != 1 {
			require.NotNil(t, s.UtilizationRatio, "chip %d", i)
		}
	}
	require.Len(t, samples[1].Errors, 1)
	require.ErrorContains(t, samples[1].Errors[0], "npu-smi prints no NPU row for it")
}

// A vNPU's utilization and memory come from GET_VDEV_ACTIVITY, in KB; the
// mock fills everything else with 0xFF as the HAL does, so reading another
// sub-command, or trusting the fill, shows as a wrong figure.
func TestTelemetryReadsVNPUActivityThroughDCMI(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         string
		util        *float64
		total, used *float64
		err         string
	}{
		{name: "310P on the host", util: vendors.Value(0.37),
			total: vendors.Value(float64(43693*4/8) * dcmiMiB), used: vendors.Value(1024 * dcmiMiB)},
		{name: "310P in a privileged container", env: "env privileged", util: vendors.Value(0.37),
			total: vendors.Value(float64(43693*4/8) * dcmiMiB), used: vendors.Value(1024 * dcmiMiB)},
		{name: "310P in an unprivileged container: refused", env: "env container", err: "returned -8002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := buildMockDCMI(t, "atlas-300i-duo", "vdev 1 117 vir04", tc.env)
			tel := dcmiTelemetryOf(t, lib, "vload 117 37 1024\n")
			samples, err := tel.Read(t.Context(), chipsWithLogicIDs(1))
			require.NoError(t, err)
			require.Len(t, samples, 1)
			require.Equal(t, []vendors.InstanceSample{{ID: 117, UtilizationRatio: tc.util, MemoryTotalBytes: tc.total, MemoryUsedBytes: tc.used}},
				samples[0].Instances)
			if tc.err == "" {
				require.Empty(t, samples[0].Errors)
				return
			}
			require.Len(t, samples[0].Errors, 1)
			require.ErrorContains(t, samples[0].Errors[0], tc.err)
		})
	}
}

// The 0xFF fill the HAL leaves in a field it does not fill is no figure.
func TestVNPUActivityRejectsTheFill(t *testing.T) {
	fill := dcmiComputingResource{VDevAICoreUtilization: math.MaxUint32, VDevMemoryTotal: math.MaxUint64, VDevMemoryFree: math.MaxUint64}
	util, total, used := vnpuActivity(fill)
	require.Nil(t, util)
	require.Nil(t, total)
	require.Nil(t, used)
	util, total, used = vnpuActivity(dcmiComputingResource{VDevAICoreUtilization: 50, VDevMemoryTotal: 2048, VDevMemoryFree: 1024})
	require.Equal(t, vendors.Value(0.5), util)
	require.Equal(t, vendors.Value(2048*1024), total)
	require.Equal(t, vendors.Value(1024*1024), used)
}

// Power a chip has none of by design is absent without an error on every
// read, through DCMI (310P: "not supported") and npu-smi (NA on 310P, "-"
// on the A3's second die); a temperature below -275 °C is no reading, as
// mind-cluster refuses it.
func TestTelemetryLeavesOutWhatAChipDoesNotReport(t *testing.T) {
	t.Run("310P through DCMI", func(t *testing.T) {
		lib := buildMockDCMI(t, "atlas-300i-duo")
		tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
		samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0))
		require.NoError(t, err)
		require.Nil(t, samples[0].PowerWatts)
		require.Empty(t, samples[0].Errors)
		require.NotNil(t, samples[0].TemperatureCelsius)
	})
	t.Run("a card without an MCU figure through DCMI", func(t *testing.T) {
		lib := buildMockDCMI(t, "atlas-300i-duo", "fail dcmi_mcu_get_power_info -8255")
		tel := Ascend{}.NewTelemetry(vendors.BackendConfig{Root: t.TempDir(), Library: lib})
		samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0))
		require.NoError(t, err)
		require.Nil(t, samples[0].PowerWatts)
		require.Nil(t, samples[0].CardPowerWatts)
		require.Empty(t, samples[0].Errors)
	})
	t.Run("a temperature below -275 °C through DCMI", func(t *testing.T) {
		lib := buildMockDCMI(t, "atlas-800t-a2")
		tel := dcmiTelemetryOf(t, lib, "load 0 10 -276 700\n")
		samples, err := tel.Read(t.Context(), chipsWithLogicIDs(0))
		require.NoError(t, err)
		require.Nil(t, samples[0].TemperatureCelsius)
		require.Len(t, samples[0].Errors, 1)
		require.ErrorContains(t, samples[0].Errors[0], "temperature -276 °C is below -275 °C")
	})
	t.Run("the A3's second die through npu-smi", func(t *testing.T) {
		root, _ := fixture("atlas-800t-a2")
		runner := recordings(t, "atlas-800t-a2")
		cfg := vendors.BackendConfig{Root: root, Runner: runner, Library: vendors.LibraryNone}
		inv, err := Ascend{}.NewBackend(cfg).Discover(t.Context())
		require.NoError(t, err)
		// npu-smi prints "-" for the power of an A3 module's second die.
		runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], "| 101.8 ", "| -     ")
		samples, err := Ascend{}.NewTelemetry(cfg).Read(t.Context(), inv.Chips)
		require.NoError(t, err)
		require.Nil(t, samples[0].PowerWatts)
		require.Empty(t, samples[0].Errors)
		require.NotNil(t, samples[1].PowerWatts)
	})
}

// Telemetry grades an Ascend chip's health as discovery does: level 0 is
// healthy, level 1 (Warning, a warning-level taint in discovery) and above
// are not, through DCMI and npu-smi alike.
func TestTelemetryHealthAgreesWithDiscovery(t *testing.T) {
	for _, health := range []int{0, 1, 2, 3} {
		t.Run(fmt.Sprint(health), func(t *testing.T) {
			lib := buildMockDCMI(t, "atlas-800t-a2", fmt.Sprintf("health 1 %d", health))
			root, runner := fixture("atlas-800t-a2")
			cfg := vendors.BackendConfig{Root: root, Runner: runner, Library: lib}
			inv, err := Ascend{}.NewBackend(cfg).Discover(t.Context())
			require.NoError(t, err)
			samples, err := Ascend{}.NewTelemetry(cfg).Read(t.Context(), inv.Chips)
			require.NoError(t, err)
			for i, c := range inv.Chips {
				require.NotNil(t, samples[i].Healthy, "chip %d", c.Index)
				require.Equal(t, c.Healthy, *samples[i].Healthy, "chip %d (%s)", c.Index, c.HealthReason)
			}
			require.Equal(t, health == 0, inv.Chips[1].Healthy)
		})
	}
}

// A 310P chip has no power of its own; its card's MCU has, which is read
// as the card's, the same on both chips of a card, as mind-cluster's
// A310PManager reads it. Chips with a figure of their own never ask the
// MCU, and a failing MCU call is said as that call for that card.
func TestTelemetryReadsThe310PCardsPowerFromItsMCU(t *testing.T) {
	for _, tc := range []struct {
		name, node, extra, load string
		chips                   []int
		chip, card              []*float64
		err                     string
	}{
		{name: "Atlas 300I Duo: each card's MCU", node: "atlas-300i-duo", load: "mcu 1 1234\nmcu 2 987\n", chips: []int{0, 1, 2},
			chip: []*float64{nil, nil, nil}, card: []*float64{vendors.Value(123.4), vendors.Value(123.4), vendors.Value(98.7)}},
		{name: "a card not listed: the mock's idle card", node: "atlas-300i-duo", chips: []int{3},
			chip: []*float64{nil}, card: []*float64{vendors.Value(72)}},
		{name: "910B3: the chip's own figure, no MCU", node: "atlas-800t-a2", load: "load 0 10 50 2315\nmcu 0 1234\n", chips: []int{0},
			chip: []*float64{vendors.Value(231.5)}, card: []*float64{nil}},
		{name: "the MCU call fails", node: "atlas-300i-duo", extra: "fail dcmi_mcu_get_power_info -8005", chips: []int{0},
			chip: []*float64{nil}, card: []*float64{nil}, err: "dcmi_mcu_get_power_info returned -8005"},
		{name: "a negative figure", node: "atlas-300i-duo", load: "mcu 1 -5\n", chips: []int{0},
			chip: []*float64{nil}, card: []*float64{nil}, err: "card 1: power -5 (0.1 W) is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := buildMockDCMI(t, tc.node, tc.extra)
			tel := dcmiTelemetryOf(t, lib, tc.load)
			samples, err := tel.Read(t.Context(), chipsWithLogicIDs(tc.chips...))
			require.NoError(t, err)
			for i := range tc.chips {
				require.Equal(t, tc.chip[i], samples[i].PowerWatts, "chip %d", tc.chips[i])
				require.Equal(t, tc.card[i], samples[i].CardPowerWatts, "chip %d", tc.chips[i])
				if tc.err == "" {
					require.Empty(t, samples[i].Errors, "chip %d", tc.chips[i])
					continue
				}
				require.Len(t, samples[i].Errors, 1)
				require.Equal(t, "dcmi_mcu_get_power_info", samples[i].Errors[0].Call)
				require.ErrorContains(t, samples[i].Errors[0], tc.err)
			}
		})
	}
}

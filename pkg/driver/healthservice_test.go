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

package driver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// healthDriver is a driver, without kubelet plugin, serving the chips of
// a simulated Atlas 300I Duo (Partitioned: chips and vNPU slots) with the
// given health check timeout.
func healthDriver(t *testing.T, timeout time.Duration) (*Driver, []inventory.Chip) {
	t.Helper()
	p, err := profile.Load(registry, "atlas-300i-duo")
	require.NoError(t, err)
	inv, err := profilenode.New(registry, "node-0", p).Discover(context.Background())
	require.NoError(t, err)
	chips := inv.ChipsOf(ascend.Vendor)
	require.NotEmpty(t, chips)
	d := &Driver{vendor: ascend.Ascend{}, names: ascend.Ascend{}.Names(), parts: ascend.VNPUs{}, node: "node-0", policy: partitions.Policy{Registry: registry, Default: partitions.ModePartitioned},
		healthTimeout: timeout, healthWake: make(chan struct{})}
	d.index(chips)
	require.NotEmpty(t, d.slots, "the profile's chips have partition slots")
	return d, chips
}

func byName(r kubeletplugin.DeviceHealthReport) map[string]kubeletplugin.DeviceHealth {
	out := map[string]kubeletplugin.DeviceHealth{}
	for _, h := range r.Devices {
		out[h.DeviceName] = h
	}
	return out
}

func TestHealthReportVouchesOnlyForWhatAPollVerified(t *testing.T) {
	verified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		verified time.Time
		want     kubeletplugin.HealthStatus
		msg      string
	}{
		{name: "no monitor: the start-up state", want: kubeletplugin.HealthStatusHealthy},
		{name: "verified within the timeout", timeout: time.Hour, verified: time.Now(), want: kubeletplugin.HealthStatusHealthy},
		{name: "not verified for longer than the timeout", timeout: time.Minute, verified: verified,
			want: kubeletplugin.HealthStatusUnknown, msg: "not verified since 2026-01-02T03:04:05Z: the device monitor cannot re-read the chips"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, chips := healthDriver(t, tc.timeout)
			d.setHealth(chips, nil, tc.verified)
			report := d.healthReport()
			require.Len(t, report.Devices, len(chips)+len(d.slots))
			for _, h := range report.Devices {
				require.Equal(t, tc.want, h.Health, h.DeviceName)
				require.Equal(t, "node-0", h.PoolName)
				require.Equal(t, tc.timeout, h.HealthCheckTimeout, h.DeviceName)
				require.True(t, strings.HasPrefix(h.Message, tc.msg), "%s: %q", h.DeviceName, h.Message)
				if tc.timeout > 0 {
					require.Equal(t, tc.verified, h.LastUpdated, "a report is as old as the poll that verified it")
				}
			}
		})
	}
}

func TestAnUnhealthyChipsPartitionsAreUnhealthyWithItsReason(t *testing.T) {
	d, chips := healthDriver(t, 0)
	chips[0].MarkUnhealthy(inventory.ReasonDeviceFileMissing, "device file /dev/davinci0 is missing")
	d.index(chips)
	d.setHealth(chips, nil, time.Time{})
	got := byName(d.healthReport())
	require.Equal(t, kubeletplugin.HealthStatusUnhealthy, got["npu-0"].Health)
	require.Equal(t, "DeviceFileMissing: device file /dev/davinci0 is missing", got["npu-0"].Message)
	partitions := 0
	for name, h := range got {
		switch {
		case strings.HasPrefix(name, "npu-0-"):
			partitions++
			require.Equal(t, kubeletplugin.HealthStatusUnhealthy, h.Health, name)
			require.Equal(t, "chip npu-0: DeviceFileMissing: device file /dev/davinci0 is missing", h.Message, name)
		case name != "npu-0":
			require.Equal(t, kubeletplugin.HealthStatusHealthy, h.Health, name)
			require.Empty(t, h.Message, name)
		}
	}
	require.Positive(t, partitions)
}

// TestHealthReportIsConsistentWhileHealthChanges calls healthReport (as
// WatchHealthStatus and a metrics scrape do) while health flips: every
// report is one state, the chip and its partitions agreeing. Run with
// -race it also checks the calls share no unguarded data.
func TestHealthReportIsConsistentWhileHealthChanges(t *testing.T) {
	d, chips := healthDriver(t, 0)
	sick := append([]inventory.Chip{}, chips...)
	sick[0].MarkUnhealthy(inventory.ReasonToolHealth("Alarm"), "npu-smi reports health Alarm")
	d.setHealth(chips, nil, time.Time{})

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got := byName(d.healthReport())
				chip := got["npu-0"].Health
				for name, h := range got {
					if strings.HasPrefix(name, "npu-0-") && h.Health != chip {
						errs <- name + " is " + string(h.Health) + " but its chip is " + string(chip)
						return
					}
				}
			}
		})
	}
	for i := range 200 {
		d.mu.Lock()
		if i%2 == 0 {
			d.index(sick)
			d.setHealth(sick, nil, time.Time{})
		} else {
			d.index(chips)
			d.setHealth(chips, nil, time.Time{})
		}
		d.mu.Unlock()
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

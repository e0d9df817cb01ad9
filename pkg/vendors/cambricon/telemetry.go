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

// Telemetry: each MLU's utilization, memory, temperature, power and health
// through CNDev, the calls of Cambricon's mlu-exporter
// (Cambricon/mlu-exporter@934abae pkg/cndev/cndev.go: GetDeviceMemory
// line 796 cndevGetMemoryUsageV2, GetDevicePower line 1158
// cndevGetDevicePowerInfo, GetDeviceTemperature line 1495
// cndevGetTemperatureInfo, GetDeviceUtil line 1578
// cndevGetDeviceUtilizationInfo). Without libcndev there is no telemetry:
// the series are absent and the collector logs why once.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Go mirrors of the telemetry structs of cndev.h (testdata/cndev/cndev.h).
type (
	cndevDevicePowerInfo struct {
		Usage    int32 // W
		Cap      int32
		Machine  int32
		Tdp      int32
		MaxPower int32
		Reserved [16]int32
	}
	cndevTemperatureInfo struct {
		Version    int32
		Board      int32 // °C
		Cluster    [20]int32
		MemoryDie  [8]int32
		Chip       int32
		AirInlet   int32
		AirOutlet  int32
		Memory     int32
		VideoInput int32
		CPU        int32
		Isp        int32
	}
	cndevUtilizationInfo struct {
		Version                int32
		AverageCoreUtilization int32 // %
		CoreUtilization        [80]int32
	}
)

// NewTelemetry implements vendors.Vendor.
func (Cambricon) NewTelemetry(cfg vendors.BackendConfig) vendors.Telemetry {
	return &Telemetry{b: New(Config{Root: cfg.Root, Runner: cfg.Runner, Library: cfg.Library})}
}

// Telemetry reads Cambricon chips through CNDev (vendors.Telemetry).
type Telemetry struct {
	b *Backend

	bindOnce sync.Once
	// The telemetry calls, nil where the library lacks one.
	utilization func(*cndevUtilizationInfo, int32) int32
	temperature func(*cndevTemperatureInfo, int32) int32
	power       func(*cndevDevicePowerInfo, int32) int32
}

var _ vendors.Telemetry = (*Telemetry)(nil)

var errNoCNDev = errors.New("no loadable libcndev.so (see the agent's log at start): Cambricon chip telemetry needs CNDev")

// Read implements vendors.Telemetry. Chip N is CNDev index N, as in
// discovery.
func (t *Telemetry) Read(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	l := t.b.loadLibrary(ctx)
	if l == nil {
		return nil, errNoCNDev
	}
	t.bindOnce.Do(func() { t.bind(l) })
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		var h int32
		if err := l.err(l.handleByIndex(int32(c.Index), &h)); err != nil {
			s.Fail("cndevGetDeviceHandleByIndex", err)
			return
		}
		t.readChip(l, h, s)
	}), nil
}

// bind looks up the telemetry calls; an older libcndev may lack one,
// whose quantity is then absent.
func (t *Telemetry) bind(l *CNDev) {
	h, err := purego.Dlopen(l.Path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return
	}
	register(h, &t.utilization, "cndevGetDeviceUtilizationInfo")
	register(h, &t.temperature, "cndevGetTemperatureInfo")
	register(h, &t.power, "cndevGetDevicePowerInfo")
}

func (t *Telemetry) readChip(l *CNDev, h int32, s *vendors.ChipSample) {
	if t.utilization != nil {
		u := cndevUtilizationInfo{Version: cndevVersion6}
		if err := l.err(t.utilization(&u, h)); err != nil {
			s.Fail("cndevGetDeviceUtilizationInfo", err)
		} else if u.AverageCoreUtilization < 0 || u.AverageCoreUtilization > 100 {
			s.Fail("cndevGetDeviceUtilizationInfo", fmt.Errorf("utilization %d%% is out of range", u.AverageCoreUtilization))
		} else {
			s.UtilizationRatio = vendors.Value(float64(u.AverageCoreUtilization) / 100)
		}
	}
	var m cndevMemoryInfoV2
	if err := l.err(l.memory(&m, h)); err != nil {
		s.Fail("cndevGetMemoryUsageV2", err)
	} else if m.PhysicalMemoryTotal > 0 && m.PhysicalMemoryUsed >= 0 {
		s.MemoryTotalBytes = vendors.Value(float64(m.PhysicalMemoryTotal * mebibyte))
		s.MemoryUsedBytes = vendors.Value(float64(m.PhysicalMemoryUsed * mebibyte))
	}
	if t.temperature != nil {
		tp := cndevTemperatureInfo{Version: cndevVersion6}
		if err := l.err(t.temperature(&tp, h)); err != nil {
			s.Fail("cndevGetTemperatureInfo", err)
		} else {
			// The board's maximum, what mlu-exporter's temperature_board shows.
			s.TemperatureCelsius = vendors.Value(float64(tp.Board))
		}
	}
	if t.power != nil {
		var p cndevDevicePowerInfo
		if err := l.err(t.power(&p, h)); err != nil {
			s.Fail("cndevGetDevicePowerInfo", err)
		} else if p.Usage >= 0 {
			s.PowerWatts = vendors.Value(float64(p.Usage))
		}
	}
	hs := cndevCardHealthState{Version: cndevVersion6}
	if err := l.err(l.health(&hs, h)); err != nil {
		s.Fail("cndevGetCardHealthState", err)
	} else {
		ok := hs.DeviceState == cndevDeviceGood && hs.DriverState == cndevDriverRunning
		s.Healthy = &ok
	}
}

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
// cndevGetDeviceUtilizationInfo). Without libcndev the same quantities
// come from `cnmon info` (Utilization, Physical Memory Usage, Temperature
// Board, Power Usage).

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/accel-dra/accel-dra/pkg/discovery"
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
	return &Telemetry{b: New(Config{Root: cfg.Root, Runner: cfg.Runner, Library: cfg.Library, Opened: cfg.Opened})}
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

// Read implements vendors.Telemetry. Chip N is CNDev index N, as in
// discovery.
func (t *Telemetry) Read(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	l := t.b.loadLibrary(ctx)
	if l == nil {
		return t.readCnmon(ctx, chips)
	}
	t.bindOnce.Do(func() { t.bind(l) })
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		var h int32
		if err := do(l, "cndevGetDeviceHandleByIndex", func() int32 { return l.handleByIndex(int32(c.Index), &h) }); err != nil {
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
		if err := do(l, "cndevGetDeviceUtilizationInfo", func() int32 { return t.utilization(&u, h) }); err != nil {
			s.Fail("cndevGetDeviceUtilizationInfo", err)
		} else if u.AverageCoreUtilization < 0 || u.AverageCoreUtilization > 100 {
			s.Fail("cndevGetDeviceUtilizationInfo", fmt.Errorf("utilization %d%% is out of range", u.AverageCoreUtilization))
		} else {
			s.UtilizationRatio = vendors.Value(float64(u.AverageCoreUtilization) / 100)
		}
	}
	var m cndevMemoryInfoV2
	if err := do(l, "cndevGetMemoryUsageV2", func() int32 { return l.memory(&m, h) }); err != nil {
		s.Fail("cndevGetMemoryUsageV2", err)
	} else if m.PhysicalMemoryTotal > 0 && m.PhysicalMemoryUsed >= 0 {
		s.MemoryTotalBytes = vendors.Value(float64(m.PhysicalMemoryTotal * mebibyte))
		s.MemoryUsedBytes = vendors.Value(float64(m.PhysicalMemoryUsed * mebibyte))
	}
	if t.temperature != nil {
		tp := cndevTemperatureInfo{Version: cndevVersion6}
		if err := do(l, "cndevGetTemperatureInfo", func() int32 { return t.temperature(&tp, h) }); err != nil {
			s.Fail("cndevGetTemperatureInfo", err)
		} else {
			// The board's maximum, what mlu-exporter's temperature_board shows.
			s.TemperatureCelsius = vendors.Value(float64(tp.Board))
		}
	}
	if t.power != nil {
		var p cndevDevicePowerInfo
		if err := do(l, "cndevGetDevicePowerInfo", func() int32 { return t.power(&p, h) }); err != nil {
			s.Fail("cndevGetDevicePowerInfo", err)
		} else if p.Usage >= 0 {
			s.PowerWatts = vendors.Value(float64(p.Usage))
		}
	}
	// Health is graded as discovery grades it (readHealth): with
	// cndevGetCardHealthStateV2 its overall grade counts, so a card the
	// library grades Warn or Fail is not healthy here either.
	var graded CardInfo
	read := true
	_ = readHealth(l, &graded, h, func(name string, f func() int32) (bool, error) {
		if err := do(l, name, f); err != nil {
			s.Fail(name, err)
			read = false
			return false, nil
		}
		return true, nil
	})
	if read {
		ok := graded.DeviceHealth == HealthGood && graded.DriverState == DriverRunning
		s.Healthy = &ok
	}
	readSMLU(l, h, s)
}

// do makes one telemetry call under the library's deadline, as every
// CNDev call is made (vendors.LibraryCalls): a hung call fails this read
// instead of blocking the collector.
func do(l *CNDev, fn string, f func() int32) error {
	r, err := l.calls.Do(fn, f)
	if err != nil {
		return err
	}
	return l.err(r)
}

// cndevSMLUUsage is CNDEV_SMLU_USAGE, the index of an instance's use in
// cndevSMluInfo_t's mluQuota and memorySize (CNDEV_SMLU_MAX is its share).
const cndevSMLUUsage = 1

// readSMLU adds the chip's sMLU instances with their utilization and
// memory, as mlu-exporter reads them from cndevGetAllSMluInstanceInfo
// (pkg/cndev/cndev.go lines 376-382: mluQuota[CNDEV_SMLU_USAGE],
// memorySize[CNDEV_SMLU_USAGE], memorySize[CNDEV_SMLU_MAX]).
func readSMLU(l *CNDev, h int32, s *vendors.ChipSample) {
	if l.instances == nil {
		return
	}
	infos, r, err := l.smluInfos(h)
	if err != nil {
		s.Fail("cndevGetAllSMluInstanceInfo", err)
		return
	}
	if r == cndevNotSupported {
		return // sMLU mode off, or a chip without sMLU
	}
	if err := l.err(r); err != nil {
		s.Fail("cndevGetAllSMluInstanceInfo", err)
		return
	}
	for _, in := range infos {
		smlu := vendors.InstanceSample{ID: int(in.InstanceID), MemoryUsedBytes: vendors.Value(float64(in.MemorySize[cndevSMLUUsage])),
			MemoryTotalBytes: vendors.Value(float64(in.MemorySize[cndevSMLUMax]))}
		if u := in.MluQuota[cndevSMLUUsage]; u <= 100 {
			smlu.UtilizationRatio = vendors.Value(float64(u) / 100)
		}
		s.Instances = append(s.Instances, smlu)
	}
}

// CardUsage is what `cnmon info` says a card uses now; a nil field is one
// cnmon does not print, or prints as N/A.
type CardUsage struct {
	// UtilizationPercent is "Utilization / MLU Average".
	UtilizationPercent *float64
	// MemoryUsedBytes and MemoryTotalBytes are "Physical Memory Usage".
	MemoryUsedBytes, MemoryTotalBytes *float64
	// TempC is "Temperature / Board", PowerW "Power / Usage".
	TempC, PowerW *float64
	// Healthy is "Health State": device Good and driver Running; nil where
	// cnmon prints no Health State (CNMON v4).
	Healthy *bool
}

// ParseInfoUsage parses `cnmon info` (as ParseInfo, which it runs) and
// returns each card's usage by card number. A value it cannot read is nil
// rather than failing the output; a card whose block cannot be read
// (ParseInfoCards) has no usage, so only its own samples fail.
func ParseInfoUsage(source string, data []byte) (map[int]CardUsage, error) {
	out := map[int]CardUsage{}
	cards, bad, err := parseInfo(source, data, func(card int, path, value string) {
		u := out[card]
		switch path {
		case "Utilization/MLU Average":
			u.UtilizationPercent = withUnit(value, "%")
		case "Temperature/Board":
			u.TempC = withUnit(value, "C")
		case "Power/Usage":
			u.PowerW = withUnit(value, "W")
		case "Physical Memory Usage/Used", "Physical Memory Usage/Total":
			n, err := parseSize(value)
			if err != nil {
				break
			}
			if path == "Physical Memory Usage/Used" {
				u.MemoryUsedBytes = vendors.Value(float64(n))
			} else {
				u.MemoryTotalBytes = vendors.Value(float64(n))
			}
		}
		out[card] = u
	})
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		delete(out, b.Card)
	}
	for _, c := range cards {
		if c.DeviceHealth != "" {
			u := out[c.Card]
			ok := c.DeviceHealth == HealthGood && c.DriverState == DriverRunning
			u.Healthy = &ok
			out[c.Card] = u
		}
	}
	return out, nil
}

// withUnit reads "38 W": a non-negative number followed by unit.
func withUnit(s, unit string) *float64 {
	f := strings.Fields(s)
	if len(f) != 2 || f[1] != unit {
		return nil
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// readCnmon reads the cards with `cnmon info` where CNDev cannot be
// loaded: utilization, memory, board temperature and power as cnmon
// prints them.
func (t *Telemetry) readCnmon(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	usage, err := discovery.Query(ctx, t.b.runner, "reading MLU card usage", ParseInfoUsage, t.b.cnmon, "info")
	if err != nil {
		return nil, fmt.Errorf("without libcndev.so: %w", err)
	}
	const call = "cnmon info"
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		u, ok := usage[c.Index]
		if !ok {
			s.Fail(call, fmt.Errorf("cnmon lists no card %d", c.Index))
			return
		}
		if u.UtilizationPercent != nil && *u.UtilizationPercent <= 100 {
			s.UtilizationRatio = vendors.Value(*u.UtilizationPercent / 100)
		}
		s.MemoryUsedBytes, s.MemoryTotalBytes, s.TemperatureCelsius, s.PowerWatts = u.MemoryUsedBytes, u.MemoryTotalBytes, u.TempC, u.PowerW
		s.Healthy = u.Healthy
		if s.UtilizationRatio == nil || u.MemoryUsedBytes == nil || u.TempC == nil || u.PowerW == nil {
			s.Fail(call, fmt.Errorf("card %d: cnmon prints no utilization, memory in use, board temperature or power", c.Index))
		}
	}), nil
}

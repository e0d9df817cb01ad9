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

package vendors

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Telemetry reads the current state of a vendor's chips (utilization,
// memory, temperature, power, health) through the vendor's management
// library or tool, for the node agent's chip metrics (pkg/chipmetrics).
// One Telemetry serves one node; its Read calls come one at a time from a
// single goroutine, never from a scrape.
type Telemetry interface {
	// Read reads chips, the vendor's chips of the node's inventory, and
	// returns one sample per chip, in the order of chips. A call that
	// fails for one chip leaves only that quantity of that chip unset and
	// is listed in the sample's Errors; Read itself fails only when it can
	// read no chip at all (no library, no tool), with an error saying why.
	Read(ctx context.Context, chips []inventory.Chip) ([]ChipSample, error)
}

// ChipSample is what one Read says about one chip. A nil quantity is
// absent: the chip, driver or library cannot report it, or its call
// failed (then Errors says so). Absent is not zero: the metrics leave the
// series out.
type ChipSample struct {
	// Index and UUID are the inventory chip's (inventory.Chip.Index, UUID).
	Index int
	UUID  string
	// UtilizationRatio is the chip's compute (AI core, MLU core)
	// utilization, 0 to 1.
	UtilizationRatio *float64
	// MemoryUsedBytes and MemoryTotalBytes are its device memory (HBM or
	// DDR).
	MemoryUsedBytes, MemoryTotalBytes *float64
	// TemperatureCelsius is the chip's temperature.
	TemperatureCelsius *float64
	// PowerWatts is the chip's current power draw.
	PowerWatts *float64
	// CardPowerWatts is the power of the whole card the chip is on, where
	// the chip has no figure of its own and the card has one (an Ascend
	// 310P card's MCU): every chip of the card reports the same figure, so
	// it is not to be summed per chip.
	CardPowerWatts *float64
	// Healthy is the library's health verdict of the chip.
	Healthy *bool
	// Instances are the chip's partitions (vNPUs, sMLU instances) the
	// library reports a utilization of.
	Instances []InstanceSample
	// Errors are the calls that failed for this chip.
	Errors []CallError
}

// InstanceSample is one partition of a chip.
type InstanceSample struct {
	// ID is the vNPU id or sMLU instance id (checkpoint.Partition.ID).
	ID int
	// UtilizationRatio is the partition's compute utilization, 0 to 1.
	UtilizationRatio *float64
	// MemoryUsedBytes and MemoryTotalBytes are its memory, where reported.
	MemoryUsedBytes, MemoryTotalBytes *float64
}

// CallError is one library call or tool run that failed for a chip.
type CallError struct {
	// Call names the library function or tool command:
	// "dcmi_get_device_temperature".
	Call string
	Err  error
}

func (e CallError) Error() string { return fmt.Sprintf("%s: %v", e.Call, e.Err) }

// Unwrap returns the call's error.
func (e CallError) Unwrap() error { return e.Err }

// ReadEach returns one sample per chip, with the chip's index and UUID,
// each filled by read while ctx lasts; the chips left when ctx ends get
// its error instead, so a timeout still answers for every chip.
func ReadEach(ctx context.Context, chips []inventory.Chip, read func(inventory.Chip, *ChipSample)) []ChipSample {
	out := make([]ChipSample, len(chips))
	for i, c := range chips {
		s := &out[i]
		s.Index, s.UUID = c.Index, c.UUID
		if err := ctx.Err(); err != nil {
			s.Fail("read", err)
			continue
		}
		read(c, s)
	}
	return out
}

// Value returns a pointer to v, for the quantities of a sample.
func Value(v float64) *float64 { return &v }

// Fail records that call failed for the chip.
func (s *ChipSample) Fail(call string, err error) {
	s.Errors = append(s.Errors, CallError{Call: call, Err: err})
}

// SimulatedTelemetry is the telemetry of a node built from a hardware
// profile, whose chips do not exist: plausible values that change over
// time, a function of the node name, the chip's UUID and the clock only,
// so a test that sets the clock knows them. One chip in four (by its
// UUID's hash, SimulatedIdle) is idle: utilization 0 and little memory,
// as an allocated chip nobody uses; the others follow a slow wave between
// about 20% and 95%.
type SimulatedTelemetry struct {
	// Node seeds the values, so nodes of one profile differ.
	Node string
	// Now is the clock, time.Now when nil.
	Now func() time.Time
}

// simulatedPeriod is the period of a busy simulated chip's load wave:
// long enough to look like training steps on a dashboard at a 10 s
// interval.
const simulatedPeriod = 5 * time.Minute

// Read implements Telemetry.
func (s SimulatedTelemetry) Read(_ context.Context, chips []inventory.Chip) ([]ChipSample, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	out := make([]ChipSample, len(chips))
	for i, c := range chips {
		seed := hash(s.Node + "/" + c.UUID)
		phase := float64(seed%1000) / 1000
		x := math.Mod(float64(t.UnixMilli())/float64(simulatedPeriod.Milliseconds())+phase, 1)
		util, mem := 0.0, 0.02
		if !SimulatedIdle(c.UUID) {
			util = 0.575 + 0.375*math.Sin(2*math.Pi*x)
			mem = 0.3 + 0.5*util
		}
		total := float64(c.MemoryBytes)
		out[i] = ChipSample{
			Index: c.Index, UUID: c.UUID,
			UtilizationRatio:   Value(math.Round(util*1000) / 1000),
			MemoryUsedBytes:    Value(math.Round(total * mem)),
			MemoryTotalBytes:   Value(total),
			TemperatureCelsius: Value(math.Round(35 + 40*util + float64(seed%5))),
			PowerWatts:         Value(math.Round(60 + 250*util)),
			Healthy:            &chips[i].Healthy,
		}
	}
	return out, nil
}

// SimulatedIdle says whether SimulatedTelemetry keeps the chip with this
// UUID idle.
func SimulatedIdle(uuid string) bool { return hash(uuid)%4 == 0 }

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

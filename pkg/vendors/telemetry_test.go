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

package vendors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// TestSimulatedTelemetryIsPlausibleChangingAndRepeatable reads 16
// simulated chips over ten minutes: the same clock gives the same values,
// busy chips' utilization moves within (0, 1], idle ones stay at 0, and
// memory stays within the chip's.
func TestSimulatedTelemetryIsPlausibleChangingAndRepeatable(t *testing.T) {
	var chips []inventory.Chip
	for i := range 16 {
		chips = append(chips, inventory.Chip{Index: i, UUID: fmt.Sprintf("uuid-%d", i), MemoryBytes: 64 << 30, Healthy: i != 3})
	}
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) []vendors.ChipSample {
		s, err := vendors.SimulatedTelemetry{Node: "node-a", Now: func() time.Time { return start.Add(d) }}.Read(t.Context(), chips)
		require.NoError(t, err)
		return s
	}
	require.Equal(t, at(time.Minute), at(time.Minute))
	idle, busy := 0, 0
	for i, c := range chips {
		seen := map[float64]bool{}
		for d := time.Duration(0); d < 10*time.Minute; d += 10 * time.Second {
			s := at(d)[i]
			u := *s.UtilizationRatio
			seen[u] = true
			assert.GreaterOrEqual(t, u, 0.0)
			assert.LessOrEqual(t, u, 1.0)
			assert.LessOrEqual(t, *s.MemoryUsedBytes, *s.MemoryTotalBytes)
			assert.Equal(t, c.Healthy, *s.Healthy)
			assert.Empty(t, s.Errors)
		}
		if vendors.SimulatedIdle(c.UUID) {
			idle++
			assert.Equal(t, map[float64]bool{0: true}, seen, "idle chip %s", c.UUID)
		} else {
			busy++
			assert.Greater(t, len(seen), 10, "busy chip %s changes", c.UUID)
			assert.False(t, seen[0], "busy chip %s is never idle", c.UUID)
		}
	}
	assert.Positive(t, idle)
	assert.Positive(t, busy)
}

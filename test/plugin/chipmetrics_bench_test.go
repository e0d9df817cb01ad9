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
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/chipmetrics"
	"github.com/accel-dra/accel-dra/test/scale"
)

// chipMetricsCost is what the chip metrics cost a node agent.
type chipMetricsCost struct {
	// cpuPerMinute is the agent's CPU time per minute of the window.
	cpuPerMinute time.Duration
	// rss is its resident memory at the end, in MiB.
	rss float64
	// scrapeMean and scrapeMax are the times of /metrics scrapes, and
	// series the samples one scrape returns.
	scrapeMean, scrapeMax time.Duration
	series                int
}

// measureChipMetrics runs the node agent of the 16-chip 910B3 node in a
// child process with 16 prepared claims (one chip each), the chip
// metrics on or off at interval, lets it run for window and reads its
// CPU time and RSS from /proc, then times scrapes of its /metrics.
func measureChipMetrics(tb testing.TB, on bool, interval, window time.Duration, scrapes int) chipMetricsCost {
	tb.Helper()
	bn := benchNodes[0]
	driverName := registry.DriverFor(bn.vendor)
	a := newAgent(tb, bn.profile, "")
	a.cfg.ChipMetrics, a.cfg.ChipMetricsInterval = on, interval
	a.cfg.MetricsAddrFile = filepath.Join(tb.TempDir(), "metrics-addr")
	claims := a.addChipClaims(driverName, bn.prefix, 16)
	a.start("")
	a.waitPublished()
	for _, c := range claims {
		resp, err := a.prepare(driverName, c)
		require.NoError(tb, err)
		require.Empty(tb, resp[string(c.UID)].Error)
	}
	var addr []byte
	require.Eventually(tb, func() bool {
		var err error
		addr, err = os.ReadFile(a.cfg.MetricsAddrFile)
		return err == nil && len(addr) > 0
	}, time.Minute, 10*time.Millisecond, "the child serves /metrics")
	pid := a.cmd.Process.Pid
	before, err := scale.ProcCPU(pid)
	require.NoError(tb, err)
	time.Sleep(window)
	after, err := scale.ProcCPU(pid)
	require.NoError(tb, err)
	cost := chipMetricsCost{cpuPerMinute: time.Duration(float64(after-before) * float64(time.Minute) / float64(window)),
		rss: procStatusMiB(tb, pid, "VmRSS")}
	var took []time.Duration
	for range scrapes {
		start := time.Now()
		resp, err := http.Get("http://" + string(addr) + "/metrics")
		require.NoError(tb, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(tb, err)
		took = append(took, time.Since(start))
		cost.series = len(samples(tb, string(body)))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	cost.scrapeMean, cost.scrapeMax = sum/time.Duration(len(took)), took[len(took)-1]
	a.stop()
	return cost
}

// BenchmarkChipMetricsCost measures the chip metrics' cost on a 16-chip
// node agent at the default 10 s interval: CPU per minute and RSS with
// and without them over a minute, and the time to scrape /metrics.
func BenchmarkChipMetricsCost(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			c := measureChipMetrics(b, on, chipmetrics.DefaultInterval, time.Minute, 50)
			for b.Loop() {
				// The measurement is the child's; nothing to repeat.
			}
			b.ReportMetric(float64(c.cpuPerMinute.Milliseconds()), "cpu-ms/min")
			b.ReportMetric(c.rss, "RSS-MiB")
			b.ReportMetric(float64(c.scrapeMean.Microseconds())/1000, "scrape-ms")
			b.ReportMetric(float64(c.scrapeMax.Microseconds())/1000, "scrape-max-ms")
			b.ReportMetric(float64(c.series), "samples")
		})
	}
}

// TestChipMetricsCostSetup runs the benchmark's setup briefly: the child
// with the chip metrics on serves, beyond the other's, a series per
// quantity of each of its 16 held chips.
func TestChipMetricsCostSetup(t *testing.T) {
	off := measureChipMetrics(t, false, 50*time.Millisecond, 200*time.Millisecond, 2)
	on := measureChipMetrics(t, true, 50*time.Millisecond, 200*time.Millisecond, 2)
	// utilization, memory used and total, temperature, power, healthy and
	// allocated idle seconds: 7 series per chip.
	require.Equal(t, off.series+16*7, on.series, "off: %d samples, on: %d", off.series, on.series)
	require.Positive(t, on.rss)
	require.Positive(t, on.scrapeMean)
}

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

package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/metrics"
)

// source is a driver's state as a scrape reads it.
type source struct {
	name     string
	mu       sync.Mutex
	prepared int
	health   map[string]int
}

// The HELP and TYPE lines of metrics several expected scrapes show.
const (
	devicesHeader = `# HELP accel_dra_devices Devices the driver publishes (chips and their partition devices), by the health it reports to the kubelet.
# TYPE accel_dra_devices gauge
`
	preparedClaimsHeader = `# HELP accel_dra_prepared_claims ResourceClaims prepared on this node now (in the driver's checkpoint).
# TYPE accel_dra_prepared_claims gauge
`
	prepareErrorsTotalHeader = `# HELP accel_dra_prepare_errors_total ResourceClaims that failed to prepare; the kubelet retries them and the pod does not start meanwhile.
# TYPE accel_dra_prepare_errors_total counter
`
	unprepareErrorsTotalHeader = `# HELP accel_dra_unprepare_errors_total ResourceClaims that failed to unprepare; the kubelet retries them and their devices stay taken meanwhile.
# TYPE accel_dra_unprepare_errors_total counter
`
)

func (s *source) Name() string { return s.name }

func (s *source) PreparedClaimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prepared
}

func (s *source) DevicesByHealth() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.health {
		out[k] = v
	}
	return out
}

func (s *source) set(prepared int, health map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepared, s.health = prepared, health
}

type observation struct {
	op     metrics.Operation
	driver string
	took   time.Duration
	err    error
}

var errPrepare = errors.New("bad opaque config")

func TestObserveCountsEveryClaimAndTheFailedOnes(t *testing.T) {
	tests := []struct {
		name string
		obs  []observation
		want string
	}{
		{
			name: "nothing observed yet: the tracked driver's series are zero",
			want: `
` + prepareErrorsTotalHeader + `accel_dra_prepare_errors_total{driver="ascend.accel-dra.dev"} 0
` + unprepareErrorsTotalHeader + `accel_dra_unprepare_errors_total{driver="ascend.accel-dra.dev"} 0
`,
		},
		{
			name: "errors count per failed claim and per driver",
			obs: []observation{
				{metrics.Prepare, "ascend.accel-dra.dev", time.Millisecond, nil},
				{metrics.Prepare, "ascend.accel-dra.dev", time.Millisecond, errPrepare},
				{metrics.Prepare, "ascend.accel-dra.dev", time.Millisecond, errPrepare},
				{metrics.Prepare, "cambricon.accel-dra.dev", time.Millisecond, errPrepare},
				{metrics.Unprepare, "cambricon.accel-dra.dev", time.Millisecond, errPrepare},
				{metrics.Unprepare, "ascend.accel-dra.dev", time.Millisecond, nil},
			},
			want: `
` + prepareErrorsTotalHeader + `accel_dra_prepare_errors_total{driver="ascend.accel-dra.dev"} 2
accel_dra_prepare_errors_total{driver="cambricon.accel-dra.dev"} 1
` + unprepareErrorsTotalHeader + `accel_dra_unprepare_errors_total{driver="ascend.accel-dra.dev"} 0
accel_dra_unprepare_errors_total{driver="cambricon.accel-dra.dev"} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			m.Track(&source{name: "ascend.accel-dra.dev"})
			for _, o := range tc.obs {
				m.Observe(o.op, o.driver, o.took, o.err)
			}
			require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(tc.want),
				"accel_dra_prepare_errors_total", "accel_dra_unprepare_errors_total"))
		})
	}
}

func TestTheDurationHistogramsHaveEveryClaimInItsBucket(t *testing.T) {
	m := metrics.New()
	// Failed claims are observed too: a slow failure delays the pod as
	// much as a slow success. The durations are binary fractions of a
	// second, so the sum is exact.
	for _, o := range []observation{
		{metrics.Prepare, "cambricon.accel-dra.dev", 1953125 * time.Nanosecond, nil},
		{metrics.Prepare, "cambricon.accel-dra.dev", 3906250 * time.Nanosecond, errPrepare},
		{metrics.Prepare, "cambricon.accel-dra.dev", 1250 * time.Millisecond, nil},
		{metrics.Unprepare, "cambricon.accel-dra.dev", 40 * time.Millisecond, nil},
	} {
		m.Observe(o.op, o.driver, o.took, o.err)
	}
	want := `
# HELP accel_dra_prepare_duration_seconds Time to prepare one ResourceClaim for the kubelet (NodePrepareResources: CDI spec, partitions, checkpoint), whether it succeeded or failed.
# TYPE accel_dra_prepare_duration_seconds histogram
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.001"} 0
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.0025"} 1
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.005"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.01"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.025"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.05"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.1"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.25"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="0.5"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="1"} 2
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="2.5"} 3
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="5"} 3
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="10"} 3
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="30"} 3
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="60"} 3
accel_dra_prepare_duration_seconds_bucket{driver="cambricon.accel-dra.dev",le="+Inf"} 3
accel_dra_prepare_duration_seconds_sum{driver="cambricon.accel-dra.dev"} 1.255859375
accel_dra_prepare_duration_seconds_count{driver="cambricon.accel-dra.dev"} 3
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "accel_dra_prepare_duration_seconds"))
	count, err := testutil.GatherAndCount(m.Registry(), "accel_dra_unprepare_duration_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, count, "one unprepare series, for the one driver observed")
}

func TestPublishErrorsCountByDriverAndReason(t *testing.T) {
	m := metrics.New()
	m.Track(&source{name: "ascend.accel-dra.dev"})
	m.PublishError("ascend.accel-dra.dev", metrics.PublishReasonAPI)
	m.PublishError("ascend.accel-dra.dev", metrics.PublishReasonAPI)
	m.PublishError("ascend.accel-dra.dev", metrics.PublishReasonDroppedFields)
	want := `
# HELP accel_dra_resourceslice_publish_errors_total Errors publishing the node's ResourceSlices, by reason: api (an API call failed; retried), invalid (the slices did not validate), dropped_fields (the API server dropped fields, e.g. a disabled feature gate).
# TYPE accel_dra_resourceslice_publish_errors_total counter
accel_dra_resourceslice_publish_errors_total{driver="ascend.accel-dra.dev",reason="api"} 2
accel_dra_resourceslice_publish_errors_total{driver="ascend.accel-dra.dev",reason="dropped_fields"} 1
accel_dra_resourceslice_publish_errors_total{driver="ascend.accel-dra.dev",reason="invalid"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "accel_dra_resourceslice_publish_errors_total"))
}

func TestTheDriversStateIsReadAtEachScrape(t *testing.T) {
	m := metrics.New()
	ascend := &source{name: "ascend.accel-dra.dev"}
	m.Track(ascend)
	const names = "accel_dra_prepared_claims accel_dra_devices"
	gather := func(want string) {
		t.Helper()
		require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), strings.Fields(names)...))
	}

	ascend.set(0, map[string]int{metrics.HealthHealthy: 8})
	gather(`
` + devicesHeader + `accel_dra_devices{driver="ascend.accel-dra.dev",health="healthy"} 8
accel_dra_devices{driver="ascend.accel-dra.dev",health="unhealthy"} 0
accel_dra_devices{driver="ascend.accel-dra.dev",health="unknown"} 0
` + preparedClaimsHeader + `accel_dra_prepared_claims{driver="ascend.accel-dra.dev"} 0
`)

	// A second driver, and the first one changed since the last scrape;
	// a health the metrics do not know counts as unknown.
	ascend.set(3, map[string]int{metrics.HealthHealthy: 7, metrics.HealthUnhealthy: 1})
	m.Track(&source{name: "cambricon.accel-dra.dev", prepared: 1, health: map[string]int{metrics.HealthHealthy: 2, "Degraded": 2, metrics.HealthUnknown: 1}})
	gather(`
` + devicesHeader + `accel_dra_devices{driver="ascend.accel-dra.dev",health="healthy"} 7
accel_dra_devices{driver="ascend.accel-dra.dev",health="unhealthy"} 1
accel_dra_devices{driver="ascend.accel-dra.dev",health="unknown"} 0
accel_dra_devices{driver="cambricon.accel-dra.dev",health="healthy"} 2
accel_dra_devices{driver="cambricon.accel-dra.dev",health="unhealthy"} 0
accel_dra_devices{driver="cambricon.accel-dra.dev",health="unknown"} 3
` + preparedClaimsHeader + `accel_dra_prepared_claims{driver="ascend.accel-dra.dev"} 3
accel_dra_prepared_claims{driver="cambricon.accel-dra.dev"} 1
`)

	// A driver restarted in the same process replaces the old one instead
	// of making the scrape fail on duplicate series.
	m.Track(&source{name: "ascend.accel-dra.dev", prepared: 2, health: map[string]int{metrics.HealthHealthy: 8}})
	m.Track(&source{name: "cambricon.accel-dra.dev"})
	gather(`
` + devicesHeader + `accel_dra_devices{driver="ascend.accel-dra.dev",health="healthy"} 8
accel_dra_devices{driver="ascend.accel-dra.dev",health="unhealthy"} 0
accel_dra_devices{driver="ascend.accel-dra.dev",health="unknown"} 0
accel_dra_devices{driver="cambricon.accel-dra.dev",health="healthy"} 0
accel_dra_devices{driver="cambricon.accel-dra.dev",health="unhealthy"} 0
accel_dra_devices{driver="cambricon.accel-dra.dev",health="unknown"} 0
` + preparedClaimsHeader + `accel_dra_prepared_claims{driver="ascend.accel-dra.dev"} 2
accel_dra_prepared_claims{driver="cambricon.accel-dra.dev"} 0
`)
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	require.NotPanics(t, func() {
		m.Track(&source{name: "ascend.accel-dra.dev"})
		m.Observe(metrics.Prepare, "ascend.accel-dra.dev", time.Second, errPrepare)
		m.PublishError("ascend.accel-dra.dev", metrics.PublishReasonAPI)
	})
}

func TestTheMetricsFollowPrometheusConventions(t *testing.T) {
	m := metrics.New()
	m.Track(&source{name: "ascend.accel-dra.dev"})
	m.Observe(metrics.Prepare, "ascend.accel-dra.dev", time.Millisecond, nil)
	problems, err := testutil.GatherAndLint(m.Registry())
	require.NoError(t, err)
	var ours []string
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, metrics.Namespace+"_") {
			ours = append(ours, p.Metric+": "+p.Text)
		}
	}
	require.Empty(t, ours)
}

func TestTheHandlerServesOursTheRuntimesAndTheProcesssMetrics(t *testing.T) {
	m := metrics.New()
	m.Track(&source{name: "cambricon.accel-dra.dev", prepared: 1, health: map[string]int{metrics.HealthHealthy: 4}})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range []string{
		`accel_dra_prepared_claims{driver="cambricon.accel-dra.dev"} 1`,
		`accel_dra_devices{driver="cambricon.accel-dra.dev",health="healthy"} 4`,
		`# TYPE go_goroutines gauge`,
		`# TYPE process_resident_memory_bytes gauge`,
		`# TYPE promhttp_metric_handler_requests_total counter`,
	} {
		require.Contains(t, string(body), line+"\n")
	}
}

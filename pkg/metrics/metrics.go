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

// Package metrics is the node agent's Prometheus metrics (accel_dra_*):
// how long preparing and unpreparing claims takes and how often it fails,
// how many claims are prepared, the devices by health, and the failures to
// publish ResourceSlices, each by DRA driver. One Metrics per agent
// process holds its own registry, with the Go runtime and process
// collectors, so nothing depends on prometheus.DefaultRegisterer.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the driver.
const Namespace = "accel_dra"

// Values of the health label of accel_dra_devices.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthUnknown   = "unknown"
)

// healths are the health label values every driver reports, zero or not,
// so that a device turning unhealthy changes a series instead of making one.
var healths = []string{HealthHealthy, HealthUnhealthy, HealthUnknown}

// Values of the reason label of accel_dra_resourceslice_publish_errors_total.
const (
	// PublishReasonAPI: creating, updating or deleting a ResourceSlice
	// failed (API server unreachable, forbidden, …); the controller retries.
	PublishReasonAPI = "api"
	// PublishReasonInvalid: the driver's slices did not validate; nothing
	// is published for the pool until they change.
	PublishReasonInvalid = "invalid"
	// PublishReasonDroppedFields: the API server stored a slice without
	// some fields, typically because a feature (partitionable devices,
	// consumable capacity) is disabled in the cluster.
	PublishReasonDroppedFields = "dropped_fields"
)

var publishReasons = []string{PublishReasonAPI, PublishReasonInvalid, PublishReasonDroppedFields}

// Operation is what the kubelet asked a driver to do with a claim.
type Operation string

const (
	Prepare   Operation = "prepare"
	Unprepare Operation = "unprepare"
)

// durationBuckets go from writing a CDI spec and the checkpoint (about a
// millisecond) over the vendor tool's partition commands (seconds) to a
// minute, beyond which a call is hanging.
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Source is a driver as the metrics read it at each scrape. Its methods
// must not wait for a running prepare: a scrape has to answer while one
// is stuck.
type Source interface {
	// Name is the DRA driver name, the driver label.
	Name() string
	// PreparedClaimCount is the number of claims prepared now.
	PreparedClaimCount() int
	// DevicesByHealth counts the published devices by health (keys
	// HealthHealthy, HealthUnhealthy, HealthUnknown; other keys count
	// as unknown).
	DevicesByHealth() map[string]int
}

// Metrics are the metrics of one node agent process. A nil *Metrics
// records nothing, so code can be instrumented without requiring them.
type Metrics struct {
	registry      *prometheus.Registry
	durations     map[Operation]*prometheus.HistogramVec
	errors        map[Operation]*prometheus.CounterVec
	publishErrors *prometheus.CounterVec
	state         *stateCollector
}

// New makes the metrics and their registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		durations: map[Operation]*prometheus.HistogramVec{
			Prepare: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: Namespace, Name: "prepare_duration_seconds",
				Help:    "Time to prepare one ResourceClaim for the kubelet (NodePrepareResources: CDI spec, partitions, checkpoint), whether it succeeded or failed.",
				Buckets: durationBuckets,
			}, []string{"driver"}),
			Unprepare: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Namespace: Namespace, Name: "unprepare_duration_seconds",
				Help:    "Time to unprepare one ResourceClaim for the kubelet (NodeUnprepareResources: CDI spec, partitions, checkpoint), whether it succeeded or failed.",
				Buckets: durationBuckets,
			}, []string{"driver"}),
		},
		errors: map[Operation]*prometheus.CounterVec{
			Prepare: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: Namespace, Name: "prepare_errors_total",
				Help: "ResourceClaims that failed to prepare; the kubelet retries them and the pod does not start meanwhile.",
			}, []string{"driver"}),
			Unprepare: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: Namespace, Name: "unprepare_errors_total",
				Help: "ResourceClaims that failed to unprepare; the kubelet retries them and their devices stay taken meanwhile.",
			}, []string{"driver"}),
		},
		publishErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "resourceslice_publish_errors_total",
			Help: "Errors publishing the node's ResourceSlices, by reason: api (an API call failed; retried), invalid (the slices did not validate), dropped_fields (the API server dropped fields, e.g. a disabled feature gate).",
		}, []string{"driver", "reason"}),
		state: &stateCollector{
			sources: map[string]Source{},
			prepared: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "prepared_claims"),
				"ResourceClaims prepared on this node now (in the driver's checkpoint).", []string{"driver"}, nil),
			devices: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "devices"),
				"Devices the driver publishes (chips and their partition devices), by the health it reports to the kubelet.", []string{"driver", "health"}, nil),
		},
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.durations[Prepare], m.durations[Unprepare],
		m.errors[Prepare], m.errors[Unprepare],
		m.publishErrors, m.state,
	)
	return m
}

// Registry is the registry of these metrics, e.g. for testutil.GatherAndCompare.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.InstrumentMetricHandler(m.registry, promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry}))
}

// Track reports s at every scrape, replacing a source of the same name
// (a driver restarted in the same process). It also makes s's counters
// and histograms exist at zero, so rate() sees their first increase.
func (m *Metrics) Track(s Source) {
	if m == nil {
		return
	}
	name := s.Name()
	for _, op := range []Operation{Prepare, Unprepare} {
		m.durations[op].WithLabelValues(name)
		m.errors[op].WithLabelValues(name)
	}
	for _, r := range publishReasons {
		m.publishErrors.WithLabelValues(name, r)
	}
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	m.state.sources[name] = s
}

// Observe records one claim the kubelet asked driver to prepare or
// unprepare: how long it took and, if err is set, that it failed.
func (m *Metrics) Observe(op Operation, driver string, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.durations[op].WithLabelValues(driver).Observe(took.Seconds())
	if err != nil {
		m.errors[op].WithLabelValues(driver).Inc()
	}
}

// PublishError counts a failure of driver to publish its ResourceSlices.
func (m *Metrics) PublishError(driver, reason string) {
	if m == nil {
		return
	}
	m.publishErrors.WithLabelValues(driver, reason).Inc()
}

// stateCollector reads the prepared claims and the devices' health from
// the drivers when scraped, so they are never stale.
type stateCollector struct {
	prepared, devices *prometheus.Desc

	mu      sync.Mutex
	sources map[string]Source
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.prepared
	ch <- c.devices
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	// The drivers are asked without holding c.mu: they may be busy
	// preparing, and Track must not wait for that.
	c.mu.Lock()
	sources := make([]Source, 0, len(c.sources))
	for _, s := range c.sources {
		sources = append(sources, s)
	}
	c.mu.Unlock()
	for _, s := range sources {
		ch <- prometheus.MustNewConstMetric(c.prepared, prometheus.GaugeValue, float64(s.PreparedClaimCount()), s.Name())
		counts := map[string]int{}
		for h, n := range s.DevicesByHealth() {
			if h != HealthHealthy && h != HealthUnhealthy {
				h = HealthUnknown
			}
			counts[h] += n
		}
		for _, h := range healths {
			ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(counts[h]), s.Name(), h)
		}
	}
}

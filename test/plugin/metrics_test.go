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
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// samples parses the Prometheus text exposition: each sample's value by
// its series, `name{label="value",…}`.
func samples(t testing.TB, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "sample line %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, "sample line %q", line)
		out[line[:i]] = v
	}
	return out
}

// scrape reads the node's metrics as Prometheus does, through the handler
// the node agent serves on /metrics.
func (n *node) scrape() map[string]float64 {
	n.t.Helper()
	rec := httptest.NewRecorder()
	n.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(n.t, http.StatusOK, rec.Code, rec.Body.String())
	return samples(n.t, rec.Body.String())
}

// requireSamples checks the samples want against a scrape; every one must
// be there.
func requireSamples(t testing.TB, got, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		g, ok := got[series]
		require.True(t, ok, "series %s is not exposed", series)
		require.Equal(t, v, g, "series %s", series)
	}
}

// logOf is what the plugin logged so far through the node's test logger.
func (n *node) logOf() string {
	n.t.Helper()
	u, ok := klog.FromContext(n.ctx).GetSink().(ktesting.Underlier)
	require.True(n.t, ok, "the node logs to ktesting")
	return u.GetBuffer().String()
}

func TestMetricsAndLogsFollowEachClaimPreparedAndUnprepared(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "testdata/mlu270-one-unhealthy.yaml", Vendor: cambricon.Vendor})
	of := func(name string) string { return name + `{driver="cambricon.accel-dra.dev"}` }
	health := func(h string) string {
		return `accel_dra_devices{driver="cambricon.accel-dra.dev",health="` + h + `"}`
	}
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                0,
		health("healthy"):                              3,
		health("unhealthy"):                            1,
		health("unknown"):                              0,
		of("accel_dra_prepare_duration_seconds_count"): 0,
		of("accel_dra_prepare_errors_total"):           0,
		of("accel_dra_unprepare_errors_total"):         0,
	})

	a := n.claim("a", []string{"mlu-0"})
	b := n.claim("b", []string{"mlu-1", "mlu-3"})
	bad := n.claim("bad", []string{"mlu-2"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","envs":{"A":"1"}}`))
	resp := n.prepare(a, b, bad)
	require.Empty(t, resp[string(a.UID)].Error)
	require.Empty(t, resp[string(b.UID)].Error)
	require.NotEmpty(t, resp[string(bad.UID)].Error)
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                  2,
		of("accel_dra_prepare_duration_seconds_count"):   3,
		of("accel_dra_prepare_errors_total"):             1,
		of("accel_dra_unprepare_duration_seconds_count"): 0,
	})

	n.unprepare(a)
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                  1,
		of("accel_dra_prepare_duration_seconds_count"):   3,
		of("accel_dra_unprepare_duration_seconds_count"): 1,
		of("accel_dra_unprepare_errors_total"):           0,
	})

	// One line per claim, with what an operator searches for: the claim,
	// its devices and how long it took, or the error.
	log := n.logOf()
	const call = `requestID=\d+ method="/k8s\.io\.kubelet\.pkg\.apis\.dra\.v1\.DRAPlugin/Node(Unp|P)repareResources" `
	const duration = ` duration="[0-9.]+[nµm]?s"\n`
	for _, line := range []string{
		`INFO dra: Prepared claim ` + call + `claim="default/a" claimUID="` + string(a.UID) + `" devices=\["mlu-0"\]` + duration,
		`INFO dra: Prepared claim ` + call + `claim="default/b" claimUID="` + string(b.UID) + `" devices=\["mlu-1","mlu-3"\]` + duration,
		`ERROR dra: Preparing claim failed err="claim default/bad \(` + string(bad.UID) + `\): status\.allocation\.devices\.config\[0\]\.opaque\.parameters \(from the claim\): .*unknown field .*" ` +
			call + `claim="default/bad" claimUID="` + string(bad.UID) + `"` + duration,
		`INFO dra: Unprepared claim ` + call + `claim="default/a" claimUID="` + string(a.UID) + `" devices=\["mlu-0"\]` + duration,
	} {
		require.Regexp(t, line, log)
	}
	for msg, want := range map[string]int{"Prepared claim": 2, "Preparing claim failed": 1, "Unprepared claim": 1} {
		require.Len(t, regexp.MustCompile(`(?m)^[A-Z]+ dra: `+msg+` `).FindAllString(log, -1), want, "lines %q", msg)
	}

	// A restarted driver takes over its series: the prepared claim is
	// read back from the checkpoint and the counters go on.
	n.restart()
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                1,
		of("accel_dra_prepare_duration_seconds_count"): 3,
		of("accel_dra_prepare_errors_total"):           1,
	})
	n.unprepare(b)
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                  0,
		of("accel_dra_unprepare_duration_seconds_count"): 2,
	})
}

// stuckTool holds the first partition create in the vendor tool until
// released, as a hanging npu-smi or cnmon would; the rest it passes on.
type stuckTool struct {
	next     discovery.CommandRunner
	once     sync.Once
	entered  chan struct{}
	released chan struct{}
}

func (s *stuckTool) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	// cnmon smlu -c N -C PROFILE_ID creates an sMLU instance.
	if strings.Contains(discovery.CommandLine(name, args...), " -C ") {
		s.once.Do(func() {
			close(s.entered)
			<-s.released
		})
	}
	return s.next.Run(ctx, name, args...)
}

// A scrape must answer while a prepare is stuck (that is when an operator
// looks), so it does not wait for the driver's lock: the prepared claims
// are those of the last finished call.
func TestAScrapeDoesNotWaitForAStuckPrepare(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu370-x8", Vendor: cambricon.Vendor, ChipModes: string(partitions.ModePartitioned)})
	whole := n.claim("whole", []string{"mlu-0"})
	n.mustPrepare(whole)
	tool := &stuckTool{next: n.fake, entered: make(chan struct{}), released: make(chan struct{})}
	n.runner = tool
	n.restart()

	part := n.claim("part", []string{"mlu-5-smlu-50p-1"})
	done := make(chan *drapb.NodePrepareResourcesResponse)
	go func() {
		resp, err := n.kubelet.NodePrepareResources(n.ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(part)})
		if err != nil {
			t.Errorf("NodePrepareResources: %v", err)
		}
		done <- resp
	}()
	<-tool.entered
	of := func(name string) string { return name + `{driver="cambricon.accel-dra.dev"}` }
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                1,
		of("accel_dra_prepare_duration_seconds_count"): 1,
	})

	close(tool.released)
	resp := <-done
	require.NotNil(t, resp)
	require.Empty(t, resp.Claims[string(part.UID)].GetError())
	requireSamples(t, n.scrape(), map[string]float64{
		of("accel_dra_prepared_claims"):                2,
		of("accel_dra_prepare_duration_seconds_count"): 2,
	})
}

// restartWithoutSlices restarts the plugin after its ResourceSlices were
// deleted (a node re-created, an administrator cleaning up), so the new
// one creates them at once.
func (n *node) restartWithoutSlices() {
	n.t.Helper()
	n.stop()
	ctx := n.t.Context()
	list, err := n.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.NoError(n.t, err)
	require.NotEmpty(n.t, list.Items)
	for _, s := range list.Items {
		require.NoError(n.t, n.client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{}))
	}
	n.start()
}

func TestResourceSliceCreatesTheAPIServerRejectsAreCountedAsPublishErrors(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu270", Vendor: cambricon.Vendor})
	require.Eventually(t, func() bool { return len(n.publishedDevices()) == 4 }, 30*time.Second, 20*time.Millisecond, "the slices are published")

	// The next two creates fail, as with an overloaded API server.
	var failing atomic.Int32
	failing.Store(2)
	n.client.PrependReactor("create", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Add(-1) >= 0 {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	n.restartWithoutSlices()
	require.Eventually(t, func() bool { return len(n.publishedDevices()) == 4 }, 30*time.Second, 20*time.Millisecond, "the slices are published again")

	const reason = `accel_dra_resourceslice_publish_errors_total{driver="cambricon.accel-dra.dev",reason="`
	requireSamples(t, n.scrape(), map[string]float64{
		reason + `api"}`:            2,
		reason + `invalid"}`:        0,
		reason + `dropped_fields"}`: 0,
	})
}

func TestSlicesStoredWithoutTheirCountersAreCountedAsDroppedFields(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu590", Vendor: cambricon.Vendor, ChipModes: string(partitions.ModePartitioned)})
	require.Eventually(t, func() bool { return len(n.publishedDevices()) > 8 }, 30*time.Second, 20*time.Millisecond, "the chips and their partitions are published")

	// An API server without partitionable devices drops the counters.
	var dropped atomic.Int32
	n.client.PrependReactor("create", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		s := action.(k8stesting.CreateAction).GetObject().(*resourceapi.ResourceSlice)
		changed := len(s.Spec.SharedCounters) > 0
		s.Spec.SharedCounters = nil
		for i := range s.Spec.Devices {
			changed = changed || len(s.Spec.Devices[i].ConsumesCounters) > 0
			s.Spec.Devices[i].ConsumesCounters = nil
		}
		if changed {
			dropped.Add(1)
		}
		return false, nil, nil
	})
	before := len(n.publishedDevices())
	n.restartWithoutSlices()
	require.Eventually(t, func() bool { return len(n.publishedDevices()) == before }, 30*time.Second, 20*time.Millisecond, "the slices are published again")

	require.Positive(t, dropped.Load())
	const reason = `accel_dra_resourceslice_publish_errors_total{driver="cambricon.accel-dra.dev",reason="`
	// The controller reports a slice's dropped fields after its create
	// returned, so the last report may come after the slices are there.
	require.Eventually(t, func() bool {
		return n.scrape()[reason+`dropped_fields"}`] >= float64(dropped.Load())
	}, 30*time.Second, 20*time.Millisecond, "every slice stored without its counters is reported")
	requireSamples(t, n.scrape(), map[string]float64{
		reason + `api"}`:            0,
		reason + `dropped_fields"}`: float64(dropped.Load()),
	})
}

// TestTheNodeAgentServesItsMetricsBesideItsProbes scrapes a running node
// agent of a mixed node: one registry for both drivers, on the probe
// server's /metrics.
func TestTheNodeAgentServesItsMetricsBesideItsProbes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, _ := simulatedAgent(t, "mixed-910b-mlu370")
	o.Publish.ChipModes = "Partitioned"
	addr, done := runWithProbes(ctx, t, o)

	scrape := func() map[string]float64 {
		resp, err := http.Get("http://" + addr.String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return samples(t, string(body))
	}
	// Both drivers are tracked once they have started.
	require.Eventually(t, func() bool {
		got := scrape()
		_, ascend := got[`accel_dra_prepared_claims{driver="ascend.accel-dra.dev"}`]
		_, cambricon := got[`accel_dra_prepared_claims{driver="cambricon.accel-dra.dev"}`]
		return ascend && cambricon
	}, 30*time.Second, 20*time.Millisecond, "both drivers report their state")
	// Every device the drivers publish is counted, by its driver: 4 chips
	// and their 24 partition devices (vNPU templates, sMLU profiles) each.
	got := scrape()
	for _, driverName := range []string{ascend.Driver, cambricon.Driver} {
		requireSamples(t, got, map[string]float64{
			`accel_dra_devices{driver="` + driverName + `",health="healthy"}`:   4 + 24,
			`accel_dra_devices{driver="` + driverName + `",health="unhealthy"}`: 0,
			`accel_dra_prepared_claims{driver="` + driverName + `"}`:            0,
			`accel_dra_prepare_errors_total{driver="` + driverName + `"}`:       0,
		})
	}
	require.Contains(t, got, "go_goroutines", "the Go runtime's metrics are served too")

	cancel()
	require.NoError(t, <-done)
}

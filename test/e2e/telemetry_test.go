//go:build e2e

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

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// telemetryIdleSeconds is the idle alert's threshold in the test: short,
// so an idle held chip trips it within the test.
const telemetryIdleSeconds = 20

// shippedQueries renders the chart's PrometheusRule and Grafana dashboard
// and returns the rule file and every dashboard query.
func shippedQueries(t *testing.T) (rules []byte, dashboard []string) {
	t.Helper()
	objs, err := cluster.RenderChart(t.Context(), append(framework.BaseChartValues, "metrics.prometheusRule.enabled=true",
		fmt.Sprintf("metrics.prometheusRule.idleSeconds=%d", telemetryIdleSeconds), "metrics.prometheusRule.for=2s",
		"metrics.grafanaDashboard.enabled=true")...)
	require.NoError(t, err)
	pr := objs.Kinds("PrometheusRule")
	require.Len(t, pr, 1)
	spec, ok, err := unstructured.NestedMap(pr[0].Object, "spec")
	require.NoError(t, err)
	require.True(t, ok)
	rules, err = yaml.Marshal(spec)
	require.NoError(t, err)
	var dash struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	for _, cm := range objs.Kinds("ConfigMap") {
		if js, ok, _ := unstructured.NestedString(cm.Object, "data", "accel-dra-chips.json"); ok {
			require.NoError(t, json.Unmarshal([]byte(js), &dash))
		}
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			dashboard = append(dashboard, tg.Expr)
		}
	}
	require.NotEmpty(t, dashboard, "the chart renders the dashboard")
	return rules, dashboard
}

// ruleExprs are the alerting rules' expressions, by alert name.
func ruleExprs(t *testing.T, rules []byte) map[string]string {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(rules, &f))
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// threshold is an alert expression's final comparison with a constant.
var threshold = regexp.MustCompile(`\s*(==|>=|>)\s*[0-9]+$`)

// realNodeChip returns a whole chip of the real node (device name and
// driver) whose simulated telemetry is idle or busy, as asked.
func realNodeChip(t *testing.T, idle bool) (driver, device, uuid string) {
	t.Helper()
	sl, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range sl.Items {
		if s.Spec.Pool.Name != cluster.RealNode() {
			continue
		}
		for _, d := range s.Spec.Devices {
			u := d.Attributes[names.AttrUUID].StringValue
			typ := d.Attributes[names.AttrType].StringValue
			if u != nil && typ != nil && *typ == "chip" && vendors.SimulatedIdle(*u) == idle {
				return s.Spec.Driver, d.Name, *u
			}
		}
	}
	t.Fatalf("the real node %s has no chip whose simulated telemetry is idle=%v", cluster.RealNode(), idle)
	return "", "", ""
}

func holdChip(t *testing.T, ns, pod, driver, uuid string) {
	t.Helper()
	tmpl := template(ns, pod, exactly("chip", driver, 1, fmt.Sprintf(`device.attributes["accel-dra.dev"].uuid == %q`, uuid)))
	createTemplate(t, tmpl)
	createPod(t, realNodePod(ns, pod, tmpl.Name))
	waitForPodRunning(t, ns, pod)
}

func eventuallySeries(t *testing.T, p *framework.Prometheus, expr string, want func(model.Vector) bool, msg string) model.Vector {
	t.Helper()
	var last model.Vector
	var lastErr error
	ok := assert.Eventually(t, func() bool {
		last, lastErr = p.Query(t.Context(), expr)
		return lastErr == nil && want(last)
	}, 2*time.Minute, framework.PrometheusInterval, "%s: %s; last answer %v, error %v", msg, expr, last, lastErr)
	if !ok {
		t.FailNow()
	}
	return last
}

// TestPrometheusScrapesChipTelemetryWithTheHoldersOfEachChip runs a real
// Prometheus with the chart's rules against the agents: every dashboard
// and rule query answers, a pod's chip carries its namespace, pod and
// container until the pod is deleted, and a held chip with no utilization
// trips the idle alert while a busy one does not.
func TestPrometheusScrapesChipTelemetryWithTheHoldersOfEachChip(t *testing.T) {
	rules, dashboard := shippedQueries(t)
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "Debian's prometheus package brings promtool")
	path := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(path, rules, 0o644))
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)

	prom, err := cluster.StartPrometheus(t.Context(), "telemetry", rules)
	require.NoError(t, err)

	ns := newNamespace(t)
	busyDriver, busyDevice, busyUUID := realNodeChip(t, false)
	idleDriver, idleDevice, idleUUID := realNodeChip(t, true)
	holdChip(t, ns, "trainer", busyDriver, busyUUID)
	holdChip(t, ns, "idler", idleDriver, idleUUID)

	nonEmpty := func(v model.Vector) bool { return len(v) > 0 }
	t.Run("every dashboard and rule query answers", func(t *testing.T) {
		for _, expr := range dashboard {
			eventuallySeries(t, prom, expr, nonEmpty, "dashboard query")
		}
		for alert, expr := range ruleExprs(t, rules) {
			eventuallySeries(t, prom, threshold.ReplaceAllString(expr, ""), nonEmpty, "alert "+alert+" without its threshold")
		}
	})

	t.Run("a pod's chip carries its namespace, pod and container", func(t *testing.T) {
		v := eventuallySeries(t, prom, fmt.Sprintf(`accel_dra_chip_utilization_ratio{namespace=%q, pod="trainer"}`, ns),
			func(v model.Vector) bool { return len(v) == 1 }, "the trainer's chip")
		m := v[0].Metric
		assert.Equal(t, model.LabelValue("probe"), m["container"])
		assert.Equal(t, model.LabelValue(busyDevice), m["device"])
		assert.Equal(t, model.LabelValue(busyUUID), m["uuid"])
		assert.Equal(t, model.LabelValue(busyDriver), m["driver"])
		assert.Equal(t, model.LabelValue(cluster.RealNode()), m["node"])
		assert.Equal(t, model.LabelValue("workload"), m["access"])
		assert.Positive(t, float64(v[0].Value), "a busy simulated chip")
	})

	t.Run("an idle held chip trips the idle alert, a busy one does not", func(t *testing.T) {
		v := eventuallySeries(t, prom, fmt.Sprintf(`ALERTS{alertname="AccelDRAChipAllocatedIdle", alertstate="firing", namespace=%q}`, ns),
			nonEmpty, "the idle alert fires")
		require.Len(t, v, 1, "only the idle chip's holder")
		assert.Equal(t, model.LabelValue("idler"), v[0].Metric["pod"])
		assert.Equal(t, model.LabelValue(idleDevice), v[0].Metric["device"])
		busy, err := prom.Query(t.Context(), fmt.Sprintf(`max_over_time(accel_dra_chip_allocated_idle_seconds{namespace=%q, pod="trainer"}[1m])`, ns))
		require.NoError(t, err)
		require.Len(t, busy, 1)
		assert.Less(t, float64(busy[0].Value), float64(telemetryIdleSeconds), "the busy chip's idle time stays short")
	})

	t.Run("the labels go with the pod", func(t *testing.T) {
		deletePod(t, ns, "trainer")
		deletePod(t, ns, "idler")
		eventuallySeries(t, prom, fmt.Sprintf(`accel_dra_chip_utilization_ratio{namespace=%q}`, ns),
			func(v model.Vector) bool { return len(v) == 0 }, "no chip carries the deleted pods' namespace")
		v := eventuallySeries(t, prom, fmt.Sprintf(`accel_dra_chip_utilization_ratio{node=%q, device=%q}`, cluster.RealNode(), busyDevice),
			nonEmpty, "the chip is still reported")
		assert.Equal(t, model.LabelValue(""), v[0].Metric["pod"])
	})
}

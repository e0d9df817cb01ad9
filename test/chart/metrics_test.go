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

package chart_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// rawDocuments renders values and returns the documents by kind and name,
// as plain maps: the Prometheus Operator's kinds have no Go types here.
func rawDocuments(t *testing.T, values string) map[string]map[string]any {
	t.Helper()
	out, err := helmTemplate(t, values)
	require.NoError(t, err)
	docs := map[string]map[string]any{}
	for _, chunk := range strings.Split(out, "\n---\n") {
		_, raw := splitSource(chunk)
		if strings.TrimSpace(stripComments(raw)) == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(raw), &m), raw)
		meta, _ := m["metadata"].(map[string]any)
		docs[m["kind"].(string)+"/"+meta["name"].(string)] = m
	}
	return docs
}

func field(t *testing.T, obj any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := obj.(map[string]any)
			require.True(t, ok, "%v is not an object at %q", obj, k)
			obj = m[k]
		case int:
			l, ok := obj.([]any)
			require.True(t, ok && k < len(l), "%v has no item %d", obj, k)
			obj = l[k]
		}
	}
	return obj
}

func decodeAs[T any](t *testing.T, doc map[string]any) T {
	t.Helper()
	js, err := json.Marshal(doc)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(js, &out))
	return out
}

const allMetrics = `
metrics:
  port: 51516
  podMonitor: {enabled: true, labels: {release: prom}}
  serviceMonitor: {enabled: true}
  grafanaDashboard: {enabled: true}
  prometheusRule: {enabled: true, idleSeconds: 600, for: 2m}
  networkPolicy:
    enabled: true
    from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
`

// TestTheMetricsOptionsRenderMonitorsDashboardRulesAndAPolicy turns every
// metrics option on: /metrics moves to its own port, which the PodMonitor,
// the Service of the ServiceMonitor and the NetworkPolicy name, while the
// probes stay on the healthz port.
func TestTheMetricsOptionsRenderMonitorsDashboardRulesAndAPolicy(t *testing.T) {
	docs := rawDocuments(t, allMetrics)
	// One DaemonSet per node group; the monitors, the metrics Service and
	// the NetworkPolicy reach every group's pods.
	var groups []appsv1.DaemonSet
	for _, name := range []string{"DaemonSet/accel-dra-kubeletplugin-ascend", "DaemonSet/accel-dra-kubeletplugin-cambricon"} {
		require.Contains(t, docs, name)
		groups = append(groups, decodeAs[appsv1.DaemonSet](t, docs[name]))
	}
	for _, ds := range groups {
		c := ds.Spec.Template.Spec.Containers[0]
		assert.Contains(t, c.Args, "--metrics-addr=:51516")
		assert.Equal(t, []corev1.ContainerPort{{Name: "healthz", ContainerPort: 51515, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 51516, Protocol: "TCP"}}, c.Ports)
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			require.NotNil(t, p)
			assert.Equal(t, "healthz", p.HTTPGet.Port.String())
		}
	}

	pm := docs["PodMonitor/accel-dra-kubeletplugin"]
	require.NotNil(t, pm)
	assert.Equal(t, "prom", field(t, pm, "metadata", "labels", "release"))
	assert.Equal(t, "metrics", field(t, pm, "spec", "podMetricsEndpoints", 0, "port"))
	svc := decodeAs[corev1.Service](t, docs["Service/accel-dra-kubeletplugin-metrics"])
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	np := docs["NetworkPolicy/accel-dra-kubeletplugin"]
	require.NotNil(t, np)
	for _, ds := range groups {
		for k, v := range field(t, pm, "spec", "selector", "matchLabels").(map[string]any) {
			assert.Equal(t, v, ds.Spec.Template.Labels[k], "the PodMonitor selects %s's pods by %s", ds.Name, k)
		}
		for k, v := range svc.Spec.Selector {
			assert.Equal(t, v, ds.Spec.Template.Labels[k], "the Service selects %s's pods by %s", ds.Name, k)
		}
		for k, v := range field(t, np, "spec", "podSelector", "matchLabels").(map[string]any) {
			assert.Equal(t, v, ds.Spec.Template.Labels[k], "the NetworkPolicy guards %s's pods by %s", ds.Name, k)
		}
	}
	assert.Equal(t, "metrics", svc.Spec.Ports[0].TargetPort.String())
	sm := docs["ServiceMonitor/accel-dra-kubeletplugin"]
	for k, v := range field(t, sm, "spec", "selector", "matchLabels").(map[string]any) {
		assert.Equal(t, v, svc.Labels[k], "the ServiceMonitor selects the metrics Service by %s", k)
	}
	assert.Equal(t, "metrics", field(t, sm, "spec", "endpoints", 0, "port"))

	ingress := field(t, np, "spec", "ingress").([]any)
	require.Len(t, ingress, 2)
	assert.Nil(t, field(t, ingress[0], "from"), "the probe port is open to the kubelet")
	assert.EqualValues(t, 51515, field(t, ingress[0], "ports", 0, "port"))
	assert.Equal(t, "monitoring", field(t, ingress[1], "from", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"))
	assert.EqualValues(t, 51516, field(t, ingress[1], "ports", 0, "port"))

	cm := docs["ConfigMap/accel-dra-dashboard"]
	assert.Equal(t, "1", field(t, cm, "metadata", "labels", "grafana_dashboard"))
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(field(t, cm, "data", "accel-dra-chips.json").(string)), &dash))
	var titles []string
	for _, p := range dash.Panels {
		titles = append(titles, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
	}
	assert.Subset(t, titles, []string{"Pool utilization by model", "Chip utilization per node", "Usage per namespace", "Idle allocated chips", "Unhealthy chips per node"})

	rules := field(t, docs["PrometheusRule/accel-dra"], "spec")
	y, err := yaml.Marshal(rules)
	require.NoError(t, err)
	assert.Contains(t, string(y), `accel_dra_chip_allocated_idle_seconds{access="workload"} >= 600`)
	assert.Contains(t, string(y), "for: 2m")
}

// TestTheShippedRulesAndDashboardQueriesPassPromtool checks the rendered
// PrometheusRule's rules, and every dashboard query as a recording rule,
// with Prometheus' own promtool (Debian's prometheus package, which the
// e2e harness installs too).
func TestTheShippedRulesAndDashboardQueriesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool checks the shipped rules: apt-get install prometheus")
	docs := rawDocuments(t, allMetrics)
	dir := t.TempDir()
	rules, err := yaml.Marshal(field(t, docs["PrometheusRule/accel-dra"], "spec"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	require.NoError(t, json.Unmarshal([]byte(field(t, docs["ConfigMap/accel-dra-dashboard"], "data", "accel-dra-chips.json").(string)), &dash))
	var recording []map[string]string
	for i, p := range dash.Panels {
		for j, tg := range p.Targets {
			recording = append(recording, map[string]string{"record": "dashboard:panel" + string(rune('a'+i)) + ":" + string(rune('a'+j)), "expr": tg.Expr})
		}
	}
	queries, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": recording}}})
	require.NoError(t, err)
	for name, data := range map[string][]byte{"rules.yaml": rules, "dashboard.yaml": queries} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
		require.NoError(t, err, "promtool check rules %s:\n%s\n%s", name, out, data)
	}
	// promtool does fail on a broken expression.
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("groups:\n- name: x\n  rules:\n  - record: x\n    expr: sum by (\n"), 0o644))
	require.Error(t, exec.Command(promtool, "check", "rules", bad).Run())
}

func TestTheChipMetricsCanBeTurnedOff(t *testing.T) {
	docs := rawDocuments(t, "metrics:\n  chips: {enabled: false}\n")
	ds := decodeAs[appsv1.DaemonSet](t, docs["DaemonSet/accel-dra-kubeletplugin-ascend"])
	c := ds.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--chip-metrics=false")
	for _, a := range c.Args {
		assert.NotContains(t, a, "--pod-resources-socket")
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		assert.NotEqual(t, "pod-resources", v.Name, "no PodResources socket without the chip metrics")
	}
}

func TestMetricsOptionsThatCannotWorkStopTheRendering(t *testing.T) {
	for values, want := range map[string]string{
		"metrics: {port: 51516, bindAddress: 127.0.0.1, podMonitor: {enabled: true}}": "metrics.bindAddress is loopback",
		"metrics: {networkPolicy: {enabled: true}}":                                   "metrics.networkPolicy needs metrics.port",
		"kubeletPlugin: {healthzPort: 0}\nmetrics: {serviceMonitor: {enabled: true}}": "need a metrics port",
	} {
		_, err := helmTemplate(t, values)
		require.ErrorContains(t, err, want, values)
	}
}

// metrics.bindAddress renders as --metrics-addr the agent's net.Listen
// takes: an IPv6 address in brackets, IPv4 and empty as they are.
func TestTheMetricsBindAddressRendersAsAListenAddress(t *testing.T) {
	for _, tc := range []struct{ bind, want string }{
		{bind: `""`, want: "--metrics-addr=:51516"},
		{bind: "127.0.0.1", want: "--metrics-addr=127.0.0.1:51516"},
		{bind: `"::1"`, want: "--metrics-addr=[::1]:51516"},
		{bind: `"[fd00::1]"`, want: "--metrics-addr=[fd00::1]:51516"},
	} {
		t.Run(tc.bind, func(t *testing.T) {
			docs := rawDocuments(t, "metrics: {port: 51516, bindAddress: "+tc.bind+"}\n")
			ds := decodeAs[appsv1.DaemonSet](t, docs["DaemonSet/accel-dra-kubeletplugin-ascend"])
			require.Contains(t, ds.Spec.Template.Spec.Containers[0].Args, tc.want)
		})
	}
}

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
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestSecureMetricsRenderAuthRBACAndHTTPSMonitors: metrics.secure turns
// on --metrics-secure, binds the agent to system:auth-delegator for its
// reviews, and the monitors scrape over HTTPS with the token of a
// ServiceAccount bound to the metrics-reader role.
func TestSecureMetricsRenderAuthRBACAndHTTPSMonitors(t *testing.T) {
	docs := rawDocuments(t, `
metrics:
  port: 51516
  secure: true
  podMonitor: {enabled: true}
  serviceMonitor: {enabled: true}
`)
	for _, name := range []string{"DaemonSet/accel-dra-kubeletplugin-ascend", "DaemonSet/accel-dra-kubeletplugin-cambricon"} {
		require.Contains(t, docs, name)
		c := decodeAs[appsv1.DaemonSet](t, docs[name]).Spec.Template.Spec.Containers[0]
		assert.Contains(t, c.Args, "--metrics-secure=true")
		assert.Contains(t, c.Args, "--metrics-addr=:51516")
	}

	delegator := decodeAs[rbacv1.ClusterRoleBinding](t, docs["ClusterRoleBinding/accel-dra-kubeletplugin-auth-delegator"])
	assert.Equal(t, "system:auth-delegator", delegator.RoleRef.Name)
	require.Len(t, delegator.Subjects, 1)
	sa := decodeAs[corev1.ServiceAccount](t, docs["ServiceAccount/"+delegator.Subjects[0].Name])
	assert.Equal(t, "ServiceAccount", sa.Kind, "the agent's own ServiceAccount may review tokens")

	reader := decodeAs[rbacv1.ClusterRole](t, docs["ClusterRole/accel-dra-metrics-reader"])
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
	scraper := decodeAs[rbacv1.ClusterRoleBinding](t, docs["ClusterRoleBinding/accel-dra-metrics-scraper"])
	assert.Equal(t, "accel-dra-metrics-reader", scraper.RoleRef.Name)
	assert.Equal(t, "accel-dra-metrics-scraper", scraper.Subjects[0].Name)
	token := decodeAs[corev1.Secret](t, docs["Secret/accel-dra-metrics-scraper-token"])
	assert.Equal(t, corev1.SecretTypeServiceAccountToken, token.Type)
	assert.Equal(t, "accel-dra-metrics-scraper", token.Annotations[corev1.ServiceAccountNameKey])

	for _, endpoint := range []any{
		field(t, docs["PodMonitor/accel-dra-kubeletplugin"], "spec", "podMetricsEndpoints", 0),
		field(t, docs["ServiceMonitor/accel-dra-kubeletplugin"], "spec", "endpoints", 0),
	} {
		assert.Equal(t, "https", field(t, endpoint, "scheme"))
		assert.Equal(t, true, field(t, endpoint, "tlsConfig", "insecureSkipVerify"))
		assert.Equal(t, "Bearer", field(t, endpoint, "authorization", "type"))
		assert.Equal(t, "accel-dra-metrics-scraper-token", field(t, endpoint, "authorization", "credentials", "name"))
		assert.Equal(t, "token", field(t, endpoint, "authorization", "credentials", "key"))
	}
}

// TestInsecureMetricsRenderNoAuth: by default nothing of the above.
func TestInsecureMetricsRenderNoAuth(t *testing.T) {
	docs := rawDocuments(t, allMetrics)
	for name := range docs {
		assert.NotContains(t, name, "auth-delegator")
		assert.NotContains(t, name, "metrics-reader")
		assert.NotContains(t, name, "metrics-scraper")
	}
	c := decodeAs[appsv1.DaemonSet](t, docs["DaemonSet/accel-dra-kubeletplugin-ascend"]).Spec.Template.Spec.Containers[0]
	assert.NotContains(t, c.Args, "--metrics-secure=true")
	_, hasScheme := field(t, docs["PodMonitor/accel-dra-kubeletplugin"], "spec", "podMetricsEndpoints", 0).(map[string]any)["scheme"]
	assert.False(t, hasScheme)
}

// TestSecureMetricsNeedTheirOwnPort: on the probe port they would put
// the kubelet's probes behind authentication.
func TestSecureMetricsNeedTheirOwnPort(t *testing.T) {
	_, err := helmTemplate(t, "metrics: {secure: true}\n")
	require.ErrorContains(t, err, "metrics.secure needs metrics.port")
}

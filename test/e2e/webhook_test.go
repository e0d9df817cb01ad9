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
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// serveChartWebhook runs the real webhook server in the test and
// registers the chart's ValidatingWebhookConfiguration (failurePolicy
// Fail) pointed at it by URL, until the test ends.
func serveChartWebhook(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	certFile, keyFile, caPEM, err := cluster.ServingCert("e2e-webhook", net.ParseIP("127.0.0.1"))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// The decoder the webhook's main builds from its registry.
	configs, err := all.Registry().ConfigDecoder()
	require.NoError(t, err)
	srv, err := webhook.NewServer(ctx, webhook.Options{Configs: configs, CertFile: certFile, KeyFile: keyFile})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ctx, ln) }()

	chart, err := cluster.RenderChart(ctx, "webhook.enabled=true", "webhook.failurePolicy=Fail")
	require.NoError(t, err)
	vwcs := chart.Kinds("ValidatingWebhookConfiguration")
	require.Len(t, vwcs, 1)
	var vwc admissionv1.ValidatingWebhookConfiguration
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(vwcs[0].Object, &vwc))
	url := fmt.Sprintf("https://%s%s", ln.Addr(), webhook.ValidatePath)
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig = admissionv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caPEM}
	}
	vwc.Name = "e2e-" + vwc.Name
	_, err = cluster.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &vwc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		// t.Context() is cancelled before cleanups run (and with it the
		// server): delete under a context of its own, then wait until the
		// API server stops calling the gone server, which would fail every
		// claim the tests after this one create.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, cluster.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{}))
		probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "webhook-gone"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "npu",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ascend.accel-dra.dev"}}}}}}
		require.Eventually(t, func() bool {
			_, err := cluster.Admin.ResourceV1().ResourceClaims("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil
		}, time.Minute, 500*time.Millisecond, "the API server stops calling the webhook after its configuration is deleted")
	})
}

// TestTheAPIServerRejectsBadConfigsThroughTheChartsWebhook runs the real
// webhook server and registers the chart's own ValidatingWebhookConfiguration
// (its rules and matchConditions) with the real kube-apiserver, pointed at
// the webhook by URL instead of the in-cluster Service: a claim with a bad
// config for our driver is refused at create with the plugin's message, a
// good one and one for another driver are admitted.
func TestTheAPIServerRejectsBadConfigsThroughTheChartsWebhook(t *testing.T) {
	ctx := t.Context()
	serveChartWebhook(t)

	claim := func(name, driver, params string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "npu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ascend.accel-dra.dev"}}},
				Config: []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
					Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)}},
				}}},
			}},
		}
	}
	claims := cluster.Admin.ResourceV1().ResourceClaims("default")
	bad := claim("webhook-typo", "ascend.accel-dra.dev", `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`)
	// The API server picks up a new webhook configuration within seconds.
	var createErr error
	require.Eventually(t, func() bool {
		_, createErr = claims.Create(ctx, bad, metav1.CreateOptions{})
		if createErr == nil {
			_ = claims.Delete(ctx, bad.Name, metav1.DeleteOptions{})
		}
		return createErr != nil
	}, time.Minute, time.Second, "the webhook starts judging claims")
	require.ErrorContains(t, createErr, `admission webhook "resourceclaims.accel-dra.dev" denied the request`)
	require.ErrorContains(t, createErr, `spec.devices.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs"`)

	wrongKind := claim("webhook-kind", "ascend.accel-dra.dev", `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`)
	_, err := claims.Create(ctx, wrongKind, metav1.CreateOptions{})
	require.ErrorContains(t, err, "kind CambriconConfig is not for this driver: want AscendConfig")

	for _, ok := range []*resourceapi.ResourceClaim{
		claim("webhook-good", "ascend.accel-dra.dev", `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"600"}}`),
		claim("webhook-other-driver", "gpu.example.com", `{"anything":"goes"}`),
	} {
		_, err := claims.Create(ctx, ok, metav1.CreateOptions{})
		require.NoError(t, err, "claim %s is admitted", ok.Name)
		require.NoError(t, claims.Delete(ctx, ok.Name, metav1.DeleteOptions{}))
	}
}

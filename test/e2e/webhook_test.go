//go:build e2e

package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// TestTheAPIServerRejectsBadConfigsThroughTheChartsWebhook runs the real
// webhook server and registers the chart's own ValidatingWebhookConfiguration
// (its rules and matchConditions) with the real kube-apiserver, pointed at
// the webhook by URL instead of the in-cluster Service: a claim with a bad
// config for our driver is refused at create with the plugin's message, a
// good one and one for another driver are admitted.
func TestTheAPIServerRejectsBadConfigsThroughTheChartsWebhook(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	caPEM, certFile, keyFile := webhookCert(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := webhook.NewServer(ctx, webhook.Options{CertFile: certFile, KeyFile: keyFile})
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
		_ = cluster.Admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), vwc.Name, metav1.DeleteOptions{})
	})

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
	_, err = claims.Create(ctx, wrongKind, metav1.CreateOptions{})
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

// webhookCert writes a CA and a serving certificate for 127.0.0.1 and
// returns the CA in PEM for the webhook configuration's caBundle.
func webhookCert(t *testing.T, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-webhook-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "accel-dra-webhook"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	require.True(t, strings.HasPrefix(string(caPEM), "-----BEGIN CERTIFICATE-----"))
	return caPEM, certFile, keyFile
}

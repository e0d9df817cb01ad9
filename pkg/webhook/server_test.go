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

package webhook_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/webhook"
)

func TestAMalformedAdmissionReviewGetsAClear400(t *testing.T) {
	ts := startServer(t)
	tests := []struct {
		name, contentType, body string
		code                    int
		want                    string
	}{
		{"a body that is not JSON", "application/json", `{"apiVersion":`, http.StatusBadRequest,
			"malformed AdmissionReview: "},
		{"JSON without apiVersion and kind", "application/json", `{"request":{"uid":"1"}}`, http.StatusBadRequest,
			"malformed AdmissionReview: Object 'Kind' is missing in '{\"request\":{\"uid\":\"1\"}}' (want apiVersion admission.k8s.io/v1, kind AdmissionReview)"},
		{"an admission.k8s.io/v1beta1 review", "application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`, http.StatusBadRequest,
			`malformed AdmissionReview: no kind "AdmissionReview" is registered for version "admission.k8s.io/v1beta1"`},
		{"another kind", "application/json", `{"apiVersion":"v1","kind":"ConfigMap"}`, http.StatusBadRequest,
			"malformed AdmissionReview: got apiVersion v1, kind ConfigMap, want apiVersion admission.k8s.io/v1, kind AdmissionReview"},
		{"a review without a request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest,
			"malformed AdmissionReview: request is missing"},
		{"a request without a uid", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`, http.StatusBadRequest,
			"malformed AdmissionReview: request.uid is missing"},
		{"a body that is not JSON by its Content-Type", "application/yaml", "apiVersion: admission.k8s.io/v1", http.StatusUnsupportedMediaType,
			`Content-Type "application/yaml": an AdmissionReview must be sent as application/json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.post(t, tt.contentType, []byte(tt.body))
			require.Equal(t, tt.code, code)
			require.Contains(t, string(body), tt.want)
		})
	}

	t.Run("a GET is not an admission review", func(t *testing.T) {
		resp, err := ts.Client.Get(ts.URL + webhook.ValidatePath)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	})
	t.Run("a Content-Type with a charset is JSON all the same", func(t *testing.T) {
		code, body := ts.post(t, "application/json; charset=utf-8", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`))
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, string(body), "request is missing")
	})
}

func TestTheProbesAnswerOverHTTPSOnly(t *testing.T) {
	ts := startServer(t)
	for _, path := range []string{webhook.LivezPath, webhook.ReadyzPath} {
		resp, err := ts.Client.Get(ts.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "ok\n", string(body))
	}
	plain := strings.Replace(ts.URL, "https://", "http://", 1)
	resp, err := http.Get(plain + webhook.LivezPath)
	if err == nil {
		defer resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP must not be served")
	}
}

// servedSerial is the serial of the certificate the server presents to a
// new connection.
func servedSerial(t *testing.T, ts *testServer) string {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(ts.URL, "https://"), &tls.Config{RootCAs: ts.CA.pool, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestANewCertificateInTheSecretIsServedWithoutARestart(t *testing.T) {
	ts := startServer(t)
	require.Equal(t, "1", servedSerial(t, ts))

	// cert-manager renews: the kubelet swaps the Secret volume's files.
	cert2, key2 := ts.CA.serving(t, 2)
	ts.Secret.update(cert2, key2)
	require.Eventually(t, func() bool { return servedSerial(t, ts) == "2" }, 10*time.Second, 20*time.Millisecond)

	// A pair that does not load (this key belongs to another certificate)
	// keeps the current certificate in use.
	cert3, _ := ts.CA.serving(t, 3)
	_, otherKey := ts.CA.serving(t, 4)
	ts.Secret.update(cert3, otherKey)
	time.Sleep(200 * time.Millisecond) // several reload intervals
	require.Equal(t, "2", servedSerial(t, ts))
	resp := ts.review(t, admissionRequest(t, "CREATE", claim("resource.k8s.io/v1", cfg(ascend, "", "AscendConfig", "")), ""))
	require.True(t, resp.Allowed)

	// Once the pair is consistent again it is picked up.
	cert5, key5 := ts.CA.serving(t, 5)
	ts.Secret.update(cert5, key5)
	require.Eventually(t, func() bool { return servedSerial(t, ts) == "5" }, 10*time.Second, 20*time.Millisecond)

	// Files rewritten in place (not a Secret volume) are picked up too.
	cert6, key6 := ts.CA.serving(t, 6)
	data := filepath.Join(filepath.Dir(ts.Secret.Cert), "..data")
	require.NoError(t, os.WriteFile(filepath.Join(data, "tls.key"), key6, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "tls.crt"), cert6, 0o644))
	require.Eventually(t, func() bool { return servedSerial(t, ts) == "6" }, 10*time.Second, 20*time.Millisecond)
}

func TestTheServerStopsCleanlyWhenItsContextEnds(t *testing.T) {
	ts := startServer(t)
	addr := strings.TrimPrefix(ts.URL, "https://")
	ts.stop()
	select {
	case err := <-ts.done:
		require.NoError(t, err)
		ts.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the context ended")
	}
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the port must be closed after shutdown")
}

func TestTheServerRefusesToStartWithoutAUsableCertificate(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ca := newTestCA(t)
	cert, key := ca.serving(t, 1)
	_, otherKey := ca.serving(t, 2)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	certFile, keyFile, otherKeyFile := write("tls.crt", cert), write("tls.key", key), write("other.key", otherKey)
	tests := []struct {
		name string
		o    webhook.Options
		want string
	}{
		{"no config decoder", webhook.Options{CertFile: certFile, KeyFile: keyFile}, "a config decoder is required: it knows which drivers' configs are ours"},
		{"no certificate", webhook.Options{Configs: configs}, "a serving certificate and key are required: the webhook serves HTTPS only"},
		{"a missing file", webhook.Options{Configs: configs, CertFile: filepath.Join(dir, "nope.crt"), KeyFile: keyFile}, "reading serving certificate: open " + filepath.Join(dir, "nope.crt")},
		{"a key of another certificate", webhook.Options{Configs: configs, CertFile: certFile, KeyFile: otherKeyFile},
			"loading serving certificate " + certFile + " with key " + otherKeyFile + ": tls: private key does not match public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webhook.NewServer(ctx, tt.o)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := webhook.NewServer(context.Background(), webhook.Options{Configs: configs, CertFile: certFile, KeyFile: keyFile})
	require.NoError(t, err)
}

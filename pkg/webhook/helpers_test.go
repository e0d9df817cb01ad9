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
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// testCA is a certificate authority made for one test, as cert-manager or
// the chart would make one for the webhook's Service.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "accel-dra-webhook-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// serving issues a serving certificate for 127.0.0.1, localhost and the
// Service name, with the given serial so a test can tell certificates
// apart; it returns PEM certificate and key.
func (ca *testCA) serving(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "accel-dra-webhook.accel-dra.svc"},
		DNSNames:     []string{"accel-dra-webhook.accel-dra.svc", "localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// secretDir lays files out the way the kubelet mounts a Secret volume:
// tls.crt and tls.key are symlinks into ..data, itself a symlink to a
// timestamped directory, and an update swaps ..data atomically.
type secretDir struct {
	t    *testing.T
	dir  string
	gen  int
	Cert string
	Key  string
}

func newSecretDir(t *testing.T, certPEM, keyPEM []byte) *secretDir {
	d := &secretDir{t: t, dir: t.TempDir()}
	d.Cert = filepath.Join(d.dir, "tls.crt")
	d.Key = filepath.Join(d.dir, "tls.key")
	d.update(certPEM, keyPEM)
	for _, name := range []string{"tls.crt", "tls.key"} {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(d.dir, name)))
	}
	return d
}

func (d *secretDir) update(certPEM, keyPEM []byte) {
	d.t.Helper()
	d.gen++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", d.gen, d.gen)
	require.NoError(d.t, os.Mkdir(filepath.Join(d.dir, ts), 0o755))
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, ts, "tls.crt"), certPEM, 0o644))
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, ts, "tls.key"), keyPEM, 0o600))
	tmp := filepath.Join(d.dir, "..data_tmp")
	require.NoError(d.t, os.Symlink(ts, tmp))
	require.NoError(d.t, os.Rename(tmp, filepath.Join(d.dir, "..data")))
}

// testServer is the webhook serving HTTPS on a loopback port.
type testServer struct {
	URL    string
	Client *http.Client
	CA     *testCA
	Secret *secretDir
	stop   context.CancelFunc
	done   chan error
}

// startServer runs the real server with a fresh CA and serving cert
// (serial 1), and a client that trusts only that CA.
func startServer(t *testing.T) *testServer {
	t.Helper()
	ca := newTestCA(t)
	certPEM, keyPEM := ca.serving(t, 1)
	secret := newSecretDir(t, certPEM, keyPEM)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	srv, err := webhook.NewServer(ctx, webhook.Options{
		Configs:  configs,
		CertFile: secret.Cert, KeyFile: secret.Key,
		CertReloadInterval: 20 * time.Millisecond,
		ShutdownTimeout:    5 * time.Second,
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := &testServer{
		URL: "https://" + ln.Addr().String(),
		// A new connection per request, so a reloaded certificate is seen
		// by the next request.
		Client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		}},
		CA: ca, Secret: secret, stop: cancel, done: make(chan error, 1),
	}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.done: //nolint:errcheck // stopped by cancel: Serve's error is the cancellation
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	require.Eventually(t, func() bool {
		resp, err := ts.Client.Get(ts.URL + webhook.ReadyzPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)
	return ts
}

// post sends body to the webhook path and returns status and body.
func (ts *testServer) post(t *testing.T, contentType string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := ts.Client.Post(ts.URL+webhook.ValidatePath, contentType, bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// review posts an AdmissionReview and returns its response.
func (ts *testServer) review(t *testing.T, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	require.NoError(t, err)
	code, data := ts.post(t, "application/json", body)
	require.Equal(t, http.StatusOK, code, string(data))
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &out))
	require.Equal(t, "admission.k8s.io/v1", out.APIVersion)
	require.Equal(t, "AdmissionReview", out.Kind)
	require.NotNil(t, out.Response)
	require.Equal(t, req.UID, out.Response.UID)
	return out.Response
}

// admissionRequest is what the API server sends for a create (or, with
// old, an update) of the object in objYAML, written as a user would.
func admissionRequest(t *testing.T, op admissionv1.Operation, objYAML, oldYAML string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(objYAML))
	require.NoError(t, err)
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(raw, &meta))
	group, version := "", meta.APIVersion
	if i := bytes.IndexByte([]byte(meta.APIVersion), '/'); i >= 0 {
		group, version = meta.APIVersion[:i], meta.APIVersion[i+1:]
	}
	resources := map[string]string{"ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates", "DeviceClass": "deviceclasses", "Pod": "pods"}
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("uid-%s-%s", meta.Kind, meta.Metadata.Name)),
		Kind:      metav1.GroupVersionKind{Group: group, Version: version, Kind: meta.Kind},
		Resource:  metav1.GroupVersionResource{Group: group, Version: version, Resource: resources[meta.Kind]},
		Name:      meta.Metadata.Name,
		Namespace: meta.Metadata.Namespace,
		Operation: op,
		Object:    runtime.RawExtension{Raw: raw},
	}
	if oldYAML != "" {
		old, err := yaml.YAMLToJSON([]byte(oldYAML))
		require.NoError(t, err)
		req.OldObject = runtime.RawExtension{Raw: old}
	}
	return req
}

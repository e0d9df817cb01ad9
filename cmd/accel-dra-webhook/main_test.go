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

package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// With ACCEL_DRA_WEBHOOK_TEST_MAIN=1 the test binary is the command
// itself, so the tests can run the real main, signals and all.
func TestMain(m *testing.M) {
	if os.Getenv("ACCEL_DRA_WEBHOOK_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestHelpExplainsEndpointsCertificatesAndEveryFlag(t *testing.T) {
	cmd := newCommand(all.Registry())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	require.NoError(t, cmd.Execute())
	help := out.String()
	for _, want := range []string{
		"/validate-resource-claim-parameters", "/livez", "/readyz", "HTTPS only",
		"ascend.accel-dra.dev (AscendConfig), cambricon.accel-dra.dev (CambriconConfig)",
		"cert-manager", "SIGTERM",
		"--port", "--tls-cert-file", "--tls-private-key-file", "--tls-reload-interval", "--shutdown-delay", "--shutdown-timeout", "--v", "--logging-format",
		"[ACCEL_DRA_WEBHOOK_PORT]", "[ACCEL_DRA_WEBHOOK_TLS_CERT_FILE]", "[ACCEL_DRA_WEBHOOK_TLS_PRIVATE_KEY_FILE]", "[ACCEL_DRA_WEBHOOK_LOGGING_FORMAT]",
	} {
		require.Contains(t, help, want)
	}
}

func TestBadFlagValuesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "a port from the environment", env: map[string]string{"ACCEL_DRA_WEBHOOK_PORT": "https"},
			want: `environment variable ACCEL_DRA_WEBHOOK_PORT (--port): invalid argument "https" for "--port" flag: strconv.ParseInt: parsing "https": invalid syntax`},
		{name: "a duration", args: []string{"--shutdown-delay=later"},
			want: `invalid argument "later" for "--shutdown-delay" flag: time: invalid duration "later"`},
		{name: "a logging format", args: []string{"--logging-format=xml"},
			want: `logging flags: format: Invalid value: "xml": Unsupported log format`},
		{name: "a logging format from the environment", env: map[string]string{"ACCEL_DRA_WEBHOOK_LOGGING_FORMAT": "yaml"},
			want: `logging flags: format: Invalid value: "yaml": Unsupported log format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cmd := newCommand(all.Registry())
			cmd.SetArgs(tc.args)
			require.EqualError(t, cmd.Execute(), tc.want)
		})
	}
}

// selfSigned writes a self-signed serving certificate for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "accel-dra-webhook"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The real binary, in both log formats: --logging-format=json (here from
// its environment variable, as the chart sets it) makes every line on
// stderr one JSON object.
func TestSIGTERMStopsTheWebhookCleanly(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		json bool
	}{
		{name: "text logs"},
		{name: "JSON logs", env: []string{"ACCEL_DRA_WEBHOOK_LOGGING_FORMAT=json"}, json: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := runUntilSIGTERM(t, tc.env)
			if !tc.json {
				require.Contains(t, stderr, "Shutting down admission webhook")
				require.Contains(t, stderr, "Admission webhook stopped")
				return
			}
			var msgs []string
			for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				var entry struct {
					Msg string `json:"msg"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &entry), "not a JSON line: %s", line)
				msgs = append(msgs, entry.Msg)
			}
			require.Contains(t, msgs, "Shutting down admission webhook")
			require.Contains(t, msgs, "Admission webhook stopped")
		})
	}
}

// runUntilSIGTERM runs the webhook with env added to the test's, checks
// that SIGTERM makes it fail /readyz while still serving for
// --shutdown-delay and then exit cleanly, and returns its stderr.
func runUntilSIGTERM(t *testing.T, env []string) string {
	t.Helper()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	cmd := exec.Command(os.Args[0], fmt.Sprintf("--port=%d", port), "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile, "--v=2", "--shutdown-delay=2s")
	cmd.Env = append(append(os.Environ(), "ACCEL_DRA_WEBHOOK_TEST_MAIN=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed: its exit status says only that
		}
	})

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	require.Eventually(t, func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "webhook not ready; stderr:\n%s", &stderr)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// During --shutdown-delay: not ready, but still serving.
	require.Eventually(t, func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 2*time.Second, 10*time.Millisecond, "readyz must fail after SIGTERM")
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/livez", port))
	require.NoError(t, err, "still serving during the shutdown delay")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status after SIGTERM; stderr:\n%s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20s after SIGTERM; stderr:\n%s", stderr.String())
	}
	return stderr.String()
}

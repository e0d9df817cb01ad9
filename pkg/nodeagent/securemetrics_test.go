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

package nodeagent

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/metrics"
)

// reviewer is an API server that knows two tokens: the scraper's, whose
// user may get /metrics, and a nosy pod's, whose user may not. Its
// answers are the reactors of a fake clientset (fakeClient); apiServer
// serves them over HTTP, because the upstream review clients post
// through the clientset's RESTClient, which a fake clientset lacks.
type reviewer struct{ tokenReviews, accessReviews atomic.Int32 }

var reviewUsers = map[string]string{"scraper-token": "system:serviceaccount:monitoring:prometheus", "nosy-token": "system:serviceaccount:default:nosy"}

func (rv *reviewer) fakeClient() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.tokenReviews.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if user, ok := reviewUsers[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.accessReviews.Add(1)
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == reviewUsers["scraper-token"] && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		return true, sar, nil
	})
	return c
}

// client is a real clientset talking to an API server that answers
// TokenReviews and SubjectAccessReviews with rv's fake clientset.
func (rv *reviewer) client(t *testing.T) kubernetes.Interface {
	fc := rv.fakeClient()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		in := &authenticationv1.TokenReview{}
		answer(t, w, r, in, func() (runtime.Object, error) {
			return fc.AuthenticationV1().TokenReviews().Create(r.Context(), in, metav1.CreateOptions{})
		})
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		in := &authorizationv1.SubjectAccessReview{}
		answer(t, w, r, in, func() (runtime.Object, error) {
			return fc.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), in, metav1.CreateOptions{})
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	require.NoError(t, err)
	return c
}

// answer decodes the review r posts into in and writes create's answer.
func answer(t *testing.T, w http.ResponseWriter, r *http.Request, in runtime.Object, create func() (runtime.Object, error)) {
	if err := json.NewDecoder(r.Body).Decode(in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := create()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.GetObjectKind().SetGroupVersionKind(in.GetObjectKind().GroupVersionKind())
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		t.Errorf("answering a review: %v", err)
	}
}

// TestSecureMetricsServesOnlyAuthorizedCallers: over TLS, a scrape
// without a token or with one the TokenReview rejects gets 401, a user
// the SubjectAccessReview denies 403, the allowed user the metrics; the
// answers are cached, so a second scrape costs the API server nothing.
func TestSecureMetricsServesOnlyAuthorizedCallers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := metrics.New()
	m.Observe(metrics.Prepare, "ascend.accel-dra.dev", time.Millisecond, nil)
	rv := &reviewer{}
	addr, err := serveMetrics(ctx, "127.0.0.1:0", m, SecureMetrics{Enabled: true}, "node-1", rv.client(t))
	require.NoError(t, err)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The certificate is self-signed, as a scraper without the CA sees it.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test server
	}}
	url := "https://" + addr.String() + "/metrics"

	for _, tc := range []struct {
		name, token, want string
		code              int
	}{
		{name: "no token", code: http.StatusUnauthorized, want: "Unauthorized"},
		{name: "token the TokenReview rejects", token: "stolen-token", code: http.StatusUnauthorized, want: "Unauthorized"},
		{name: "user the SubjectAccessReview denies", token: "nosy-token", code: http.StatusForbidden, want: `Forbidden: user "system:serviceaccount:default:nosy" may not get /metrics`},
		{name: "allowed user", token: "scraper-token", code: http.StatusOK, want: `accel_dra_prepare_duration_seconds_count{driver="ascend.accel-dra.dev"} 1`},
		{name: "allowed user again, from the caches", token: "scraper-token", code: http.StatusOK, want: `accel_dra_prepare_duration_seconds_count{driver="ascend.accel-dra.dev"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			require.NoError(t, err)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode, string(body))
			require.Contains(t, string(body), tc.want)
			require.NotNil(t, resp.TLS, "served over TLS")
		})
	}
	require.EqualValues(t, 3, rv.tokenReviews.Load(), "one TokenReview per distinct token")
	require.EqualValues(t, 2, rv.accessReviews.Load(), "one SubjectAccessReview per user")

	plain, err := http.Get("http://" + addr.String() + "/metrics") //nolint:noctx // a plain request to a TLS port
	require.NoError(t, err)
	defer plain.Body.Close()
	body, err := io.ReadAll(plain.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP gets no metrics")
	require.NotContains(t, string(body), "accel_dra")
}

// TestSecureMetricsFlagsRefuseUnsafeCombinations: secure metrics need a
// server of their own, so the kubelet's probes stay plain.
func TestSecureMetricsFlagsRefuseUnsafeCombinations(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           SecureMetrics
		metricsAddr string
		wantErr     string
	}{
		{name: "off", s: SecureMetrics{}},
		{name: "secure on its own server", s: SecureMetrics{Enabled: true}, metricsAddr: ":51516"},
		{name: "secure with certificate files", s: SecureMetrics{Enabled: true, CertFile: "c", KeyFile: "k"}, metricsAddr: ":51516"},
		{name: "secure on the probe port", s: SecureMetrics{Enabled: true}, wantErr: "--metrics-secure needs --metrics-addr"},
		{name: "certificate without key", s: SecureMetrics{Enabled: true, CertFile: "c"}, metricsAddr: ":51516", wantErr: "must be set together"},
		{name: "certificate without secure", s: SecureMetrics{CertFile: "c", KeyFile: "k"}, metricsAddr: ":51516", wantErr: "need --metrics-secure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.check(tc.metricsAddr)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestMetricsCertificateFilesAreReloaded: a rotated certificate is
// served without a restart; a missing file fails the start.
func TestMetricsCertificateFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	s := SecureMetrics{Enabled: true, CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	_, err := s.tlsConfig("node-1")
	require.ErrorContains(t, err, "reading the metrics certificate")

	write := func(host string, mod time.Time) {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(s.CertFile, certPEM, 0o600))
		require.NoError(t, os.WriteFile(s.KeyFile, keyPEM, 0o600))
		require.NoError(t, os.Chtimes(s.CertFile, mod, mod))
		require.NoError(t, os.Chtimes(s.KeyFile, mod, mod))
	}
	served := func(cfg *tls.Config) string {
		pair, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		require.NoError(t, err)
		require.NotNil(t, pair.Leaf)
		return pair.Leaf.Subject.CommonName
	}
	start := time.Now().Add(-time.Hour)
	write("first", start)
	cfg, err := s.tlsConfig("node-1")
	require.NoError(t, err)
	require.Contains(t, served(cfg), "first")

	write("rotated", start.Add(time.Minute))
	require.Contains(t, served(cfg), "rotated")

	require.NoError(t, os.Remove(s.KeyFile))
	require.Contains(t, served(cfg), "rotated", "a file mid-rotation keeps the last good pair")
}

// TestReviewRetries: an API server hiccup (5xx, 429) is retried within
// the backoff; a refusal (4xx) is not, and its error is the one returned.
func TestReviewRetries(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	backoff := wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	gr := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{name: "success", wantCalls: 1},
		{name: "internal error, then success", errs: []error{apierrors.NewInternalError(errors.New("etcd"))}, wantCalls: 2},
		{name: "too many requests, then success", errs: []error{apierrors.NewTooManyRequests("slow down", 1)}, wantCalls: 2},
		{name: "forbidden is final", errs: []error{apierrors.NewForbidden(gr, "", errors.New("no"))}, wantCalls: 1, wantErr: true},
		{name: "backoff runs out", errs: []error{
			apierrors.NewInternalError(errors.New("1")), apierrors.NewInternalError(errors.New("2")), apierrors.NewInternalError(errors.New("3")),
		}, wantCalls: 3, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := withRetries(ctx, backoff, func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			require.Equal(t, tc.wantCalls, calls)
			if tc.wantErr {
				require.ErrorIs(t, err, tc.errs[calls-1], "the last call's error")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

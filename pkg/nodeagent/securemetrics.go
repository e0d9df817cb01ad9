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

// Secure /metrics: HTTPS with delegated authentication (TokenReview) and
// authorization (SubjectAccessReview), as the Kubernetes components and
// controller-runtime's metrics filters serve theirs. The metrics carry
// pod and claim names, which not everyone on the pod network should read.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// SecureMetrics configures the secure form of /metrics.
type SecureMetrics struct {
	// Enabled serves /metrics over HTTPS to callers whose bearer token the
	// API server accepts (TokenReview) and who may get the non-resource
	// URL /metrics (SubjectAccessReview). It needs MetricsAddr: the
	// kubelet's probes on HealthAddr stay plain and unauthenticated.
	Enabled bool
	// CertFile and KeyFile are the serving certificate and key (PEM),
	// read again when either file changes (a rotated Secret); both empty:
	// a self-signed certificate made at start, as kube components do.
	CertFile, KeyFile string
}

// check refuses combinations the agent cannot serve safely.
func (s SecureMetrics) check(metricsAddr string) error {
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("--metrics-tls-cert-file and --metrics-tls-key-file must be set together")
	}
	if !s.Enabled {
		if s.CertFile != "" {
			return errors.New("--metrics-tls-cert-file and --metrics-tls-key-file need --metrics-secure")
		}
		return nil
	}
	if metricsAddr == "" {
		return errors.New("--metrics-secure needs --metrics-addr: without it /metrics is served on --healthz-addr, " +
			"which must stay plain unauthenticated HTTP for the kubelet's probes")
	}
	return nil
}

// Cache lifetimes of review answers, as controller-runtime's secure
// metrics use them: a scraper every 15-60 s costs the API server about
// one TokenReview a minute and one SubjectAccessReview per 5 minutes,
// while a revoked permission stops working within those times.
const (
	tokenReviewCacheTTL = time.Minute
	allowCacheTTL       = 5 * time.Minute
	denyCacheTTL        = 30 * time.Second
	reviewTimeout       = 10 * time.Second
)

// reviewBackoff retries a failed review call a few times, so an API
// server hiccup does not fail a scrape, without piling up behind an
// API server that is down.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// withAuth wraps h so only authenticated callers allowed to get the
// request's path reach it.
func withAuth(ctx context.Context, client kubernetes.Interface, h http.Handler) (http.Handler, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      &reviewBackoff,
		CacheTTL:                 tokenReviewCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the TokenReview authenticator of /metrics: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       &reviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the SubjectAccessReview authorizer of /metrics: %w", err)
	}
	return &authFilter{authn: authn, authz: authz, next: h, logger: klog.FromContext(ctx)}, nil
}

type authFilter struct {
	authn authenticator.Request
	authz authorizer.Authorizer
	next  http.Handler
	// logger is the agent's: a request's context carries none.
	logger klog.Logger
}

func (f *authFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := f.logger.WithValues("path", r.URL.Path, "remote", r.RemoteAddr)
	res, ok, err := f.authn.AuthenticateRequest(r)
	if err != nil || !ok {
		// The reason goes to the log, not the caller: it may say why a
		// token failed, which helps an attacker more than a scraper.
		logger.V(4).Info("Unauthenticated metrics request", "err", err)
		http.Error(w, "Unauthorized: a bearer token the API server accepts is required", http.StatusUnauthorized)
		return
	}
	attrs := authorizer.AttributesRecord{
		User:            res.User,
		Verb:            strings.ToLower(r.Method),
		Path:            r.URL.Path,
		ResourceRequest: false,
	}
	decision, reason, err := f.authz.Authorize(r.Context(), attrs)
	if err != nil {
		logger.Error(err, "Cannot authorize a metrics request", "user", res.User.GetName())
		http.Error(w, "Internal Server Error: authorization failed", http.StatusInternalServerError)
		return
	}
	if decision != authorizer.DecisionAllow {
		logger.V(4).Info("Forbidden metrics request", "user", res.User.GetName(), "reason", reason)
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", res.User.GetName(), attrs.Verb, attrs.Path), http.StatusForbidden)
		return
	}
	f.next.ServeHTTP(w, r)
}

// tlsConfig is the metrics server's TLS: the certificate files of s, or
// a self-signed certificate for host.
func (s SecureMetrics) tlsConfig(host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CertFile == "" {
		pair, err := selfSigned(host)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
		return cfg, nil
	}
	files := &certFiles{cert: s.CertFile, key: s.KeyFile}
	// Read once now, so a missing or bad file fails the start, not the
	// first scrape.
	if _, err := files.get(nil); err != nil {
		return nil, err
	}
	cfg.GetCertificate = files.get
	return cfg, nil
}

// selfSigned makes a certificate for host (the node name) signed by a
// CA of its own, as the kubelet does without --tls-cert-file; scrapers
// skip verification or pin it.
func selfSigned(host string) (tls.Certificate, error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, []string{"localhost"})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating a self-signed certificate for /metrics: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the self-signed certificate for /metrics: %w", err)
	}
	return pair, nil
}

// certFiles reloads a certificate and key when either file's
// modification time changes, so a rotated Secret (cert-manager) is used
// without restarting the agent. Handshakes are few (bounded connections,
// kept alive), so a stat per handshake costs nothing worth caching.
type certFiles struct {
	cert, key string

	mu              sync.Mutex
	certMod, keyMod time.Time
	pair            *tls.Certificate
}

func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certMod, keyMod, err := c.modTimes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.pair != nil {
			// A file mid-rotation: keep serving the last good pair.
			return c.pair, nil
		}
		return nil, err
	}
	if c.pair != nil && certMod.Equal(c.certMod) && keyMod.Equal(c.keyMod) {
		return c.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		if c.pair != nil {
			return c.pair, nil
		}
		return nil, fmt.Errorf("loading the metrics certificate %s and key %s: %w", c.cert, c.key, err)
	}
	c.pair, c.certMod, c.keyMod = &pair, certMod, keyMod
	return c.pair, nil
}

func (c *certFiles) modTimes() (certMod, keyMod time.Time, err error) {
	ci, err := os.Stat(c.cert)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("reading the metrics certificate: %w", err)
	}
	ki, err := os.Stat(c.key)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("reading the metrics key: %w", err)
	}
	return ci.ModTime(), ki.ModTime(), nil
}

// serveSecureMetrics serves h on addr over HTTPS, behind withAuth, until
// ctx is done.
func serveSecureMetrics(ctx context.Context, addr string, h http.Handler, s SecureMetrics, host string, client kubernetes.Interface) (net.Addr, error) {
	if client == nil {
		return nil, errors.New("--metrics-secure needs a Kubernetes client for TokenReview and SubjectAccessReview")
	}
	authed, err := withAuth(ctx, client, h)
	if err != nil {
		return nil, err
	}
	cfg, err := s.tlsConfig(host)
	if err != nil {
		return nil, err
	}
	return serveHTTPWith(ctx, addr, authed, "secure metrics", cfg)
}

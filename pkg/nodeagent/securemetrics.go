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
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// SecureMetrics configures the secure form of /metrics.
type SecureMetrics struct {
	// Enabled serves /metrics over HTTPS to callers whose bearer token the
	// API server accepts (TokenReview) and who may get the non-resource
	// URL /metrics (SubjectAccessReview). It needs MetricsOptions.Addr: the
	// kubelet's probes on HealthOptions.Addr stay plain and unauthenticated.
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

// accessReviewCacheSize bounds the SubjectAccessReview answers kept, as
// k8s.io/apiserver's webhook authorizer does; a few scrapers use a
// handful of them.
const accessReviewCacheSize = 8192

// withAuth wraps h so only authenticated callers allowed to get the
// request's path reach it.
//
// The reviews are built from k8s.io/apiserver's small packages (bearer
// token, token cache, authenticated group) plus the two review calls
// below, not from its webhook plugins or the delegating factories: those
// import its generic webhook client, and with it OpenTelemetry, the
// konnectivity client, the egress selector and CEL, which cost the agent
// about 160 packages, 8 MB of binary and their init-time allocations
// even with --metrics-secure off.
func withAuth(ctx context.Context, client kubernetes.Interface, h http.Handler) http.Handler {
	tokens := &tokenReviewer{
		client:  client.AuthenticationV1().TokenReviews(),
		timeout: reviewTimeout,
		backoff: reviewBackoff,
	}
	// Failed reviews (errors) are not cached: an API server hiccup must
	// not lock a scraper out for a minute.
	authn := group.NewAuthenticatedGroupAdder(
		bearertoken.New(tokencache.New(tokens, false, tokenReviewCacheTTL, tokenReviewCacheTTL)))
	authz := &accessReviewer{
		client:   client.AuthorizationV1().SubjectAccessReviews(),
		timeout:  reviewTimeout,
		backoff:  reviewBackoff,
		allowTTL: allowCacheTTL,
		denyTTL:  denyCacheTTL,
		answers:  utilcache.NewLRUExpireCache(accessReviewCacheSize),
	}
	return &authFilter{authn: authn, authz: authz, next: h, logger: klog.FromContext(ctx)}
}

// tokenReviewer authenticates a bearer token with a TokenReview, as
// k8s.io/apiserver's webhook token authenticator does through a clientset.
type tokenReviewer struct {
	client  authenticationv1client.TokenReviewInterface
	timeout time.Duration
	backoff wait.Backoff
}

func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	err := withRetries(ctx, t.backoff, func() error {
		var err error
		result, err = t.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	if !result.Status.Authenticated {
		if result.Status.Error != "" {
			return nil, false, errors.New(result.Status.Error)
		}
		return nil, false, nil
	}
	u := result.Status.User
	var extra map[string][]string
	if len(u.Extra) > 0 {
		extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = v
		}
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   u.Username,
		UID:    u.UID,
		Groups: u.Groups,
		Extra:  extra,
	}}, true, nil
}

// accessReviewer authorizes a non-resource request with a
// SubjectAccessReview and caches the answers, allowed ones for allowTTL
// and denied ones for denyTTL, as k8s.io/apiserver's webhook authorizer
// does; errors are not cached.
type accessReviewer struct {
	client            authorizationv1client.SubjectAccessReviewInterface
	timeout           time.Duration
	backoff           wait.Backoff
	allowTTL, denyTTL time.Duration
	answers           *utilcache.LRUExpireCache
}

func (a *accessReviewer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", errors.New("only non-resource requests are authorized here")
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: attrs.GetPath(), Verb: attrs.GetVerb()},
	}
	if u := attrs.GetUser(); u != nil {
		spec.User, spec.UID, spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
		if e := u.GetExtra(); len(e) > 0 {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(e))
			for k, v := range e {
				spec.Extra[k] = v
			}
		}
	}
	key, err := json.Marshal(spec)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	var status authorizationv1.SubjectAccessReviewStatus
	if cached, ok := a.answers.Get(string(key)); ok {
		status = cached.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		ctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		var result *authorizationv1.SubjectAccessReview
		err := withRetries(ctx, a.backoff, func() error {
			var err error
			result, err = a.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return authorizer.DecisionNoOpinion, "", fmt.Errorf("SubjectAccessReview: %w", err)
		}
		status = result.Status
		ttl := a.denyTTL
		if status.Allowed {
			ttl = a.allowTTL
		}
		a.answers.Add(string(key), status, ttl)
	}
	switch {
	case status.Denied && status.Allowed:
		return authorizer.DecisionDeny, status.Reason, errors.New("the SubjectAccessReview both allowed and denied the request")
	case status.Denied:
		return authorizer.DecisionDeny, status.Reason, nil
	case status.Allowed:
		return authorizer.DecisionAllow, status.Reason, nil
	default:
		return authorizer.DecisionNoOpinion, status.Reason, nil
	}
}

// withRetries calls call until it succeeds, fails for good, or backoff
// or ctx runs out, retrying the errors k8s.io/apiserver's webhooks retry
// (webhook.DefaultShouldRetry); it returns call's last error first.
func withRetries(ctx context.Context, backoff wait.Backoff, call func() error) error {
	var callErr error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		callErr = call()
		switch {
		case callErr == nil:
			return true, nil
		case transientError(callErr):
			return false, nil
		default:
			return false, callErr
		}
	})
	if callErr != nil {
		return callErr
	}
	return err
}

func transientError(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, retry := apierrors.SuggestsClientDelay(err)
	return retry
}

type authFilter struct {
	authn authenticator.Request
	authz authorizer.UnconditionalAuthorizer
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
	authed := withAuth(ctx, client, h)
	cfg, err := s.tlsConfig(host)
	if err != nil {
		return nil, err
	}
	return serveHTTPWith(ctx, addr, authed, "secure metrics", cfg)
}

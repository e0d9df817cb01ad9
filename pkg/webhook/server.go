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

// Package webhook is the validating admission webhook of accel-dra: it
// rejects ResourceClaims, ResourceClaimTemplates and DeviceClasses whose
// opaque config for ascend.accel-dra.dev or cambricon.accel-dra.dev would
// fail the kubelet plugin's prepare, at `kubectl apply` time and with the
// plugin's words. It serves HTTPS only, from a certificate it reloads when
// the mounted files change.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// Probe paths, served on the same HTTPS port as the webhook.
const (
	LivezPath  = "/livez"
	ReadyzPath = "/readyz"
)

// Options configure the server.
type Options struct {
	// Configs decodes the opaque configs the webhook judges: the binary's
	// main builds it from its vendor registry
	// (vendors.Registry.ConfigDecoder), so every vendor's driver is
	// judged by its own config kind. Required.
	Configs *v1alpha1.ConfigDecoder
	// Port is the HTTPS port Run listens on, on every address.
	Port int
	// CertFile and KeyFile hold the PEM serving certificate (with its
	// chain) and private key, e.g. tls.crt and tls.key of a mounted
	// kubernetes.io/tls Secret.
	CertFile, KeyFile string
	// CertReloadInterval is how often the files are checked for a new
	// certificate; default 10s.
	CertReloadInterval time.Duration
	// ShutdownDelay is how long the server keeps serving after the
	// context is done while /readyz reports not ready, so the endpoint
	// is taken out of the Service before the port closes and the API
	// server does not call a webhook that is gone. 0 stops at once.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds how long reviews in flight may take to finish
	// after that; default 10s.
	ShutdownTimeout time.Duration
}

// Server is the webhook's HTTPS server.
type Server struct {
	opts  Options
	certs *certReloader
	ready atomic.Bool
}

// NewServer checks the options and loads the serving certificate.
func NewServer(ctx context.Context, o Options) (*Server, error) {
	if o.Configs == nil {
		return nil, errors.New("a config decoder is required: it knows which drivers' configs are ours")
	}
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("a serving certificate and key are required: the webhook serves HTTPS only")
	}
	if o.CertReloadInterval <= 0 {
		o.CertReloadInterval = 10 * time.Second
	}
	if o.ShutdownDelay < 0 {
		o.ShutdownDelay = 0
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	certs, err := newCertReloader(ctx, o.CertFile, o.KeyFile)
	if err != nil {
		return nil, err
	}
	return &Server{opts: o, certs: certs}, nil
}

// Handler serves ValidatePath, LivezPath and ReadyzPath.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ValidatePath, NewHandler(s.opts.Configs))
	mux.HandleFunc(LivezPath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not serving: starting or shutting down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Run listens on Options.Port and serves until ctx is done.
func Run(ctx context.Context, o Options) error {
	s, err := NewServer(ctx, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", o.Port))
	if err != nil {
		return fmt.Errorf("listening on port %d: %w", o.Port, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves HTTPS on ln until ctx is done, then reports not ready,
// keeps serving for ShutdownDelay, stops taking new connections and waits
// up to ShutdownTimeout for reviews in flight. It returns nil after a
// clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	logger := klog.FromContext(ctx)
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go s.certs.run(reloadCtx, s.opts.CertReloadInterval)

	srv := &http.Server{
		Handler: s.Handler(),
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.certs.getCertificate,
		},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		// Requests carry the server's logger; they are not cancelled when
		// ctx ends, Shutdown lets them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// TLS handshake errors land here: a caBundle that does not match
		// the serving certificate shows up as "bad certificate".
		ErrorLog: log.New(klogWriter{logger}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	s.ready.Store(true)
	logger.Info("Serving admission webhook", "address", ln.Addr().String(), "path", ValidatePath)

	select {
	case err := <-served:
		s.ready.Store(false)
		return fmt.Errorf("serving HTTPS on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.ready.Store(false)
	logger.Info("Shutting down admission webhook", "delay", s.opts.ShutdownDelay, "timeout", s.opts.ShutdownTimeout)
	if s.opts.ShutdownDelay > 0 {
		select {
		case <-time.After(s.opts.ShutdownDelay):
		case err := <-served:
			return fmt.Errorf("serving HTTPS on %s: %w", ln.Addr(), err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTPS on %s: %w", ln.Addr(), err)
	}
	logger.Info("Admission webhook stopped")
	return nil
}

// klogWriter turns the http.Server's error log into klog messages.
type klogWriter struct{ logger klog.Logger }

func (w klogWriter) Write(p []byte) (int, error) {
	w.logger.Info("HTTP server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}

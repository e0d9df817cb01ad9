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

// The agent's HTTP probes (/livez, /readyz) and /metrics.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// probes serves the DaemonSet's probes: /livez answers when every driver
// started so far answers the kubelet's calls (driver.Live: GetInfo and an
// empty NodePrepareResources on its sockets) within LiveTimeout and no
// vendor library call has been hung for longer than the hang limit, so an
// agent whose calls are stuck is restarted; /readyz only when every driver has started and the
// kubelet has confirmed its registration, so a rolling update waits for
// the new pod to really serve before stopping the old one, and every
// claim prepared before a reboot is prepared again (driver.Ready). The same server
// has the agent's Prometheus metrics on /metrics, as the kubelet and other
// node components serve theirs beside their health endpoints.
type probes struct {
	mu      sync.Mutex
	drivers []*driver.Driver
	want    int
	// metrics of the agent's drivers; nil serves no /metrics.
	metrics *metrics.Metrics
	// separateMetrics: /metrics has a server of its own (serveMetrics).
	separateMetrics bool
	// liveTimeout bounds each liveness check (zero: LiveTimeout).
	liveTimeout time.Duration
	// libraries are the vendor libraries whose hung calls fail liveness
	// once hung for hangLimit (zero: DefaultLibraryHangLimit).
	libraries []libraryWatch
	hangLimit time.Duration
	// discoveryErr is the failed discovery of the vendors not served
	// (retryDiscovery); /readyz fails with it while it lasts.
	discoveryErr error
	// liveness shares one check among concurrent /livez requests and
	// serves its result for LiveCacheTTL.
	liveness liveCache
}

func (p *probes) setDiscoveryErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discoveryErr = err
}

// libraryWatch is one vendor backend that calls a management library.
type libraryWatch struct {
	vendor string
	watch  vendors.LibraryWatch
}

// DefaultLibraryHangLimit is how long a vendor library call may stay hung
// before /livez fails: six times vendors.DefaultLibraryCallTimeout, so a
// call that is only slow (and returns, unwedging the library) does not
// restart the agent, while one stuck in the driver does. A native call
// cannot be interrupted; only a new process gets the library back.
const DefaultLibraryHangLimit = 6 * vendors.DefaultLibraryCallTimeout

// libraryWatches are the vendors' libraries as main holds them
// (o.Opened). They load nothing: they look at the library the agent's
// discovery loaded, which the partition tools and telemetry share.
func libraryWatches(o source.Options) []libraryWatch {
	var out []libraryWatch
	for _, v := range o.Registry.All() {
		if l := o.Opened[v.Names().Option]; l != nil {
			out = append(out, libraryWatch{vendor: v.Names().Option, watch: l})
		}
	}
	return out
}

// hungLibraries fails for each vendor library with a call hung for longer
// than the limit, naming the call.
func (p *probes) hungLibraries(now time.Time) error {
	limit := p.hangLimit
	if limit <= 0 {
		limit = DefaultLibraryHangLimit
	}
	var errs []error
	for _, l := range p.libraries {
		h := l.watch.HungLibraryCall()
		if h == nil {
			continue
		}
		if hung := now.Sub(h.Since); hung > limit {
			errs = append(errs, fmt.Errorf("%s: %s: %s has not returned for %s (longer than --library-hang-limit %s); a restart loads the library afresh",
				l.vendor, h.Library, h.Call, hung.Round(time.Second), limit))
		}
	}
	return errors.Join(errs...)
}

func (p *probes) add(d *driver.Driver) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drivers = append(p.drivers, d)
}

func (p *probes) ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.discoveryErr != nil {
		return fmt.Errorf("not serving every vendor: %w", p.discoveryErr)
	}
	if len(p.drivers) < p.want {
		return fmt.Errorf("%d of %d drivers started", len(p.drivers), p.want)
	}
	var waiting []string
	for _, d := range p.drivers {
		if !d.Registered() {
			waiting = append(waiting, d.Name())
		}
	}
	if len(waiting) > 0 {
		return fmt.Errorf("not yet registered with the kubelet: %s", strings.Join(waiting, ", "))
	}
	var errs []error
	for _, d := range p.drivers {
		errs = append(errs, d.Ready())
	}
	return errors.Join(errs...)
}

// LiveTimeout bounds each driver's liveness check. A prepare that makes
// partitions holds the driver for seconds (the vendor tool's own limit is
// --tool-timeout, 30 s by default), and the empty prepare waits for it:
// the check must outlast a slow prepare, not only a hung one.
const LiveTimeout = 40 * time.Second

// live is the result of the liveness check (check), run at most once at
// a time and reused for LiveCacheTTL.
func (p *probes) live(ctx context.Context) error {
	timeout := p.liveTimeout
	if timeout <= 0 {
		timeout = LiveTimeout
	}
	return p.liveness.get(ctx, timeout, p.check)
}

// check checks every driver started so far (see driver.Live) and the
// vendor libraries' hung calls.
func (p *probes) check(ctx context.Context) error {
	p.mu.Lock()
	drivers := slices.Clone(p.drivers)
	p.mu.Unlock()
	var errs []error
	if err := p.hungLibraries(time.Now()); err != nil {
		errs = append(errs, err)
	}
	for _, d := range drivers {
		if err := d.Live(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *probes) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) {
		if err := p.live(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := p.ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if p.metrics != nil && !p.separateMetrics {
		mux.Handle("/metrics", p.metrics.Handler())
	}
	return mux
}

// serveMetrics serves m's /metrics alone on addr until ctx is done, so
// the metrics can listen on loopback, or be served securely (see
// SecureMetrics), while the kubelet probes the probe server on the pod
// IP.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, secure SecureMetrics, host string, client kubernetes.Interface) (net.Addr, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if secure.Enabled {
		return serveSecureMetrics(ctx, addr, mux, secure, host, client)
	}
	return serveHTTP(ctx, addr, mux, "metrics")
}

// serve runs the probe server on addr until ctx is done.
func (p *probes) serve(ctx context.Context, addr string) (net.Addr, error) {
	return serveHTTP(ctx, addr, p.handler(), "health probes and metrics")
}

// maxHTTPConnections bounds the open connections of each of the agent's
// HTTP servers: the kubelet's probes and a scraper need a few; a flood
// from the pod network waits in the kernel's backlog instead of costing
// the agent a goroutine and a file descriptor each.
const maxHTTPConnections = 32

// serveHTTP serves h on addr over plain HTTP until ctx is done.
func serveHTTP(ctx context.Context, addr string, h http.Handler, what string) (net.Addr, error) {
	return serveHTTPWith(ctx, addr, h, what, nil)
}

// serveHTTPWith serves h on addr until ctx is done, over HTTPS when
// tlsConfig is set.
func serveHTTPWith(ctx context.Context, addr string, h http.Handler, what string, tlsConfig *tls.Config) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for %s on %s: %w", what, addr, err)
	}
	// The limit counts TCP connections, before any TLS handshake, so a
	// flood of unfinished handshakes is bounded too.
	l = netutil.LimitListener(l, maxHTTPConnections)
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	// An idle or slow client cannot keep one of the few connections.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: LiveTimeout + 10*time.Second, IdleTimeout: 30 * time.Second,
		ErrorLog: log.New(serverLog{klog.FromContext(ctx).WithValues("serving", what)}, "", 0)}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server failed", "serving", what)
		}
	}()
	return l.Addr(), nil
}

// serverLog takes the HTTP server's own error lines into the agent's
// structured log instead of unstructured stderr. Broken-off TLS
// handshakes (port scanners, a scraper speaking plain HTTP to the secure
// metrics port) are routine and anyone can cause them, so they go to
// V(4) rather than flooding the log.
type serverLog struct{ logger klog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if strings.Contains(line, "TLS handshake error") {
		l.logger.V(4).Info("HTTP server", "message", line)
	} else {
		l.logger.Info("HTTP server", "message", line)
	}
	return len(p), nil
}

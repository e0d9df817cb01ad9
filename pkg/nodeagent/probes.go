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
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/metrics"
)

// probes serves the DaemonSet's probes: /livez answers while the process
// runs its event loop; /readyz only when every driver has started and the
// kubelet has confirmed its registration, so a rolling update waits for
// the new pod to really serve before stopping the old one. The same server
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
}

func (p *probes) add(d *driver.Driver) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drivers = append(p.drivers, d)
}

func (p *probes) ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	return nil
}

func (p *probes) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
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
// the metrics can listen on loopback while the kubelet probes the probe
// server on the pod IP.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics) (net.Addr, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return serveHTTP(ctx, addr, mux, "metrics")
}

// serve runs the probe server on addr until ctx is done.
func (p *probes) serve(ctx context.Context, addr string) (net.Addr, error) {
	return serveHTTP(ctx, addr, p.handler(), "health probes and metrics")
}

// serveHTTP serves h on addr until ctx is done.
func serveHTTP(ctx context.Context, addr string, h http.Handler, what string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for %s on %s: %w", what, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
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

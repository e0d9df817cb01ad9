//go:build e2e

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

package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// StartControlPlane brings up the control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) and kwok without any node:
// no containerd, kubelet, chart or agents. The scale benchmark
// (test/e2e/cmd/bench-scale) adds its kwok nodes with CreateKwokNodes.
// On error the part that started is torn down again.
func StartControlPlane(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the control plane's PKI and run directory need root, like the e2e cluster")
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.logf("StartControlPlane failed, tearing down: %v (logs in %s)", err, opts.ArtifactsDir)
			c.Stop(context.Background())
		}
	}()
	if err := c.saveState(); err != nil {
		return nil, err
	}
	if err := c.run(ctx, []step{{"control plane", c.startControlPlane}, {"kwok", c.startKwok}}); err != nil {
		return nil, err
	}
	return c, nil
}

// CreateKwokNodes creates the named nodes for kwok, a few in parallel,
// and waits until all are Ready and untainted.
func (c *Cluster) CreateKwokNodes(ctx context.Context, names []string, labels map[string]string) error {
	const workers = 16
	next := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				if err := c.createKwokNode(ctx, NodeInfo{Name: name, Labels: labels}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
feed:
	for _, n := range names {
		select {
		case next <- n:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	return waitFor(ctx, fmt.Sprintf("%d kwok nodes Ready and untainted", len(names)), 5*time.Minute, c.proc("kwok"), func(ctx context.Context) (bool, error) {
		list, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeTypeLabel + "=kwok"})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			n := &list.Items[i]
			if want[n.Name] && nodeReady(n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		if ready < len(names) {
			return false, fmt.Errorf("%d of %d nodes Ready and untainted", ready, len(names))
		}
		return true, nil
	})
}

// PID is the process id of a running component (etcd, kube-apiserver,
// kube-scheduler, ...), 0 if there is none.
func (c *Cluster) PID(component string) int {
	if p := c.proc(component); p != nil {
		return p.PID
	}
	return 0
}

// APIServerMetrics returns kube-apiserver's /metrics in the Prometheus
// text format.
func (c *Cluster) APIServerMetrics(ctx context.Context) ([]byte, error) {
	body, err := c.Admin.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver /metrics: %w", err)
	}
	return body, nil
}

// SchedulerMetrics returns kube-scheduler's /metrics.
func (c *Cluster) SchedulerMetrics(ctx context.Context) ([]byte, error) {
	return c.SchedulerGet(ctx, "/metrics")
}

// SchedulerGet reads a path of kube-scheduler's secure endpoint
// (/metrics, /debug/pprof/profile?seconds=N) with the admin client
// certificate, which the scheduler authorizes through the API server;
// its serving certificate is self-signed and not verified.
func (c *Cluster) SchedulerGet(ctx context.Context, path string) ([]byte, error) {
	if c.schedulerURL == "" {
		return nil, fmt.Errorf("reading kube-scheduler %s: no scheduler is running", path)
	}
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.Host = c.schedulerURL
	cfg.CAFile, cfg.CAData = "", nil
	cfg.Insecure = true
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading kube-scheduler %s: %w", path, err)
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.schedulerURL+path, nil)
	if err != nil {
		return nil, fmt.Errorf("reading kube-scheduler %s: %w", path, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading kube-scheduler %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading kube-scheduler %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading kube-scheduler %s: %s: %.200s", path, resp.Status, body)
	}
	return body, nil
}

// LogFile is the log file of a component started by the cluster, "" if
// there is none.
func (c *Cluster) LogFile(component string) string {
	if p := c.proc(component); p != nil {
		return p.LogFile
	}
	return ""
}

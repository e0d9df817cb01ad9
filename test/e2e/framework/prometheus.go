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

// A real Prometheus server (Debian's prometheus package, which
// hack/e2e/build.sh installs) on loopback, scraping every node agent's
// /metrics, for the chip telemetry tests.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// PrometheusInterval is the scrape and rule evaluation interval of the
// test Prometheus, and AgentChipMetricsInterval the agents' telemetry
// interval: short, so a test sees a change within seconds.
const (
	PrometheusInterval       = 2 * time.Second
	AgentChipMetricsInterval = 2 * time.Second
)

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// URL is its HTTP address, on loopback.
	URL string
	API promv1.API
}

// StartPrometheus runs Prometheus on loopback with the rule file rules
// (Prometheus' rule file format), scraping the agent of every node.
func (c *Cluster) StartPrometheus(ctx context.Context, name string, rules []byte) (*Prometheus, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, fmt.Errorf("no prometheus on PATH (hack/e2e/build.sh installs Debian's prometheus package): %w", err)
	}
	dir, err := c.dir("prometheus", name)
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, n := range sortedKeys(c.Agents) {
		targets = append(targets, c.Agents[n].HealthAddr)
	}
	sort.Strings(targets)
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		return nil, fmt.Errorf("writing the Prometheus rules: %w", err)
	}
	cfg, err := yaml.Marshal(map[string]any{
		"global":     map[string]any{"scrape_interval": PrometheusInterval.String(), "evaluation_interval": PrometheusInterval.String()},
		"rule_files": []string{filepath.Join(dir, "rules.yaml")},
		"scrape_configs": []any{map[string]any{
			"job_name":       "accel-dra-kubeletplugin",
			"static_configs": []any{map[string]any{"targets": targets}},
		}},
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o644); err != nil {
		return nil, fmt.Errorf("writing the Prometheus config: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := c.start("prometheus-"+name, nil, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr); err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + addr}
	client, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		return nil, err
	}
	p.API = promv1.NewAPI(client)
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("prometheus on %s is not ready after a minute: %w", addr, errors.Join(err, ctx.Err()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Query evaluates expr now and returns its series.
func (p *Prometheus) Query(ctx context.Context, expr string) (model.Vector, error) {
	v, warnings, err := p.API.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", expr, err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("querying %s: warnings %v", expr, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("querying %s: a %s, not an instant vector", expr, v.Type())
	}
	return vec, nil
}

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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ImageEnv names the image archive `make image` wrote (a multi-platform
// OCI archive); hack/e2e/run.sh builds it and sets this. The real node's
// containerd imports its linux/amd64 image at start, under the name the
// chart deploys by default, so `helm install` runs the agent and the
// webhook from the image a user would push.
const ImageEnv = "ACCEL_DRA_E2E_IMAGE"

// importAccelDRAImage imports the archive named by ImageEnv, if set, and
// returns the image names it holds.
func (c *Cluster) importAccelDRAImage() ([]string, error) {
	archive := os.Getenv(ImageEnv)
	if archive == "" {
		return nil, nil
	}
	if _, err := os.Stat(archive); err != nil {
		return nil, fmt.Errorf("%s: %w (make image writes it)", ImageEnv, err)
	}
	if _, err := c.ctr("images", "import", "--platform", "linux/amd64", archive); err != nil {
		return nil, fmt.Errorf("importing the accel-dra image %s: %w", archive, err)
	}
	c.State.Image = archive
	name, err := c.chartImage()
	if err != nil {
		return nil, err
	}
	c.logf("Imported the accel-dra image %s as %s", archive, name)
	return []string{name}, nil
}

// chartImage is the image the chart deploys by default:
// image.repository:appVersion.
func (c *Cluster) chartImage() (string, error) {
	chart := filepath.Join(c.opts.RepoRoot, ChartPath)
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	for file, into := range map[string]any{"Chart.yaml": &meta, "values.yaml": &values} {
		raw, err := os.ReadFile(filepath.Join(chart, file))
		if err != nil {
			return "", fmt.Errorf("reading the chart's %s: %w", file, err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			return "", fmt.Errorf("parsing the chart's %s: %w", file, err)
		}
	}
	return values.Image.Repository + ":" + meta.AppVersion, nil
}

// StopAgent stops the agent of node with SIGTERM, as a DaemonSet rollout
// or a node drain would: it unregisters from the kubelet; its slices,
// CDI specs and checkpoint stay for the next agent.
func (c *Cluster) StopAgent(node string) error {
	a := c.Agents[node]
	if a == nil || a.proc == nil {
		return fmt.Errorf("no agent on node %s", node)
	}
	return a.proc.stop(30 * time.Second)
}

// Helm runs the helm binary hack/e2e/build.sh built against the cluster
// with the admin kubeconfig and returns its output.
func (c *Cluster) Helm(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	args = append([]string{"--kubeconfig", c.State.Kubeconfig}, args...)
	out, err := runContext(ctx, timeout, c.bin("helm"), args...)
	if err != nil {
		return out.stdout + out.stderr, fmt.Errorf("helm %s: %w", strings.Join(args[2:], " "), err)
	}
	return out.stdout, nil
}

// WriteValues writes Helm values to a file in the run directory.
func (c *Cluster) WriteValues(name string, values map[string]any) (string, error) {
	dir, err := c.dir("helm")
	if err != nil {
		return "", err
	}
	raw, err := yaml.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding Helm values %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return "", fmt.Errorf("writing Helm values %s: %w", path, err)
	}
	return path, nil
}

// RealAgent is the real node's agent: its directories are the ones a
// DaemonSet pod must take over.
func (c *Cluster) RealAgent() *Agent { return c.Agents[c.State.RealNode] }

// agentRoot is the fake root of the agent of node (newAgent's), known
// before the agent starts.
func (c *Cluster) agentRoot(node string) string {
	return filepath.Join(c.State.RunDir, "agents", node, "root")
}

// AgentArgs returns the flags the agent of node runs with; SetAgentArgs
// replaces them for its next start.
func (c *Cluster) AgentArgs(node string) []string {
	return append([]string(nil), c.Agents[node].args...)
}

// SetAgentArgs sets the flags of the agent of node for its next start.
func (c *Cluster) SetAgentArgs(node string, args []string) {
	c.Agents[node].args = append([]string(nil), args...)
}

// SetAgentEnv sets what the agent of node gets in its environment besides
// the test's, from its next start.
func (c *Cluster) SetAgentEnv(node string, env []string) {
	c.Agents[node].env = append([]string(nil), env...)
}

// ContainerSpec is the OCI spec containerd handed the runtime for a
// container of the real node ("containerd://<id>" as the pod status
// names it): what the runtime, and any runtime wrapper, made of it.
func (c *Cluster) ContainerSpec(containerID string) ([]byte, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	path := filepath.Join(c.State.RunDir, "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io", id, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI spec of container %s: %w", id, err)
	}
	return raw, nil
}

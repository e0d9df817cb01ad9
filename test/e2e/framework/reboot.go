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
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
)

// StopKubelet stops the real node's kubelet with SIGTERM. Its containers
// keep running: containerd owns them.
func (c *Cluster) StopKubelet() error {
	p := c.proc("kubelet")
	if p == nil {
		return errors.New("no kubelet was started")
	}
	return p.stop(30 * time.Second)
}

// StartKubelet starts the real node's kubelet again with the flags it had
// and waits until the node posts Ready after the start.
func (c *Cluster) StartKubelet(ctx context.Context) error {
	old := c.proc("kubelet")
	if old == nil {
		return errors.New("no kubelet was started")
	}
	if done, _ := old.exited(); !done {
		return fmt.Errorf("the kubelet (pid %d) is still running", old.PID)
	}
	since := time.Now()
	p, err := c.start("kubelet", nil, old.Args[0], old.Args[1:]...)
	if err != nil {
		return err
	}
	node := c.State.RealNode
	return waitFor(ctx, "node "+node+" Ready after the kubelet's start", 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		n, err := c.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == "Ready" {
				// The heartbeat has second precision.
				return nodeReady(n) && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)), nil
			}
		}
		return false, nil
	})
}

// RestartKubelet stops the real node's kubelet and starts it again.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	if err := c.StopKubelet(); err != nil {
		return err
	}
	return c.StartKubelet(ctx)
}

// SimulateReboot does to the real node what a reboot does to the state
// the driver relies on, with the kubelet and the agent stopped: the given
// containers die, /var/run/cdi (tmpfs) is empty, partitions are gone and
// the kernel has a new boot id (set under the agent's root, where the
// agent reads it). Then it starts the kubelet and the agent again and
// waits until the agent serves.
func (c *Cluster) SimulateReboot(ctx context.Context, bootID string, containerIDs ...string) error {
	if err := c.SimulateRebootWith(ctx, bootID, RebootOptions{}, containerIDs...); err != nil {
		return err
	}
	return c.WaitForAgent(ctx, c.State.RealNode)
}

// RebootOptions say what a simulated reboot keeps and breaks.
type RebootOptions struct {
	// PersistentCDIDir keeps the CDI directory, as a cdiDir on disk
	// (/etc/cdi) survives a reboot.
	PersistentCDIDir bool
	// BrokenPartitionTool makes the simulated partition tool fail, as a
	// vendor tool does before its driver is loaded, until
	// FixPartitionTool.
	BrokenPartitionTool bool
}

// SimulateRebootWith is SimulateReboot as o says, without waiting for
// the agent: with a broken partition tool it is not ready until
// FixPartitionTool (WaitForAgent then waits for it).
func (c *Cluster) SimulateRebootWith(ctx context.Context, bootID string, o RebootOptions, containerIDs ...string) error {
	node := c.State.RealNode
	a := c.Agents[node]
	if a == nil {
		return fmt.Errorf("no agent on node %s", node)
	}
	if err := c.StopKubelet(); err != nil {
		return err
	}
	if err := c.KillAgent(node); err != nil {
		return err
	}
	for _, id := range containerIDs {
		id = strings.TrimPrefix(id, "containerd://")
		if out, err := c.ctr("task", "kill", "--signal", "SIGKILL", id); err != nil {
			return fmt.Errorf("killing container %s: %w: %s", id, err, out)
		}
	}
	if !o.PersistentCDIDir {
		if err := emptyDir(a.CDIDir); err != nil {
			return fmt.Errorf("emptying the CDI directory: %w", err)
		}
	}
	for _, d := range a.Drivers {
		state := filepath.Join(a.StateDir, d, profilenode.PartitionStateFile)
		if err := os.Remove(state); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the simulated partitions: %w", err)
		}
		if o.BrokenPartitionTool {
			if err := os.WriteFile(state, []byte(brokenToolState), 0o600); err != nil {
				return fmt.Errorf("breaking the simulated partition tool: %w", err)
			}
		}
	}
	boot := filepath.Join(a.Root, driver.BootIDFile)
	if err := os.MkdirAll(filepath.Dir(boot), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(boot, []byte(bootID+"\n"), 0o644); err != nil {
		return fmt.Errorf("setting the boot id: %w", err)
	}
	if err := c.StartKubelet(ctx); err != nil {
		return err
	}
	return c.StartAgent(node)
}

// brokenToolState is what SimulateRebootWith puts in the simulated
// partition tool's state file so that every command of it fails.
const brokenToolState = "the device driver is not loaded"

// FixPartitionTool undoes RebootOptions.BrokenPartitionTool on the real
// node: the tool works again, with no partitions.
func (c *Cluster) FixPartitionTool() error {
	a := c.Agents[c.State.RealNode]
	if a == nil {
		return fmt.Errorf("no agent on node %s", c.State.RealNode)
	}
	for _, d := range a.Drivers {
		state := filepath.Join(a.StateDir, d, profilenode.PartitionStateFile)
		raw, err := os.ReadFile(state)
		if errors.Is(err, os.ErrNotExist) || (err == nil && string(raw) != brokenToolState) {
			continue
		}
		if err != nil {
			return fmt.Errorf("fixing the simulated partition tool: %w", err)
		}
		if err := os.Remove(state); err != nil {
			return fmt.Errorf("fixing the simulated partition tool: %w", err)
		}
	}
	return nil
}

// AgentReadyz is the real node's agent's /readyz: its status code and
// body.
func (c *Cluster) AgentReadyz(ctx context.Context) (int, string, error) {
	a := c.Agents[c.State.RealNode]
	if a == nil {
		return 0, "", fmt.Errorf("no agent on node %s", c.State.RealNode)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.HealthAddr+"/readyz", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// emptyDir removes everything in dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

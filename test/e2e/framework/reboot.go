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
	specs, err := os.ReadDir(a.CDIDir)
	if err != nil {
		return fmt.Errorf("emptying the CDI directory: %w", err)
	}
	for _, s := range specs {
		if err := os.RemoveAll(filepath.Join(a.CDIDir, s.Name())); err != nil {
			return fmt.Errorf("emptying the CDI directory: %w", err)
		}
	}
	for _, d := range a.Drivers {
		if err := os.Remove(filepath.Join(a.StateDir, d, profilenode.PartitionStateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the simulated partitions: %w", err)
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
	return c.RestartAgent(ctx, node)
}

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
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// AddAgentNode creates a kwok node beyond demo/cluster.yaml's and prepares
// its node agent (stand-in pod, ServiceAccount token, kubeconfig, flags)
// without starting it. The agent's kubeconfig points at server (an https
// URL, e.g. a test's proxy in front of the API server), or at the API
// server itself when server is empty. RemoveAgentNode undoes it all.
func (c *Cluster) AddAgentNode(ctx context.Context, n NodeInfo, server string) (*Agent, error) {
	if n.Real {
		return nil, errors.New("an added node is a kwok node")
	}
	if _, dup := c.Agents[n.Name]; dup {
		return nil, fmt.Errorf("node %s already has an agent", n.Name)
	}
	if err := c.createKwokNode(ctx, n); err != nil {
		return nil, err
	}
	err := waitFor(ctx, "kwok node "+n.Name+" Ready and untainted", 2*time.Minute, c.proc("kwok"), func(ctx context.Context) (bool, error) {
		node, err := c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !nodeReady(node) || len(node.Spec.Taints) > 0 {
			return false, fmt.Errorf("ready=%v taints=%v", nodeReady(node), node.Spec.Taints)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	a, err := c.newAgent(ctx, n)
	if err != nil {
		return nil, err
	}
	if server != "" {
		cfg := clientcmdConfig(server, c.pki.CAFile, "agent-"+n.Name, nil, a.Token)
		if err := clientcmd.WriteToFile(*cfg, a.Kubeconfig); err != nil {
			return nil, fmt.Errorf("writing kubeconfig of the agent on %s: %w", n.Name, err)
		}
	}
	c.Agents[n.Name] = a
	return a, nil
}

// StartAgent starts the agent of node and returns at once: unlike
// RestartAgent it does not wait for the agent's slices.
func (c *Cluster) StartAgent(node string) error {
	a := c.Agents[node]
	if a == nil {
		return fmt.Errorf("no agent on node %s", node)
	}
	if a.proc != nil {
		if done, _ := a.proc.exited(); !done {
			return fmt.Errorf("the agent of %s (pid %d) is still running", node, a.proc.PID)
		}
	}
	return c.runAgent(a)
}

// AgentRunning returns nil while the agent of node runs, else how it
// ended with the last lines of its log.
func (c *Cluster) AgentRunning(node string) error {
	a := c.Agents[node]
	if a == nil || a.proc == nil {
		return fmt.Errorf("no agent started on node %s", node)
	}
	if done, err := a.proc.exited(); done {
		return fmt.Errorf("the agent of %s exited (%s); last log lines:\n%s", node, fmt.Sprint(err), a.proc.logTail(30))
	}
	return nil
}

// RemoveAgentNode stops the agent of an added node and deletes the node's
// ResourceSlices, the agent's stand-in pod and the node, so later tests
// see demo/cluster.yaml only.
func (c *Cluster) RemoveAgentNode(ctx context.Context, node string) error {
	a := c.Agents[node]
	if a == nil {
		return fmt.Errorf("no agent on node %s", node)
	}
	if a.proc != nil {
		if err := a.proc.stop(5 * time.Second); err != nil {
			return err
		}
	}
	delete(c.Agents, node)
	var errs []error
	if err := c.Admin.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}); err != nil {
		errs = append(errs, fmt.Errorf("deleting the ResourceSlices of %s: %w", node, err))
	}
	if err := c.Admin.CoreV1().Pods(AgentNamespace).Delete(ctx, a.StandIn, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting stand-in pod %s: %w", a.StandIn, err))
	}
	if err := c.Admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting node %s: %w", node, err))
	}
	return errors.Join(errs...)
}

// APIServerHost is the host:port the API server listens on, for a test
// that puts a proxy in front of it.
func (c *Cluster) APIServerHost() string {
	u, err := url.Parse(c.apiserverURL)
	if err != nil {
		return ""
	}
	return u.Host
}

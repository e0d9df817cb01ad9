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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startKwok runs kwok for the nodes labelled NodeTypeLabel=kwok and
// creates those nodes: every node of demo/cluster.yaml but the real one.
// kwok keeps them Ready (node-initialize, heartbeat with lease) and plays
// the lifecycle of their pods (ready, complete, delete), so the scheduler
// and the claim controllers see a cluster of many nodes.
func (c *Cluster) startKwok(ctx context.Context) error {
	admin, err := c.pki.client("kwok", "kwok", "system:masters")
	if err != nil {
		return err
	}
	kc, err := c.kubeconfig("kwok", &admin, "")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.start("kwok", nil, c.bin("kwok"),
		"--kubeconfig="+kc,
		"--config="+c.bin("kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector="+NodeTypeLabel+"=kwok",
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
		"--node-ip=127.0.0.1",
		// kwok's pods get loopback addresses: whatever dials one (an
		// endpoint of a Service, a webhook) stays on this machine.
		"--cidr=127.244.0.0/16",
	)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if n.Real {
			continue
		}
		if err := c.createKwokNode(ctx, n); err != nil {
			return err
		}
	}
	return waitFor(ctx, "kwok nodes Ready and untainted", 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		for _, n := range c.Nodes {
			if n.Real {
				continue
			}
			node, err := c.Admin.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeReady(node) || len(node.Spec.Taints) > 0 {
				return false, fmt.Errorf("node %s: ready=%v taints=%v", n.Name, nodeReady(node), node.Spec.Taints)
			}
		}
		return true, nil
	})
}

// createKwokNode creates a Node object that kwok (started with
// --manage-nodes-with-label-selector) keeps Ready.
func (c *Cluster) createKwokNode(ctx context.Context, n NodeInfo) error {
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
		NodeTypeLabel:            "kwok",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := c.Admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok node %s: %w", n.Name, err)
	}
	return nil
}

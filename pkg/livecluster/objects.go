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

package livecluster

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Single objects and small lists the why view reads besides a Snapshot.
// A not-found answer comes back as the API error (IsNotFound); other
// refusals as one line, like Read's. Results are filtered here too, not
// only by the API server's field selectors, so they hold the same on a
// server (or fake) that ignores them.

// Pod reads one pod.
func (c *Connection) Pod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	p, err := c.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !IsNotFound(err) {
		return nil, c.explain(fmt.Sprintf("get pod %s/%s", namespace, name), err)
	}
	return p, err
}

// Claim reads one ResourceClaim.
func (c *Connection) Claim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error) {
	rc, err := c.Client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !IsNotFound(err) {
		return nil, c.explain(fmt.Sprintf("get resourceclaim %s/%s", namespace, name), err)
	}
	return rc, err
}

// ClaimTemplate reads one ResourceClaimTemplate.
func (c *Connection) ClaimTemplate(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error) {
	t, err := c.Client.ResourceV1().ResourceClaimTemplates(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !IsNotFound(err) {
		return nil, c.explain(fmt.Sprintf("get resourceclaimtemplate %s/%s", namespace, name), err)
	}
	return t, err
}

// PodsNamed lists the pods called name in every namespace.
func (c *Connection) PodsNamed(ctx context.Context, name string) ([]v1.Pod, error) {
	var out []v1.Pod
	err := list(ctx, c, "list pods at cluster scope", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return c.Client.CoreV1().Pods("").List(ctx, o)
	}, func(o runtime.Object) {
		for _, p := range o.(*v1.PodList).Items {
			if p.Name == name {
				out = append(out, p)
			}
		}
	})
	return out, err
}

// ClaimsNamed lists the ResourceClaims called name in every namespace.
func (c *Connection) ClaimsNamed(ctx context.Context, name string) ([]resourceapi.ResourceClaim, error) {
	var out []resourceapi.ResourceClaim
	err := list(ctx, c, "list resourceclaims.resource.k8s.io at cluster scope", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return c.Client.ResourceV1().ResourceClaims("").List(ctx, o)
	}, func(o runtime.Object) {
		for _, rc := range o.(*resourceapi.ResourceClaimList).Items {
			if rc.Name == name {
				out = append(out, rc)
			}
		}
	})
	return out, err
}

// Events lists the events about one object (core/v1 Events, which the
// kubelet and the scheduler record), oldest first as the server keeps
// them.
func (c *Connection) Events(ctx context.Context, namespace string, uid types.UID) ([]v1.Event, error) {
	var out []v1.Event
	err := list(ctx, c, "list events in namespace "+namespace, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String()
		return c.Client.CoreV1().Events(namespace).List(ctx, o)
	}, func(o runtime.Object) {
		for _, e := range o.(*v1.EventList).Items {
			if e.InvolvedObject.UID == uid {
				out = append(out, e)
			}
		}
	})
	return out, err
}

// PodsOnNode lists the pods of every namespace on node that match the
// label selector.
func (c *Connection) PodsOnNode(ctx context.Context, node, labelSelector string) ([]v1.Pod, error) {
	var out []v1.Pod
	err := list(ctx, c, "list pods at cluster scope", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		o.LabelSelector = labelSelector
		return c.Client.CoreV1().Pods("").List(ctx, o)
	}, func(o runtime.Object) {
		for _, p := range o.(*v1.PodList).Items {
			if p.Spec.NodeName == node {
				out = append(out, p)
			}
		}
	})
	return out, err
}

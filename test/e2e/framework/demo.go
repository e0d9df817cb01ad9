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
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
)

// DemoOrder is the order the demo manifests are applied in, one after the
// other, each allocated before the next is applied. 01 goes first: only
// a2-0 has 8 chips in one HCCS group, and any other claim on a2-0 would
// break it. 07 next: only the mixed node has both vendors. 05 next: with
// a2-0 full only the mixed node has 910B3s, and later claims could take
// them. The rest fit in any order.
var DemoOrder = []string{
	"01-mindspore-training.yaml",
	"07-mixed-pod.yaml",
	"05-first-available.yaml",
	"02-pytorch-inference-mlu370.yaml",
	"03-same-ring-4.yaml",
	"04-memory-any-vendor.yaml",
	"06-train-serve-pipeline.yaml",
	"08-legacy-extended-resource.yaml",
}

// DemoWorkload is one applied workload of the demo and its pod.
type DemoWorkload struct {
	File   string
	Object *unstructured.Unstructured
	Pod    *corev1.Pod
	Claims []*resourceapi.ResourceClaim
}

// ApplyDemo applies demo/workloads (the claim templates) and then every
// manifest of demo/manifests in DemoOrder as fieldManager, waiting after
// each file until its pods are scheduled.
func (c *Cluster) ApplyDemo(ctx context.Context, fieldManager string) ([]*unstructured.Unstructured, []DemoWorkload, error) {
	templates, err := ReadObjects(filepath.Join(c.opts.RepoRoot, "demo", "workloads"))
	if err != nil {
		return nil, nil, err
	}
	applied, err := c.Apply(ctx, fieldManager, templates...)
	if err != nil {
		return applied, nil, fmt.Errorf("applying demo/workloads: %w", err)
	}
	var workloads []DemoWorkload
	for _, file := range DemoOrder {
		objs, err := ReadObjects(filepath.Join(c.opts.RepoRoot, "demo", "manifests", file))
		if err != nil {
			return applied, workloads, err
		}
		out, err := c.Apply(ctx, fieldManager, objs...)
		applied = append(applied, out...)
		if err != nil {
			return applied, workloads, fmt.Errorf("applying %s: %w", file, err)
		}
		for _, obj := range out {
			switch obj.GetKind() {
			case "Job", "Deployment", "Pod":
			default:
				continue
			}
			pod, err := c.WorkloadPod(ctx, obj)
			if err != nil {
				return applied, workloads, fmt.Errorf("%s: %w", file, err)
			}
			claims, err := c.PodClaims(ctx, pod)
			if err != nil {
				return applied, workloads, fmt.Errorf("%s: %w", file, err)
			}
			workloads = append(workloads, DemoWorkload{File: file, Object: obj, Pod: pod, Claims: claims})
		}
	}
	return applied, workloads, nil
}

// WorkloadPod waits for the (first) pod of a Pod, Job or Deployment to be
// scheduled and returns it.
func (c *Cluster) WorkloadPod(ctx context.Context, obj *unstructured.Unstructured) (*corev1.Pod, error) {
	ns := obj.GetNamespace()
	var sel string
	if obj.GetKind() != "Pod" {
		podLabels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
		sel = labels.SelectorFromSet(podLabels).String()
	}
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if obj.GetKind() == "Pod" {
			p, err := c.Admin.CoreV1().Pods(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			pod = p
		} else {
			pods, err := c.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil || len(pods.Items) == 0 {
				return false, nil
			}
			pod = &pods.Items[0]
		}
		return pod.Spec.NodeName != "", nil
	})
	if err != nil {
		return pod, fmt.Errorf("%s %s/%s has no scheduled pod: %w", obj.GetKind(), ns, obj.GetName(), err)
	}
	return pod, nil
}

// PodClaims returns the claims of a pod: those it names, those made from
// its claim templates and the one the scheduler made for extended
// resources.
func (c *Cluster) PodClaims(ctx context.Context, pod *corev1.Pod) ([]*resourceapi.ResourceClaim, error) {
	var claimNames []string
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil {
			claimNames = append(claimNames, *rc.ResourceClaimName)
		}
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			claimNames = append(claimNames, *s.ResourceClaimName)
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		claimNames = append(claimNames, s.ResourceClaimName)
	}
	var claims []*resourceapi.ResourceClaim
	for _, n := range claimNames {
		cl, err := c.Admin.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting claim %s of pod %s/%s: %w", n, pod.Namespace, pod.Name, err)
		}
		claims = append(claims, cl)
	}
	return claims, nil
}

// DescribeDevices lists the allocated devices of claims with the model
// and link group their ResourceSlices publish, one per line.
func (c *Cluster) DescribeDevices(ctx context.Context, claims []*resourceapi.ResourceClaim) ([]string, error) {
	sl, err := c.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	byKey := map[string]resourceapi.Device{}
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			byKey[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = d
		}
	}
	var out []string
	for _, cl := range claims {
		if cl.Status.Allocation == nil {
			out = append(out, fmt.Sprintf("claim %s: not allocated", cl.Name))
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			d := byKey[r.Driver+"/"+r.Pool+"/"+r.Device]
			out = append(out, fmt.Sprintf("%-8s %s/%s  %s %s  (request %s, claim %s)", r.Device, r.Pool, r.Driver,
				ptr.Deref(d.Attributes[names.AttrModel].StringValue, "?"), ptr.Deref(d.Attributes[names.AttrLinkGroup].StringValue, "?"),
				r.Request, cl.Name))
		}
	}
	return out, nil
}

// ContainerView is what the container of a pod on the real node printed
// about its chips: the visible-devices and DRA_ variables and the vendor
// device nodes of `ls -l /dev`, waiting up to a minute for the output.
func (c *Cluster) ContainerView(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	var logs string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		data, err := c.Admin.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		logs = string(data)
		return strings.Contains(logs, "urandom"), nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the output of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var env, dev []string
	for _, line := range strings.Split(logs, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 9 && line[0] == 'c':
			name := f[len(f)-1]
			if strings.HasPrefix(name, "davinci") || strings.HasPrefix(name, "cambricon") || strings.HasPrefix(name, "devmm") ||
				strings.HasPrefix(name, "hisi") || strings.HasPrefix(name, "commu") || strings.HasPrefix(name, "cmsg") {
				dev = append(dev, "/dev/"+name)
			}
		case strings.Contains(line, "VISIBLE_DEVICES=") || strings.HasPrefix(line, "DRA_"):
			env = append(env, line)
		}
	}
	sort.Strings(dev)
	return append(env, "devices: "+strings.Join(dev, " ")), nil
}

// PrintDemo writes, per demo pod, where it runs, the chips it got and,
// on the real node, what its container sees.
func (c *Cluster) PrintDemo(ctx context.Context, w io.Writer, workloads []DemoWorkload) error {
	for _, wl := range workloads {
		pod := wl.Pod
		fmt.Fprintf(w, "\n%s: %s %s -> pod %s/%s on node %s\n", wl.File, wl.Object.GetKind(), wl.Object.GetName(), pod.Namespace, pod.Name, pod.Spec.NodeName)
		claims, err := c.PodClaims(ctx, pod)
		if err != nil {
			return err
		}
		devs, err := c.DescribeDevices(ctx, claims)
		if err != nil {
			return err
		}
		for _, d := range devs {
			fmt.Fprintf(w, "  chip      %s\n", d)
		}
		if pod.Spec.NodeName != c.State.RealNode {
			fmt.Fprintf(w, "  container (kwok node: no container runs)\n")
			continue
		}
		view, err := c.ContainerView(ctx, pod)
		if err != nil {
			fmt.Fprintf(w, "  container %v\n", err)
			continue
		}
		for _, v := range view {
			fmt.Fprintf(w, "  container %s\n", v)
		}
	}
	return nil
}

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

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
	"github.com/accel-dra/accel-dra/test/scale"
)

// viewRuns is how often each command is timed; the median is reported.
const viewRuns = 5

// view is one command line timed against the scale cluster.
type view struct {
	name    string
	kubectl bool
	args    []string
}

type viewResult struct {
	view
	median, min time.Duration
	requests    int
	bytes       int
}

// waitingPod is a pod whose claim cannot be allocated anywhere: nine
// Ascend chips in one link group (a node has at most eight), so `why`
// runs the allocator over every node, its most expensive answer.
const waitingPod = "waits-for-nine"

// measureViews times the CLI's cluster views over the side's slices and
// bound pods, next to the plain list they must stay within 2× of
// (docs/benchmarks.md): the time to answer (median of viewRuns runs) and
// the API requests each run makes, counted from the client's own request
// log (-v=6, one "Response" line a request) in a separate run, so that
// logging is not in the timed runs.
func measureViews(ctx context.Context, c *framework.Cluster, client kubernetes.Interface, ns string) ([]viewResult, error) {
	if err := createWaitingPod(ctx, client, ns); err != nil {
		return nil, err
	}
	views := []view{
		{name: "kubectl get resourceslices -o json", kubectl: true, args: []string{"get", "resourceslices", "-o", "json"}},
		{name: "accel-dra chips", args: []string{"chips"}},
		{name: "accel-dra chips --summary", args: []string{"chips", "--summary"}},
		{name: "accel-dra why pod/" + waitingPod + " (waits)", args: []string{"why", "pod/" + waitingPod, "-n", ns}},
	}
	kubeconfig := c.Kubeconfig()
	var out []viewResult
	for _, v := range views {
		run := func(extra ...string) (framework.CLIResult, error) {
			args := append(slices.Clone(v.args), extra...)
			if v.kubectl {
				return c.RunKubectlPlugin(ctx, kubeconfig, args...)
			}
			return c.RunCLI(ctx, kubeconfig, args...)
		}
		r := viewResult{view: v}
		var times []time.Duration
		for range viewRuns {
			start := time.Now()
			res, err := run()
			took := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			// why exits 0 for an explanation; only a failure to answer
			// is an error here.
			if res.ExitCode != 0 {
				return nil, fmt.Errorf("%s: exit %d: %s", v.name, res.ExitCode, res.Stderr)
			}
			times = append(times, took)
			r.bytes = len(res.Stdout)
		}
		slices.Sort(times)
		r.median, r.min = times[len(times)/2], times[0]
		res, err := run("-v=6")
		if err != nil {
			return nil, fmt.Errorf("%s -v=6: %w", v.name, err)
		}
		r.requests = strings.Count(res.Stderr, `"Response"`)
		out = append(out, r)
	}
	return out, nil
}

// createWaitingPod creates the template and pod of waitingPod and waits
// until the scheduler has tried and given up on it.
func createWaitingPod(ctx context.Context, client kubernetes.Interface, ns string) error {
	tpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: waitingPod},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "npus", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "ascend.accel-dra.dev", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 9}}},
			Constraints: []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(names.AttrLinkGroup))}},
		}}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the waiting pod's claim template: %w", err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, scale.Pod(ns, waitingPod, waitingPod, nil), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the waiting pod: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, waitingPod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the scheduler to give up on pod %s/%s: %w", ns, waitingPod, err)
	}
	return nil
}

func printViews(rs []viewResult, nodes, slices int) {
	fmt.Println()
	fmt.Printf("| view over %d nodes, %d slices | median s | fastest s | × the list | API requests | output KiB |\n", nodes, slices)
	fmt.Println("|---|---|---|---|---|---|")
	base := rs[0].median
	for _, r := range rs {
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %d | %d |\n", r.name, r.median.Seconds(), r.min.Seconds(),
			float64(r.median)/float64(base), r.requests, r.bytes/1024)
	}
}

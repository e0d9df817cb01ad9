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

package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// runCLI runs the accel-dra CLI of the e2e build as the cluster's admin
// and returns what it printed (stdout, then stderr) and its exit status.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	res, err := cluster.RunCLI(t.Context(), cluster.Kubeconfig(), args...)
	require.NoError(t, err)
	out := res.Stdout + res.Stderr
	t.Logf("$ accel-dra %s\n%s", strings.Join(args, " "), out)
	return out, res.ExitCode
}

// pinnedPod is a pod with one claim per template, on node by its
// hostname label (the scheduler still decides, as for any nodeSelector).
func pinnedPod(ns, name, node string, templates ...string) *corev1.Pod {
	pod := realNodePod(ns, name, templates...)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return pod
}

// waitUnschedulable waits until the scheduler has given up on the pod
// for now (PodScheduled False, Unschedulable).
func waitUnschedulable(t *testing.T, ns, name string) {
	t.Helper()
	waitForPod(t, ns, name, "unschedulable", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
}

// requireSays checks that out has each line (spaces trimmed) in order.
func requireSays(t *testing.T, out string, want ...string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	i := 0
	for _, w := range want {
		for i < len(lines) && !strings.Contains(lines[i], w) {
			i++
		}
		require.Less(t, i, len(lines), "no line with %q (in this order) in:\n%s", w, out)
	}
}

var sameLinkGroupConstraint = resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(names.AttrLinkGroup))}

// TestWhyExplainsWaitingPods runs accel-dra why against the real cluster
// for pods the real scheduler could not place, or the real kubelet could
// not start, each with the reason it must name.
func TestWhyExplainsWaitingPods(t *testing.T) {
	real := cluster.RealNode()

	t.Run("five chips in one link group on a node whose group has four", func(t *testing.T) {
		ns := newNamespace(t)
		createTemplate(t, template(ns, "npus", exactly("npus", "ascend.accel-dra.dev", 5), sameLinkGroupConstraint))
		createPod(t, pinnedPod(ns, "five", real, "npus"))
		waitUnschedulable(t, ns, "five")
		out, code := runCLI(t, "why", "pod/five", "-n", ns)
		require.Equal(t, 0, code)
		requireSays(t, out,
			"pod "+ns+"/five: Pending, not scheduled (0/",
			"nodes the pod can go to: 1 of ",
			"(ResourceClaimTemplate "+ns+"/npus): not allocated",
			"request npus needs 5 of class ascend.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 4 of those are free and untainted",
			"constraint matchAttribute accel-dra.dev/linkGroup: the largest free group on one node has 4 ("+real+" ",
			"nearest node: "+real+" has 4 of 5 free in accel-dra.dev/linkGroup group ",
			"(lacks 1)",
			"the allocator cannot fit the claims on "+real+", the one node the pod can go to",
		)
	})

	t.Run("the chips of the node are tainted unhealthy", func(t *testing.T) {
		const node = "why-sick-0"
		_, err := cluster.AddAgentNode(t.Context(), framework.NodeInfo{Name: node, Profile: repoPath("test", "e2e", "testdata", "why-unhealthy-mlu270.yaml")}, "")
		require.NoError(t, err)
		t.Cleanup(func() {
			if err := cluster.RemoveAgentNode(context.Background(), node); err != nil {
				t.Errorf("removing node %s: %v", node, err)
			}
		})
		require.NoError(t, cluster.StartAgent(node))
		require.NoError(t, cluster.WaitForAgent(t.Context(), node), "agent log:\n%s", cluster.AgentLog(node))
		ns := newNamespace(t)
		createTemplate(t, template(ns, "mlu", exactly("mlu", "cambricon.accel-dra.dev", 1)))
		createPod(t, pinnedPod(ns, "sick", node, "mlu"))
		waitUnschedulable(t, ns, "sick")
		out, code := runCLI(t, "why", "pod/sick", "-n", ns)
		require.Equal(t, 0, code)
		requireSays(t, out,
			"nodes the pod can go to: 1 of ",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 2 devices on these nodes, 2 pass the request's selectors, 0 of those are free and untainted",
			"of those passing the selectors: 0 in use by other claims, 2 tainted (accel-dra.dev/unhealthy=SimulatedUnhealthy:NoSchedule)",
			"nearest node: "+node+" has 0 of 1 free (lacks 1; there 2 tainted)",
			"the allocator cannot fit the claims on "+node+", the one node the pod can go to",
			"no claim holds devices on these nodes, so freeing one would not help",
		)
	})

	t.Run("pinned to a node whose chips are all held, which names the holder", func(t *testing.T) {
		const node = "mlu270"
		ns := newNamespace(t)
		createTemplate(t, template(ns, "all", exactly("mlus", "cambricon.accel-dra.dev", 4)))
		createTemplate(t, template(ns, "one", exactly("mlu", "cambricon.accel-dra.dev", 1)))
		holder := waitForPodRunning(t, ns, createPod(t, pinnedPod(ns, "holder", node, "all")).Name)
		holderClaim := podClaims(t, holder)[0]
		createPod(t, pinnedPod(ns, "pinned", node, "one"))
		waitUnschedulable(t, ns, "pinned")
		out, code := runCLI(t, "why", "pod/pinned", "-n", ns)
		require.Equal(t, 0, code)
		requireSays(t, out,
			"nodes the pod can go to: 1 of ",
			"by the pod's nodeSelector or required node affinity",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 0 of those are free and untainted",
			"of those passing the selectors: 4 in use by other claims",
			"nearest node: "+node+" has 0 of 1 free (lacks 1; there 4 in use)",
			"the allocator cannot fit the claims on "+node+", the one node the pod can go to",
			"would fit on node "+node+" if claim "+ns+"/"+holderClaim.Name+" (pod "+ns+"/holder) went away",
		)
		// The holder's claim, asked for by name: its devices and node.
		out, code = runCLI(t, "why", "claim/"+holderClaim.Name, "-n", ns)
		require.Equal(t, 0, code)
		requireSays(t, out,
			"claim "+ns+"/"+holderClaim.Name+" of pod "+ns+"/holder: Running on node "+node,
			"allocated on node "+node,
			"request mlus: cambricon.accel-dra.dev/"+node+"/mlu-",
			"reserved for pod holder",
		)
	})

	t.Run("the claim template names a DeviceClass that does not exist", func(t *testing.T) {
		ns := newNamespace(t)
		createTemplate(t, template(ns, "npu", exactly("npu", "ascend910c.accel-dra.dev", 1)))
		createPod(t, pinnedPod(ns, "typo", real, "npu"))
		// The resourceclaim controller makes the claim whatever its class.
		waitForPod(t, ns, "typo", "given its claim", func(p *corev1.Pod) bool {
			return len(p.Status.ResourceClaimStatuses) == 1 && p.Status.ResourceClaimStatuses[0].ResourceClaimName != nil
		})
		out, code := runCLI(t, "why", "pod/typo", "-n", ns)
		require.Equal(t, 1, code)
		require.Equal(t, `accel-dra: pod `+ns+`/typo: ResourceClaimTemplate `+ns+`/npu: spec.devices.requests[0].exactly.deviceClassName: DeviceClass "ascend910c.accel-dra.dev" does not exist: fix the template (and recreate the pod) or install the class (kubectl get deviceclasses lists them)`+"\n", out)

		// Without -n the pod is found elsewhere and named so.
		out, code = runCLI(t, "why", "pod/typo")
		require.Equal(t, 1, code)
		require.Equal(t, "accel-dra: pod default/typo not found; there is a pod typo in namespace "+ns+": run with -n "+ns+"\n", out)
	})

	t.Run("a bad opaque config the webhook did not check fails prepare", func(t *testing.T) {
		ns := newNamespace(t)
		tmpl := template(ns, "mlu", exactly("mlu", "cambricon.accel-dra.dev", 1))
		tmpl.Spec.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
			Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "cambricon.accel-dra.dev",
				Parameters: runtime.RawExtension{Raw: []byte(`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","envs":{"A":"1"}}`)}},
		}}}
		createTemplate(t, tmpl)
		pod := createPod(t, pinnedPod(ns, "badconfig", real, "mlu"))
		err := wait.PollUntilContextTimeout(t.Context(), time.Second, podTimeout, true, func(ctx context.Context) (bool, error) {
			evs, err := cluster.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedPrepareDynamicResources" {
					return true, nil
				}
			}
			return false, nil
		})
		require.NoError(t, err, "the kubelet never reported the failed prepare")
		// The harness's agents are host processes; the pods that stand in
		// for the DaemonSet's carry the stand-in label instead of the
		// chart's selector labels.
		out, code := runCLI(t, "why", "pod/badconfig", "-n", ns, "--agent-selector", framework.StandInLabel)
		require.Equal(t, 0, code)
		requireSays(t, out,
			"pod "+ns+"/badconfig: Pending on node "+real+", container probe ContainerCreating",
			"allocated on node "+real,
			"request mlu: cambricon.accel-dra.dev/"+real+"/mlu-",
			"the kubelet on "+real+" cannot prepare the claims (FailedPrepareDynamicResources, ",
			`unknown field "envs"`,
			"node agent on "+real+": pod "+framework.AgentNamespace+"/agent-stand-in-"+real+"; its log says why: kubectl logs -n "+framework.AgentNamespace+" agent-stand-in-"+real,
		)
	})
}

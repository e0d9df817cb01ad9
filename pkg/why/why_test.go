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

package why_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/why"
)

// registry is the vendors the binaries serve, built as their main builds
// it.
var registry = all.Registry()

const (
	ascend    = "ascend.accel-dra.dev"
	cambricon = "cambricon.accel-dra.dev"
	linkGroup = "accel-dra.dev/linkGroup"
)

// node is a Node with the hostname label, and the slices its agent
// would publish for a bundled profile (unhealthy lists chip indices the
// profile reports unhealthy).
func node(t testing.TB, name, prof string, unhealthy ...int) (*v1.Node, []runtime.Object) {
	t.Helper()
	p, err := profile.Load(registry, prof)
	require.NoError(t, err)
	p.Chips[0].Unhealthy = unhealthy
	inv, err := profilenode.New(registry, name, p).Discover(context.Background())
	require.NoError(t, err)
	var objs []runtime.Object
	for _, s := range resourceslices.SlicesFor(registry, name, inv, resourceslices.Options{}) {
		require.Equal(t, name, ptr.Deref(s.Spec.NodeName, ""))
		objs = append(objs, s)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}, objs
}

// chartClasses are the chart's DeviceClasses.
func chartClasses(t testing.TB) []runtime.Object {
	t.Helper()
	in, err := simulate.Load([]string{"../../deployments/helm/accel-dra/deviceclasses"})
	require.NoError(t, err)
	var out []runtime.Object
	for _, c := range in.Classes {
		out = append(out, c)
	}
	require.NotEmpty(t, out)
	return out
}

// podWithClaim is a pod with one claim from template tmpl, created by the
// resourceclaim controller as claim (owned by the pod).
func podWithClaim(ns, name, tmpl string, spec resourceapi.ResourceClaimSpec) (*v1.Pod, *resourceapi.ResourceClaim) {
	claimName := name + "-" + tmpl + "-x1"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: tmpl, ResourceClaimTemplateName: ptr.To(tmpl)}},
			Containers:     []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: tmpl}}}}},
		},
		Status: v1.PodStatus{
			Phase:                 v1.PodPending,
			ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: tmpl, ResourceClaimName: ptr.To(claimName)}},
			Conditions:            []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available: 2 cannot allocate all claims."}},
		},
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claimName, UID: types.UID("uid-" + claimName),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: pod.UID, Controller: ptr.To(true)}}},
		Spec: spec,
	}
	return pod, claim
}

func request(name, class string, count int64, cel ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count, AllocationMode: resourceapi.DeviceAllocationModeExactCount}}
	for _, e := range cel {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return r
}

func spec(constraints []resourceapi.DeviceConstraint, reqs ...resourceapi.DeviceRequest) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs, Constraints: constraints}}
}

var sameLinkGroup = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(linkGroup))}}

// allocate marks claim allocated on node with devices of driver, reserved
// for pods, as the scheduler writes it.
func allocate(claim *resourceapi.ResourceClaim, nodeName, driver, request string, devices []string, pods ...string) {
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
	}}}}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: nodeName, Device: d})
	}
	claim.Status.Allocation = a
	for _, p := range pods {
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p, UID: types.UID("uid-" + p)})
	}
}

func TestWhyExplainsEachCaseWithItsReason(t *testing.T) {
	build := func(t *testing.T, nodes ...[2]string) []runtime.Object {
		objs := chartClasses(t)
		for _, n := range nodes {
			nd, slices := node(t, n[0], n[1])
			objs = append(append(objs, nd), slices...)
		}
		return objs
	}
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T) []runtime.Object
		target string
		ns     string
		all    bool
		// timeout is the allocator's (zero: the default).
		timeout time.Duration
		want    []string // lines (trimmed) or, with a trailing "…", line prefixes, in order
		err     string
	}{{
		name: "five chips in one link group: the rings hold four",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("default", "five", "npus", spec(sameLinkGroup, request("npus", ascend, 5, `device.attributes["accel-dra.dev"].model == "Ascend910A"`)))
			return append(build(t, [2]string{"train-0", "atlas-800-910a"}, [2]string{"infer-0", "mlu370-x8"}), pod, claim)
		},
		target: "pod/five",
		want: []string{
			"pod default/five: Pending, not scheduled (0/2 nodes are available: 2 cannot allocate all claims.)",
			"nodes the pod can go to: all 2",
			"claim default/five-npus-x1 (ResourceClaimTemplate default/npus): not allocated",
			"request npus needs 5 of class ascend.accel-dra.dev:",
			"class matches 8 devices on these nodes, 8 pass the request's selectors, 8 of those are free and untainted",
			"constraint matchAttribute accel-dra.dev/linkGroup: the largest free group on one node has 4 (train-0 hccs-0)",
			"nearest node: train-0 has 4 of 5 free in accel-dra.dev/linkGroup group hccs-0 (lacks 1)",
			"the allocator cannot fit the claims on any of the 2 nodes the pod can go to",
			"no claim holds devices on these nodes, so freeing one would not help",
		},
	}, {
		name: "the allocator runs out of its deadline",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("default", "five", "npus", spec(sameLinkGroup, request("npus", ascend, 5)))
			return append(build(t, [2]string{"train-0", "atlas-800-910a"}), pod, claim)
		},
		target:  "pod/five",
		timeout: time.Nanosecond,
		err:     "the allocator did not finish within 1ns (--allocator-timeout); its search over these claims and nodes is too large to explain here",
	}, {
		name: "the only chip of the node the pod must go to is tainted unhealthy",
		setup: func(t *testing.T) []runtime.Object {
			nd, slices := node(t, "sick-0", "mlu270", 0, 1, 2, 3)
			objs := append(append(build(t, [2]string{"ok-0", "mlu270"}), nd), slices...)
			pod, claim := podWithClaim("default", "sick", "mlu", spec(nil, request("mlu", cambricon, 1)))
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "sick-0"}
			return append(objs, pod, claim)
		},
		target: "pod/sick",
		want: []string{
			"pod default/sick: …",
			"nodes the pod can go to: 1 of 2; ruled out: 1 by the pod's nodeSelector or required node affinity (ok-0)",
			"claim default/sick-mlu-x1 (ResourceClaimTemplate default/mlu): not allocated",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 0 of those are free and untainted",
			"of those passing the selectors: 0 in use by other claims, 4 tainted (accel-dra.dev/unhealthy=SimulatedUnhealthy:NoSchedule)",
			"nearest node: sick-0 has 0 of 1 free (lacks 1; there 4 tainted)",
			"the allocator cannot fit the claims on sick-0, the one node the pod can go to",
			"no claim holds devices on these nodes, so freeing one would not help",
		},
	}, {
		name: "a warning taint informs, a missing device file blocks",
		setup: func(t *testing.T) []runtime.Object {
			nd, slices := node(t, "sick-0", "mlu270")
			for _, o := range slices {
				for i := range o.(*resourceapi.ResourceSlice).Spec.Devices {
					d := &o.(*resourceapi.ResourceSlice).Spec.Devices[i]
					d.Taints = []resourceapi.DeviceTaint{{Key: "accel-dra.dev/health", Value: "HealthWarning", Effect: resourceapi.DeviceTaintEffectNone}}
					if d.Name == "mlu-3" {
						d.Taints = append(d.Taints, resourceapi.DeviceTaint{Key: "accel-dra.dev/device-file-missing", Value: "DeviceFileMissing", Effect: resourceapi.DeviceTaintEffectNoSchedule})
					}
				}
			}
			objs := append(append(build(t, [2]string{"ok-0", "mlu270"}), nd), slices...)
			pod, claim := podWithClaim("default", "sick", "mlu", spec(nil, request("mlu", cambricon, 4)))
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "sick-0"}
			return append(objs, pod, claim)
		},
		target: "pod/sick",
		want: []string{
			"pod default/sick: …",
			"nodes the pod can go to: 1 of 2; ruled out: 1 by the pod's nodeSelector or required node affinity (ok-0)",
			"claim default/sick-mlu-x1 (ResourceClaimTemplate default/mlu): not allocated",
			"request mlu needs 4 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 3 of those are free and untainted",
			"of those passing the selectors: 0 in use by other claims, 1 tainted (accel-dra.dev/device-file-missing=DeviceFileMissing:NoSchedule)",
			"nearest node: sick-0 has 3 of 4 free (lacks 1; there 1 tainted)",
			"…",
		},
	}, {
		name: "pinned to a node whose chips are all held: it would fit if the holder went away",
		setup: func(t *testing.T) []runtime.Object {
			objs := build(t, [2]string{"m-0", "mlu270"}, [2]string{"m-1", "mlu270"})
			holderPod, holder := podWithClaim("team-a", "holder", "four", spec(nil, request("mlus", cambricon, 4)))
			holderPod.Spec.NodeName, holderPod.Status.Phase = "m-0", v1.PodRunning
			allocate(holder, "m-0", cambricon, "mlus", []string{"mlu-0", "mlu-1", "mlu-2", "mlu-3"}, "holder")
			// A smaller claim on the other node is not a candidate: the
			// pod cannot go there.
			_, other := podWithClaim("team-a", "other", "one", spec(nil, request("mlu", cambricon, 1)))
			allocate(other, "m-1", cambricon, "mlu", []string{"mlu-0"}, "other")
			pod, claim := podWithClaim("default", "pinned", "mlu", spec(nil, request("mlu", cambricon, 1)))
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "m-0"}
			return append(objs, holderPod, holder, other, pod, claim)
		},
		target: "pod/pinned",
		want: []string{
			"pod default/pinned: …",
			"nodes the pod can go to: 1 of 2; ruled out: 1 by the pod's nodeSelector or required node affinity (m-1)",
			"claim default/pinned-mlu-x1 (ResourceClaimTemplate default/mlu): not allocated",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 0 of those are free and untainted",
			"of those passing the selectors: 4 in use by other claims",
			"nearest node: m-0 has 0 of 1 free (lacks 1; there 4 in use)",
			"the allocator cannot fit the claims on m-0, the one node the pod can go to",
			"would fit on node m-0 if claim team-a/holder-four-x1 (pod team-a/holder) went away",
		},
	}, {
		name: "a node taint the pod does not tolerate rules the node out",
		setup: func(t *testing.T) []runtime.Object {
			objs := build(t, [2]string{"m-0", "mlu270"})
			for _, o := range objs {
				if n, ok := o.(*v1.Node); ok {
					n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infer", Effect: v1.TaintEffectNoSchedule}}
				}
			}
			pod, claim := podWithClaim("default", "p", "mlu", spec(nil, request("mlu", cambricon, 1)))
			return append(objs, pod, claim)
		},
		target: "pod/p",
		want: []string{
			"pod default/p: …",
			"nodes the pod can go to: 0 of 1; ruled out: 1 by taint dedicated=infer:NoSchedule, not tolerated (m-0)",
			"claim default/p-mlu-x1 (ResourceClaimTemplate default/mlu): not allocated",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 0 devices on these nodes, 0 pass the request's selectors, 0 of those are free and untainted",
			"no node is left for the allocator to try",
		},
	}, {
		name: "a claim that fits now",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("default", "p", "mlu", spec(nil, request("mlu", cambricon, 2)))
			return append(build(t, [2]string{"m-0", "mlu270"}), pod, claim)
		},
		target: "pod/p",
		want: []string{
			"pod default/p: …",
			"nodes the pod can go to: all 1",
			"claim default/p-mlu-x1 (ResourceClaimTemplate default/mlu): not allocated",
			"request mlu needs 2 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 4 of those are free and untainted",
			"nearest node: m-0 has 4 free, enough for this request alone",
			"the allocator fits the claims on node m-0 now: …",
		},
	}, {
		name: "a claim no pod uses yet, which fits",
		setup: func(t *testing.T) []runtime.Object {
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "spare"}, Spec: spec(nil, request("mlu", cambricon, 1))}
			return append(build(t, [2]string{"m-0", "mlu270"}), claim)
		},
		target: "claim/spare",
		want: []string{
			"no pod uses the claim: all 1 nodes are candidates",
			"claim default/spare: not allocated",
			"request mlu needs 1 of class cambricon.accel-dra.dev:",
			"class matches 4 devices on these nodes, 4 pass the request's selectors, 4 of those are free and untainted",
			"nearest node: m-0 has 4 free, enough for this request alone",
			"the allocator fits the claim on node m-0 now: the scheduler allocates it when a pod that uses it is scheduled",
		},
	}, {
		name: "an allocated claim: its devices and node",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("team-a", "holder", "two", spec(nil, request("mlus", cambricon, 2)))
			pod.Spec.NodeName, pod.Status.Phase = "m-0", v1.PodRunning
			allocate(claim, "m-0", cambricon, "mlus", []string{"mlu-0", "mlu-1"}, "holder")
			return append(build(t, [2]string{"m-0", "mlu270"}), pod, claim)
		},
		target: "claim/holder-two-x1",
		ns:     "team-a",
		want: []string{
			"claim team-a/holder-two-x1 of pod team-a/holder: Running on node m-0",
			"claim team-a/holder-two-x1: allocated on node m-0",
			"request mlus: cambricon.accel-dra.dev/m-0/mlu-0 (MLU270-S4, pcie-0)",
			"request mlus: cambricon.accel-dra.dev/m-0/mlu-1 (MLU270-S4, pcie-1)",
			"reserved for pod holder",
			"the kubelet prepared the claims (the pod is Running)",
		},
	}, {
		name: "allocated but stuck in ContainerCreating: the prepare error and the agent",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("default", "stuck", "mlu", spec(nil, request("mlu", cambricon, 1)))
			pod.Spec.NodeName = "m-0"
			pod.Status.Conditions = nil
			pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
			allocate(claim, "m-0", cambricon, "mlu", []string{"mlu-0"}, "stuck")
			ev := func(name, reason, msg string, count int32, at int64) *v1.Event {
				return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "stuck", UID: pod.UID},
					Reason:         reason, Message: msg, Count: count, Type: v1.EventTypeWarning, LastTimestamp: metav1.Unix(at, 0)}
			}
			agent := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "accel-dra", Name: "accel-dra-kubeletplugin-7xq2p",
				Labels: map[string]string{"app.kubernetes.io/name": "accel-dra", "app.kubernetes.io/component": "kubeletplugin", "app.kubernetes.io/instance": "accel-dra"}},
				Spec: v1.PodSpec{NodeName: "m-0"}}
			otherAgent := agent.DeepCopy()
			otherAgent.Name, otherAgent.Spec.NodeName = "accel-dra-kubeletplugin-zzzzz", "m-1"
			return append(build(t, [2]string{"m-0", "mlu270"}), pod, claim, agent, otherAgent,
				ev("e1", "FailedPrepareDynamicResources", "Failed to prepare dynamic resources: old", 1, 100),
				ev("e2", "FailedPrepareDynamicResources", `Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources failed for ResourceClaim stuck-mlu-x1: claim default/stuck-mlu-x1: spec.devices.config[0].opaque.parameters: unknown field "envs"`+"\x1b]0;pwned\a\u202e", 3, 200),
				ev("e3", "Scheduled", "Successfully assigned", 1, 50))
		},
		target: "pod/stuck",
		want: []string{
			"pod default/stuck: Pending on node m-0, container c ContainerCreating",
			"claim default/stuck-mlu-x1 (ResourceClaimTemplate default/mlu): allocated on node m-0",
			"request mlu: cambricon.accel-dra.dev/m-0/mlu-0 (MLU270-S4, pcie-0)",
			"reserved for pod stuck",
			// An event's terminal escapes and bidi overrides are printed
			// escaped, not sent to the terminal.
			`the kubelet on m-0 cannot prepare the claims (FailedPrepareDynamicResources, 3 times): Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources failed for ResourceClaim stuck-mlu-x1: claim default/stuck-mlu-x1: spec.devices.config[0].opaque.parameters: unknown field "envs"\x1b]0;pwned\a\u202e`,
			"node agent on m-0: pod accel-dra/accel-dra-kubeletplugin-7xq2p; its log says why: kubectl logs -n accel-dra accel-dra-kubeletplugin-7xq2p",
		},
	}, {
		name: "the claim template names a DeviceClass that does not exist",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("default", "typo", "npu", spec(nil, request("npu", "ascend910c.accel-dra.dev", 1)))
			return append(build(t, [2]string{"m-0", "mlu270"}), pod, claim)
		},
		target: "pod/typo",
		err:    `pod default/typo: ResourceClaimTemplate default/npu: spec.devices.requests[0].exactly.deviceClassName: DeviceClass "ascend910c.accel-dra.dev" does not exist: fix the template (and recreate the pod) or install the class (kubectl get deviceclasses lists them)`,
	}, {
		name: "the claim template itself does not exist",
		setup: func(t *testing.T) []runtime.Object {
			pod, _ := podWithClaim("default", "notmpl", "gone", spec(nil))
			pod.Status.ResourceClaimStatuses = nil
			return append(build(t, [2]string{"m-0", "mlu270"}), pod)
		},
		target: "pod/notmpl",
		err:    "pod default/notmpl: spec.resourceClaims[0] (gone) names ResourceClaimTemplate default/gone, which does not exist: create it or fix resourceClaimTemplateName",
	}, {
		name: "a claim of another driver",
		setup: func(t *testing.T) []runtime.Object {
			objs := build(t, [2]string{"m-0", "mlu270"})
			gpu := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "m-0-gpu"}, Spec: resourceapi.ResourceSliceSpec{
				Driver: "gpu.example.com", NodeName: ptr.To("m-0"), Pool: resourceapi.ResourcePool{Name: "m-0", ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "gpu-0"}}}}
			class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}}
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gpu"}, Spec: spec(nil, request("gpu", "gpu.example.com", 1))}
			return append(objs, gpu, class, claim)
		},
		target: "claim/gpu",
		err:    "claim default/gpu asks for devices of gpu.example.com, not of accel-dra (ascend.accel-dra.dev, cambricon.accel-dra.dev): that driver's tools explain it",
	}, {
		name:   "an unknown pod",
		setup:  func(t *testing.T) []runtime.Object { return build(t) },
		target: "pod/nope",
		err:    "pod default/nope not found, nor in another namespace: check the name (kubectl get pods -A)",
	}, {
		name: "a pod in another namespace without -n",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("team-a", "elsewhere", "mlu", spec(nil, request("mlu", cambricon, 1)))
			return append(build(t), pod, claim)
		},
		target: "pod/elsewhere",
		err:    "pod default/elsewhere not found; there is a pod elsewhere in namespace team-a: run with -n team-a",
	}, {
		name: "-A finds it",
		setup: func(t *testing.T) []runtime.Object {
			pod, claim := podWithClaim("team-a", "elsewhere", "mlu", spec(nil, request("mlu", cambricon, 1)))
			return append(build(t, [2]string{"m-0", "mlu270"}), pod, claim)
		},
		target: "pod/elsewhere",
		all:    true,
		want:   []string{"pod team-a/elsewhere: …", "nodes the pod can go to: all 1", "claim team-a/elsewhere-mlu-x1 (ResourceClaimTemplate team-a/mlu): not allocated", "…"},
	}, {
		name:   "an unknown claim",
		setup:  func(t *testing.T) []runtime.Object { return build(t) },
		target: "claim/nope",
		all:    true,
		err:    "claim nope not found in any namespace: check the name (kubectl get resourceclaims -A)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.ns
			if ns == "" {
				ns = "default"
			}
			conn, client := liveclustertest.Connection(ns, tc.setup(t)...)
			target, err := why.ParseTarget(tc.target)
			require.NoError(t, err)
			lines, err := why.Explain(context.Background(), conn, target, why.Options{Registry: registry, Namespace: ns, AllNamespaces: tc.all, AllocatorTimeout: tc.timeout})
			t.Logf("output:\n%s", strings.Join(lines, "\n"))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
				requireLines(t, tc.want, lines)
			}
			for _, a := range client.Actions() {
				require.Contains(t, []string{"get", "list"}, a.GetVerb(), "why only reads: %v", a)
			}
		})
	}
}

// requireLines compares lines (indentation ignored) with want: a want
// line ending in "…" matches a line with that prefix, a lone "…" any
// rest.
func requireLines(t *testing.T, want, got []string) {
	t.Helper()
	text := strings.Join(got, "\n")
	for i, w := range want {
		if w == "…" {
			return
		}
		require.Greater(t, len(got), i, "line %d missing: %q\n%s", i, w, text)
		g := strings.TrimSpace(got[i])
		if p, ok := strings.CutSuffix(w, "…"); ok {
			require.True(t, strings.HasPrefix(g, p), "line %d: want prefix %q, got %q\n%s", i, p, g, text)
			continue
		}
		require.Equal(t, w, g, "line %d\n%s", i, text)
	}
	require.Len(t, got, len(want), "more lines than expected:\n%s", text)
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		arg, kind, name, err string
	}{
		{arg: "pod/a", kind: "pod", name: "a"},
		{arg: "po/a", kind: "pod", name: "a"},
		{arg: "resourceclaims/c", kind: "claim", name: "c"},
		{arg: "claim/c", kind: "claim", name: "c"},
		{arg: "a", err: `"a": want pod/NAME or claim/NAME`},
		{arg: "node/n", err: `"node/n": kind "node" is not pod or claim`},
		{arg: "pod/", err: `"pod/": want pod/NAME or claim/NAME`},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := why.ParseTarget(tc.arg)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, why.Target{Kind: tc.kind, Name: tc.name}, got)
		})
	}
}

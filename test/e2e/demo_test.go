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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// demoChecks says, per workload (Job, Deployment or Pod name), what its
// pod's claims must have been given.
var demoChecks = map[string]func(t *testing.T, devs []device){
	"mindspore-train": func(t *testing.T, devs []device) {
		require.Len(t, devs, 8)
		assert.Equal(t, "a2-0", nodeOf(t, devs), "only the Atlas 800T A2 has 8 chips in one HCCS group")
		assertAll(t, devs, ascend.Driver, "Ascend910")
		assertOneLinkGroup(t, devs)
	},
	"ascend-plus-mlu": func(t *testing.T, devs []device) {
		require.Len(t, devs, 2)
		assert.Equal(t, cluster.RealNode(), nodeOf(t, devs), "only the mixed node has both vendors")
		byRequest := map[string]device{}
		for _, d := range devs {
			byRequest[d.Request] = d
		}
		assert.Equal(t, ascend.Driver, byRequest["npu"].Driver)
		assert.Equal(t, cambricon.Driver, byRequest["mlu"].Driver)
	},
	"b3-else-mlu370": func(t *testing.T, devs []device) {
		require.Len(t, devs, 1)
		assert.Equal(t, "accel/ascend910b", devs[0].Request, "the first choice is free on the mixed node")
		assert.Equal(t, "Ascend910B3", devs[0].Model)
		assert.Equal(t, cluster.RealNode(), nodeOf(t, devs), "a2-0's 910B3s are all taken by mindspore-train")
	},
	"pytorch-infer-mlu370": func(t *testing.T, devs []device) {
		require.Len(t, devs, 1)
		assertAll(t, devs, cambricon.Driver, "MLU370-X8")
	},
	"ring-of-4": func(t *testing.T, devs []device) {
		require.Len(t, devs, 4)
		assertAll(t, devs, ascend.Driver, "Ascend910A")
		assertOneLinkGroup(t, devs)
		assert.True(t, strings.HasPrefix(nodeOf(t, devs), "train-"), "910A chips are on the train nodes, got %v", devs)
	},
	"big-memory": func(t *testing.T, devs []device) {
		require.Len(t, devs, 1)
		assert.Contains(t, []string{"huawei", "cambricon"}, devs[0].Vendor)
		assert.GreaterOrEqual(t, devs[0].Memory.Cmp(resource.MustParse("32Gi")), 0, "memory %s < 32Gi", devs[0].Memory.String())
	},
	"pipeline-train": func(t *testing.T, devs []device) {
		require.Len(t, devs, 2)
		assertAll(t, devs, ascend.Driver, "Ascend910")
		assertOneLinkGroup(t, devs)
	},
	"pipeline-serve": func(t *testing.T, devs []device) {
		require.Len(t, devs, 1)
		assertAll(t, devs, cambricon.Driver, "MLU370")
	},
	"legacy-ascend910": func(t *testing.T, devs []device) {
		require.Len(t, devs, 1, "huawei.com/Ascend910: 1 is one device of the extended-resource class")
		assertAll(t, devs, ascend.Driver, "Ascend910")
	},
}

func assertAll(t *testing.T, devs []device, driver, modelPrefix string) {
	t.Helper()
	for _, d := range devs {
		assert.Equal(t, driver, d.Driver, "device %s", d)
		assert.True(t, strings.HasPrefix(d.Model, modelPrefix), "device %s is not a %s", d, modelPrefix)
	}
}

func assertOneLinkGroup(t *testing.T, devs []device) {
	t.Helper()
	for _, d := range devs {
		assert.NotEmpty(t, d.LinkGroup)
		assert.Equal(t, devs[0].LinkGroup, d.LinkGroup, "matchAttribute linkGroup broken: %v", devs)
	}
}

// TestEveryDemoManifestIsAllocatedByTheRealScheduler applies the demo
// claim templates and manifests through the API, as a user would, and
// checks what the real scheduler gave each pod: node, models, link-group
// constraints, the firstAvailable choice, the extended-resource claim.
// Pods that land on the real node run, and their containers see the
// allocated chips.
func TestEveryDemoManifestIsAllocatedByTheRealScheduler(t *testing.T) {
	applied, workloads, err := cluster.ApplyDemo(t.Context(), "kubectl")
	t.Cleanup(func() { cleanupDemo(t, applied) })
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, wl := range workloads {
		name := wl.Object.GetName()
		seen[name] = true
		check, ok := demoChecks[name]
		require.True(t, ok, "%s: no expectation for %s %s; add one to demoChecks", wl.File, wl.Object.GetKind(), name)
		require.NotEmpty(t, wl.Claims, "%s: pod %s has no claims", wl.File, wl.Pod.Name)
		var devs []device
		for _, c := range wl.Claims {
			devs = append(devs, allocated(t, c)...)
		}
		t.Logf("%s: %s %s -> pod %s on %s: %v", wl.File, wl.Object.GetKind(), name, wl.Pod.Name, wl.Pod.Spec.NodeName, devs)
		require.Equal(t, wl.Pod.Spec.NodeName, nodeOf(t, devs), "pod and devices on one node")
		t.Run(name, func(t *testing.T) {
			check(t, devs)
			if wl.Pod.Spec.NodeName == cluster.RealNode() {
				pod := waitForPodRunning(t, wl.Pod.Namespace, wl.Pod.Name)
				assertDemoContainerSees(t, pod, devs)
			}
		})
	}
	for name := range demoChecks {
		assert.True(t, seen[name], "the demo has no workload %s any more: update demoChecks", name)
	}
}

// assertDemoContainerSees checks the output of the demo manifests'
// command (env | grep VISIBLE_DEVICES|DRA_; ls -l /dev) on the real node.
func assertDemoContainerSees(t *testing.T, pod *corev1.Pod, devs []device) {
	t.Helper()
	logs := podLogsContaining(t, pod, "urandom")
	env, dev := parseDemoOutput(logs)
	want := expectedDevNodes(t, devs)
	var extra []string
	for _, d := range dev {
		if !contains(standardDev, d) {
			extra = append(extra, d)
		}
	}
	assert.ElementsMatch(t, want, extra, "pod %s: /dev beyond the standard entries:\n%s", pod.Name, logs)
	for driver, key := range visibleEnv {
		want := strings.Join(indicesOf(devs, driver), ",")
		got, ok := env[key]
		if want == "" {
			assert.False(t, ok, "pod %s has %s=%s without a %s device", pod.Name, key, got, driver)
			continue
		}
		assert.ElementsMatch(t, strings.Split(want, ","), strings.Split(got, ","), "pod %s: %s", pod.Name, key)
	}
}

// visibleEnv is the visible-devices variable of each driver.
var visibleEnv = map[string]string{ascend.Driver: "ASCEND_VISIBLE_DEVICES", cambricon.Driver: "CAMBRICON_VISIBLE_DEVICES"}

// parseDemoOutput splits `env ...; ls -l /dev` output into variables and
// /dev entry names.
func parseDemoOutput(logs string) (map[string]string, []string) {
	env := map[string]string{}
	var dev []string
	for _, line := range strings.Split(logs, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(line, "total "):
		case len(f) >= 9 && strings.ContainsAny(line[:1], "cdlsp-b"):
			name := f[len(f)-1]
			if i := indexOf(f, "->"); i > 0 {
				name = f[i-1]
			}
			dev = append(dev, name)
		case strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
	}
	return env, dev
}

func indexOf(s []string, v string) int {
	for i, e := range s {
		if e == v {
			return i
		}
	}
	return -1
}

func contains(s []string, v string) bool { return indexOf(s, v) >= 0 }

// podLogsContaining waits until the pod's log contains substr.
func podLogsContaining(t *testing.T, pod *corev1.Pod, substr string) string {
	t.Helper()
	var logs string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		data, err := cluster.Admin.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		logs = string(data)
		return strings.Contains(logs, substr), nil
	})
	require.NoError(t, err, "pod %s/%s never printed %q; got:\n%s", pod.Namespace, pod.Name, substr, logs)
	return logs
}

// cleanupDemo deletes the demo objects and waits until their pods and
// claims are gone, so later tests find every chip free.
func cleanupDemo(t *testing.T, objs []*unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cluster.Delete(ctx, objs...); err != nil {
		t.Errorf("deleting the demo: %v", err)
	}
	// The demo containers' shell ignores SIGTERM: do not wait 30s each.
	_ = cluster.Admin.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}, metav1.ListOptions{})
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cluster.Admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		claims, err := cluster.Admin.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("demo pods or claims still there: %v", err)
	}
}

// TestFirstAvailableFallsBackToAnMLU370WhenEvery910B3IsTaken fills every
// Ascend 910B3 of the cluster (a2-0 and the mixed node) with pods, then
// applies demo/manifests/05: its claim must get the second choice.
func TestFirstAvailableFallsBackToAnMLU370WhenEvery910B3IsTaken(t *testing.T) {
	ns := newNamespace(t)
	all := resourceapi.DeviceRequest{Name: "npus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "ascend.accel-dra.dev", AllocationMode: resourceapi.DeviceAllocationModeAll,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["accel-dra.dev"].model == "Ascend910B3"`}}},
	}}
	createTemplate(t, template(ns, "every-910b3", all))
	for _, node := range []string{"a2-0", cluster.RealNode()} {
		pod := realNodePod(ns, "filler-"+node, "every-910b3")
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		createPod(t, pod)
		pod = waitForPodScheduled(t, ns, pod.Name)
		devs := allocated(t, podClaims(t, pod)[0])
		assertAll(t, devs, ascend.Driver, "Ascend910B3")
		t.Logf("filler on %s holds %d 910B3s", node, len(devs))
	}

	objs, err := framework.ReadObjects(repoPath("demo", "manifests", "05-first-available.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	out, err := cluster.Apply(t.Context(), "kubectl", objs...)
	require.NoError(t, err)
	var job *unstructured.Unstructured
	for _, o := range out {
		if o.GetKind() == "Job" {
			job = o
		}
	}
	require.NotNil(t, job)
	pod, err := cluster.WorkloadPod(t.Context(), job)
	require.NoError(t, err)
	devs := allocated(t, podClaims(t, pod)[0])
	require.Len(t, devs, 1)
	assert.Equal(t, "accel/mlu370", devs[0].Request, "no 910B3 is free: the second choice")
	assert.Equal(t, "MLU370-X8", devs[0].Model)
	assert.Equal(t, cambricon.Driver, devs[0].Driver)
}

// TestEveryCookbookRecipeIsAllocatedByTheRealScheduler applies each file
// of demo/cookbook in a namespace of its own and gives every claim
// template (and claim) in it to a pod: the real scheduler must find
// devices for each on one node, and the pod must start there (on the
// real node in a real container).
func TestEveryCookbookRecipeIsAllocatedByTheRealScheduler(t *testing.T) {
	files, err := filepath.Glob(repoPath("demo", "cookbook", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ns := newNamespace(t)
			objs, err := framework.ReadObjects(file)
			require.NoError(t, err)
			for _, o := range objs {
				o.SetNamespace(ns)
			}
			out, err := cluster.Apply(t.Context(), "kubectl", objs...)
			require.NoError(t, err)
			for _, o := range out {
				var pod *corev1.Pod
				switch o.GetKind() {
				case "ResourceClaimTemplate":
					pod = realNodePod(ns, "uses-"+o.GetName(), o.GetName())
				case "ResourceClaim":
					pod = realNodePod(ns, "uses-"+o.GetName())
					pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "claim", ResourceClaimName: ptr.To(o.GetName())}}
					pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "claim"}}
				default:
					continue
				}
				pod.Spec.NodeSelector = nil
				createPod(t, pod)
				running := waitForPodRunning(t, ns, pod.Name)
				claims := podClaims(t, running)
				require.Len(t, claims, 1)
				devs := allocated(t, claims[0])
				require.NotEmpty(t, devs)
				require.Equal(t, running.Spec.NodeName, nodeOf(t, devs))
				t.Logf("%s %s -> %s: %v", o.GetKind(), o.GetName(), running.Spec.NodeName, devs)
			}
		})
	}
}

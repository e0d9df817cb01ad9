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
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

const (
	// podTimeout bounds scheduling, starting and deleting one pod.
	podTimeout = 2 * time.Minute
	// endMarker ends the output of the probe script.
	endMarker = "== end"
)

// repoPath is a path inside the repository.
func repoPath(parts ...string) string {
	return filepath.Join(append([]string{cluster.Options().RepoRoot}, parts...)...)
}

// newNamespace creates a namespace for one test and deletes it, waiting
// until its pods are gone and their claims released, when the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := "e2e-" + rand.String(6)
	_, err := cluster.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// Pods first with a short grace period, then the namespace.
		_ = cluster.Admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}, metav1.ListOptions{})
		err := cluster.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
			return
		}
		err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := cluster.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s still there after 3 minutes: %v", ns, err)
		}
	})
	return ns
}

// template is a ResourceClaimTemplate with one request.
func template(ns, name string, req resourceapi.DeviceRequest, constraints ...resourceapi.DeviceConstraint) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{req}, Constraints: constraints,
		}}},
	}
}

// exactly is a request of count devices of a class with CEL selectors.
func exactly(name, class string, count int64, cel ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count, AllocationMode: resourceapi.DeviceAllocationModeExactCount}}
	for _, e := range cel {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return r
}

func createTemplate(t *testing.T, tmpl *resourceapi.ResourceClaimTemplate) {
	t.Helper()
	_, err := cluster.Admin.ResourceV1().ResourceClaimTemplates(tmpl.Namespace).Create(t.Context(), tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
}

// probeScript prints what a container sees of its chips (device nodes,
// variables, mounts, whether driver files are writable, the device
// metadata files), then sleeps.
const probeScript = `echo "== dev"; ls -1 /dev
echo "== env"; env | sort
echo "== mounts"; cat /proc/mounts
echo "== write"
for f in /usr/local/Ascend/driver/version.info /etc/ascend_install.info /usr/bin/cnmon; do
  if [ -e "$f" ]; then if (echo >> "$f") 2>/dev/null; then echo "$f writable"; else echo "$f read-only"; fi; fi
done
echo "== metadata"
find /var/run/kubernetes.io/dra-device-attributes -name '*-metadata.json' 2>/dev/null | sort | while read -r f; do echo "--- $f"; cat "$f"; done
echo "` + endMarker + `"
exec sleep 3600`

// realNodePod is a pod pinned to the real node that runs probeScript with
// one pod claim per template (claim name = template name).
func realNodePod(ns, name string, templates ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": cluster.RealNode()},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "probe", Image: framework.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", probeScript},
			}},
		},
	}
	for _, tmpl := range templates {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: tmpl, ResourceClaimTemplateName: ptr.To(tmpl)})
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: tmpl})
	}
	return pod
}

func createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := cluster.Admin.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// waitForPod waits until cond holds for the pod and returns it.
func waitForPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cluster.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return cond(p), nil
	})
	require.NoError(t, err, "pod %s/%s never %s; last status: %s", ns, name, what, podStatus(pod))
	return pod
}

func podStatus(p *corev1.Pod) string {
	if p == nil {
		return "(no pod)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s node=%q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			fmt.Fprintf(&b, " container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	return b.String()
}

func waitForPodRunning(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return waitForPod(t, ns, name, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

func waitForPodScheduled(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return waitForPod(t, ns, name, "scheduled", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
}

// deletePod deletes a pod with a 1s grace period (the demo containers'
// shell ignores SIGTERM) and waits until the kubelet (or kwok) has
// finished it and the API object is gone.
func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	err := cluster.Admin.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "pod %s/%s was not deleted", ns, name)
}

// podLogs waits for the probe script's output through the kubelet.
func podLogs(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	var logs string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		data, err := cluster.Admin.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		logs = string(data)
		return strings.Contains(logs, endMarker), nil
	})
	require.NoError(t, err, "no complete output from %s/%s; got:\n%s", pod.Namespace, pod.Name, logs)
	return logs
}

// section returns the lines of one "== name" section of the probe output.
func section(logs, name string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(logs, "\n") {
		if strings.HasPrefix(line, "== ") {
			in = line == "== "+name
			continue
		}
		if in && line != "" {
			out = append(out, line)
		}
	}
	return out
}

// podClaims returns the claims of a pod (see framework.PodClaims).
func podClaims(t *testing.T, pod *corev1.Pod) []*resourceapi.ResourceClaim {
	t.Helper()
	claims, err := cluster.PodClaims(t.Context(), pod)
	require.NoError(t, err)
	return claims
}

// device is one allocated device with the attributes of its slice.
type device struct {
	Request, Driver, Pool, Name string
	Vendor, Model, LinkGroup    string
	Index                       int64
	Memory                      resource.Quantity
}

func (d device) String() string {
	return fmt.Sprintf("%s/%s/%s (%s %s, %s)", d.Driver, d.Pool, d.Name, d.Model, d.LinkGroup, d.Request)
}

// allocated returns the devices of an allocated claim with the attributes
// their ResourceSlices publish.
func allocated(t *testing.T, claim *resourceapi.ResourceClaim) []device {
	t.Helper()
	require.NotNil(t, claim.Status.Allocation, "claim %s/%s is not allocated", claim.Namespace, claim.Name)
	sl, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	byKey := map[string]resourceapi.Device{}
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			byKey[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = d
		}
	}
	var out []device
	for _, r := range claim.Status.Allocation.Devices.Results {
		d, ok := byKey[r.Driver+"/"+r.Pool+"/"+r.Device]
		require.True(t, ok, "claim %s/%s got %s/%s/%s, which no ResourceSlice publishes", claim.Namespace, claim.Name, r.Driver, r.Pool, r.Device)
		out = append(out, device{
			Request: r.Request, Driver: r.Driver, Pool: r.Pool, Name: r.Device,
			Vendor:    ptr.Deref(d.Attributes[names.AttrVendor].StringValue, ""),
			Model:     ptr.Deref(d.Attributes[names.AttrModel].StringValue, ""),
			LinkGroup: ptr.Deref(d.Attributes[names.AttrLinkGroup].StringValue, ""),
			Index:     ptr.Deref(d.Attributes[names.AttrIndex].IntValue, -1),
			Memory:    d.Capacity[names.CapMemory].Value,
		})
	}
	return out
}

// nodeOf is the one node (pool) all devices are on.
func nodeOf(t *testing.T, devs []device) string {
	t.Helper()
	require.NotEmpty(t, devs)
	for _, d := range devs {
		require.Equal(t, devs[0].Pool, d.Pool, "devices of one claim on different nodes: %v", devs)
	}
	return devs[0].Pool
}

// realInventory is the real node's simulated inventory, as its agent
// discovered it.
func realInventory(t *testing.T) inventory.Inventory {
	t.Helper()
	p, err := profile.Load(framework.Registry, framework.RealNodeProfile)
	require.NoError(t, err)
	inv, err := profilenode.New(framework.Registry, cluster.RealNode(), p).Discover(t.Context())
	require.NoError(t, err)
	return inv
}

// standardDev is what runc puts in every container's /dev.
var standardDev = []string{"core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "termination-log", "tty", "urandom", "zero", "console"}

// expectedDevNodes is what /dev holds beyond the standard entries for the
// given devices of the real node: each chip's own nodes and the shared
// nodes of each vendor used.
func expectedDevNodes(t *testing.T, devs []device) []string {
	t.Helper()
	inv := realInventory(t)
	chips := map[string]inventory.Chip{}
	for _, c := range inv.Chips {
		chips[framework.Registry.DriverFor(c.Vendor)+"/"+framework.Registry.ChipDeviceName(c)] = c
	}
	set := map[string]bool{}
	for _, d := range devs {
		c, ok := chips[d.Driver+"/"+d.Name]
		require.True(t, ok, "device %s is not in the real node's inventory", d)
		for _, n := range c.DeviceNodes {
			set[strings.TrimPrefix(n, "/dev/")] = true
		}
		for _, n := range inv.SharedDeviceNodes[c.Vendor] {
			set[strings.TrimPrefix(n, "/dev/")] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// extraDev is what /dev holds beyond the standard entries.
func extraDev(logs string) []string {
	var out []string
	for _, e := range section(logs, "dev") {
		if !slices.Contains(standardDev, e) {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// envOf returns the value of a variable in the probe output.
func envOf(logs, name string) (string, bool) {
	for _, line := range section(logs, "env") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// indicesOf is the sorted index list of the devices of one driver.
func indicesOf(devs []device, driver string) []string {
	var idx []int
	for _, d := range devs {
		if d.Driver == driver {
			idx = append(idx, int(d.Index))
		}
	}
	sort.Ints(idx)
	out := make([]string, len(idx))
	for i, v := range idx {
		out[i] = strconv.Itoa(v)
	}
	return out
}

// mountOptions maps each mount point in the probe output to its options.
func mountOptions(logs string) map[string][]string {
	out := map[string][]string{}
	for _, line := range section(logs, "mounts") {
		f := strings.Fields(line)
		if len(f) >= 4 {
			out[f[1]] = strings.Split(f[3], ",")
		}
	}
	return out
}

// cdiSpecs lists the real node's CDI spec files of a claim.
func cdiSpecs(t *testing.T, claim *resourceapi.ResourceClaim) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cluster.CDIDir(), "*"+string(claim.UID)+"*"))
	require.NoError(t, err)
	return files
}

// waitForCDISpecsGone waits until the claim's CDI specs are removed.
func waitForCDISpecsGone(t *testing.T, claim *resourceapi.ResourceClaim) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(cdiSpecs(t, claim)) == 0, nil
	})
	require.NoError(t, err, "CDI specs of claim %s/%s (%s) still there: %v", claim.Namespace, claim.Name, claim.UID, cdiSpecs(t, claim))
}

// waitForClaimGone waits until a generated claim is deleted (its pod is
// gone and the resourceclaim controller released it).
func waitForClaimGone(t *testing.T, claim *resourceapi.ResourceClaim) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.Admin.ResourceV1().ResourceClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "claim %s/%s was not released", claim.Namespace, claim.Name)
}

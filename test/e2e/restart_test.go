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
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// sliceState is what a republication without churn keeps.
type sliceState struct {
	UID            types.UID
	Driver, Pool   string
	PoolGeneration int64
	Devices        int
}

func realNodeSlices(t *testing.T) (map[string]sliceState, string) {
	t.Helper()
	list, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + cluster.RealNode()})
	require.NoError(t, err)
	out := map[string]sliceState{}
	for _, s := range list.Items {
		out[s.Name] = sliceState{UID: s.UID, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, PoolGeneration: s.Spec.Pool.Generation, Devices: len(s.Spec.Devices)}
	}
	return out, list.ResourceVersion
}

// TestKillingTheNodeAgentLeavesRunningPodsAndSlicesAlone kills the real
// node's agent with SIGKILL while two pods hold prepared claims of both
// drivers, and starts it again on the same directories: its slices are
// taken over (no slice deleted or created, same pool generation), the
// kubelet registers it again, the pods keep running in the same
// containers, and deleting a pod afterwards still unprepares its claim.
func TestKillingTheNodeAgentLeavesRunningPodsAndSlicesAlone(t *testing.T) {
	ns := newNamespace(t)
	createTemplate(t, template(ns, "npu", exactly("npu", "ascend.accel-dra.dev", 1)))
	createTemplate(t, template(ns, "mlu", exactly("mlu", "cambricon.accel-dra.dev", 1)))
	pods := map[string]*corev1.Pod{}
	claims := map[string][]*resourceapi.ResourceClaim{}
	for _, name := range []string{"holds-npu", "holds-mlu"} {
		tmpl := map[string]string{"holds-npu": "npu", "holds-mlu": "mlu"}[name]
		createPod(t, realNodePod(ns, name, tmpl))
		pods[name] = waitForPodRunning(t, ns, name)
		claims[name] = podClaims(t, pods[name])
		podLogs(t, pods[name])
	}

	before, rv := realNodeSlices(t)
	require.NotEmpty(t, before)
	w, err := cluster.Admin.ResourceV1().ResourceSlices().Watch(t.Context(), metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + cluster.RealNode(), ResourceVersion: rv,
	})
	require.NoError(t, err)
	defer w.Stop()

	node := cluster.RealNode()
	require.NoError(t, cluster.KillAgent(node))
	t.Logf("killed the agent of %s", node)
	// The kubelet notices nothing until it calls the plugin; a later pod
	// would wait. Give it a moment with the agent gone.
	time.Sleep(2 * time.Second)
	require.NoError(t, cluster.RestartAgent(t.Context(), node), "the agent comes back and the kubelet registers it (log %s)", cluster.AgentLog(node))
	// Let the restarted slice controllers settle.
	time.Sleep(5 * time.Second)

	events := map[watch.EventType]int{}
	closed := false
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				closed, done = true, true
				break
			}
			events[ev.Type]++
			if s, ok := ev.Object.(*resourceapi.ResourceSlice); ok {
				t.Logf("slice event %s %s (pool generation %d)", ev.Type, s.Name, s.Spec.Pool.Generation)
			}
		default:
			done = true
		}
	}
	require.False(t, closed, "the watch of the node's slices ended early: it would miss a delete")
	t.Logf("slice events while the agent restarted: %v", events)
	assert.Zero(t, events[watch.Deleted], "no slice was deleted")
	assert.Zero(t, events[watch.Added], "no slice was created")
	after, _ := realNodeSlices(t)
	assert.Equal(t, before, after, "same slices (names, UIDs, pools, generations, devices) after the restart")

	for name, before := range pods {
		now, err := cluster.Admin.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodRunning, now.Status.Phase, "pod %s still runs", name)
		require.Len(t, now.Status.ContainerStatuses, 1)
		assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, now.Status.ContainerStatuses[0].ContainerID, "pod %s: same container", name)
		assert.Zero(t, now.Status.ContainerStatuses[0].RestartCount, "pod %s: not restarted", name)
		for _, c := range claims[name] {
			assert.NotEmpty(t, cdiSpecs(t, c), "pod %s: the CDI spec of claim %s is still there", name, c.Name)
		}
	}

	// The restarted agent still knows what it prepared: a pod started now
	// gets prepared, and deleting the old pods unprepares their claims.
	createPod(t, realNodePod(ns, "after-restart", "npu"))
	later := waitForPodRunning(t, ns, "after-restart")
	laterDevs := allocated(t, podClaims(t, later)[0])
	heldDevs := allocated(t, claims["holds-npu"][0])
	assert.NotEqual(t, heldDevs[0].Name, laterDevs[0].Name, "the new pod got another chip")
	for name := range pods {
		deletePod(t, ns, name)
		for _, c := range claims[name] {
			waitForCDISpecsGone(t, c)
			waitForClaimGone(t, c)
		}
	}
}

// TestPodsStartAfterAKubeletRestartAndAReboot restarts the real node's
// kubelet while a pod holds claims of both drivers, then simulates a
// reboot: the pod's container dies, the CDI directory (tmpfs) is emptied,
// the boot id changes, the kubelet and the agent start again. The agent
// must see the new boot and prepare its claims again, so the kubelet
// starts the pod's container again with the CDI devices it recorded; a
// new pod starts after each.
func TestPodsStartAfterAKubeletRestartAndAReboot(t *testing.T) {
	ns := newNamespace(t)
	createTemplate(t, template(ns, "npu", exactly("npu", "ascend.accel-dra.dev", 1)))
	createTemplate(t, template(ns, "mlu", exactly("mlu", "cambricon.accel-dra.dev", 1)))
	held := realNodePod(ns, "held", "npu", "mlu")
	held.Spec.RestartPolicy = corev1.RestartPolicyAlways
	createPod(t, held)
	pod := waitForPodRunning(t, ns, "held")
	podLogs(t, pod)
	claims := podClaims(t, pod)
	require.Len(t, claims, 2)

	require.NoError(t, cluster.RestartKubelet(t.Context()), "the kubelet restarts")
	createPod(t, realNodePod(ns, "after-kubelet-restart", "npu"))
	podLogs(t, waitForPodRunning(t, ns, "after-kubelet-restart"))
	deletePod(t, ns, "after-kubelet-restart")
	now, err := cluster.Admin.CoreV1().Pods(ns).Get(t.Context(), "held", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, pod.Status.ContainerStatuses[0].ContainerID, now.Status.ContainerStatuses[0].ContainerID, "the held pod's container survives the kubelet's restart")

	container := now.Status.ContainerStatuses[0].ContainerID
	require.NoError(t, cluster.SimulateReboot(t.Context(), "e2e-boot-after-reboot", container),
		"the node comes back (agent log %s)", cluster.AgentLog(cluster.RealNode()))
	for _, c := range claims {
		require.NotEmpty(t, cdiSpecs(t, c), "the agent wrote the CDI spec of claim %s again", c.Name)
	}
	again := waitForPod(t, ns, "held", "its container started again after the reboot", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		st := p.Status.ContainerStatuses[0]
		return st.ContainerID != container && st.State.Running != nil
	})
	assert.NotZero(t, again.Status.ContainerStatuses[0].RestartCount)
	log, err := os.ReadFile(cluster.AgentLog(cluster.RealNode()))
	require.NoError(t, err)
	assert.Contains(t, string(log), "The node rebooted since the checkpoint was saved", "the agent saw the new boot id")

	createPod(t, realNodePod(ns, "after-reboot", "npu"))
	podLogs(t, waitForPodRunning(t, ns, "after-reboot"))
	for _, name := range []string{"after-reboot", "held"} {
		deletePod(t, ns, name)
	}
	for _, c := range claims {
		waitForCDISpecsGone(t, c)
		waitForClaimGone(t, c)
	}
}

// TestARebootOnAPersistentCDIDirNeverHandsAPodAnothersVNPU: the CDI
// directory survives the reboot (cdiDir on disk, as /etc/cdi), the vNPUs
// do not, and the partition tool fails at first (its driver not loaded
// yet), so pod a's claim cannot be prepared again at the agent's start.
// Its old spec named a vNPU id the tool hands out again: it must be gone
// once the agent serves, /readyz names the claim, and once the tool
// works the agent's own retry (no restart) gives the claim a new vNPU
// and pod a's container starts again. A new pod b's vNPU is never one
// that a's spec names.
func TestARebootOnAPersistentCDIDirNeverHandsAPodAnothersVNPU(t *testing.T) {
	node := cluster.RealNode()
	setChipModes(t, node, "npu-3=Partitioned", []string{ascend.Driver + "/npu-3-vir05-1c-16g-0"},
		func(d resourceapi.Device) bool { return len(d.ConsumesCounters) > 0 })
	ns := newNamespace(t)
	createTemplate(t, template(ns, "vnpu", exactly("vnpu", "ascend-vnpu.accel-dra.dev", 1)))
	held := realNodePod(ns, "a", "vnpu")
	held.Spec.RestartPolicy = corev1.RestartPolicyAlways
	createPod(t, held)
	pod := waitForPodRunning(t, ns, "a")
	claimA := podClaims(t, pod)[0]
	require.NotEmpty(t, vnpuNodes(t, claimA), "a's spec names its vNPU")

	container := pod.Status.ContainerStatuses[0].ContainerID
	require.NoError(t, cluster.SimulateRebootWith(t.Context(), "e2e-boot-persistent-cdi",
		framework.RebootOptions{PersistentCDIDir: true, BrokenPartitionTool: true}, container),
		"the node comes back (agent log %s)", cluster.AgentLog(node))
	pid := cluster.AgentPID(node)
	ref := claimA.Namespace + "/" + claimA.Name + " (" + string(claimA.UID) + ")"
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		code, b, err := cluster.AgentReadyz(ctx)
		body = b
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(b, ref), nil
	})
	require.NoError(t, err, "/readyz names a's claim while it is not back; last: %s", body)
	require.Empty(t, vnpuNodes(t, claimA), "a's spec naming its pre-reboot vNPU is gone")

	require.NoError(t, cluster.FixPartitionTool())
	require.NoError(t, cluster.WaitForAgent(t.Context(), node), "the agent's retry brings the claim back (agent log %s)", cluster.AgentLog(node))
	waitForPod(t, ns, "a", "its container started again after the reboot", func(p *corev1.Pod) bool {
		st := p.Status.ContainerStatuses
		return len(st) == 1 && st[0].ContainerID != container && st[0].State.Running != nil
	})
	nodesA := vnpuNodes(t, claimA)
	require.NotEmpty(t, nodesA, "a's spec names its new vNPU")

	createPod(t, realNodePod(ns, "b", "vnpu"))
	b := waitForPodRunning(t, ns, "b")
	nodesB := vnpuNodes(t, podClaims(t, b)[0])
	require.NotEmpty(t, nodesB)
	for _, n := range nodesB {
		require.NotContains(t, nodesA, n, "a's spec never names b's vNPU")
	}
	log, err := os.ReadFile(cluster.AgentLog(node))
	require.NoError(t, err)
	require.Contains(t, string(log), "Removed the CDI spec of a claim whose partition no longer exists")
	require.Equal(t, pid, cluster.AgentPID(node), "the agent was not restarted to get the claim back")

	claimB := podClaims(t, b)[0]
	for _, name := range []string{"a", "b"} {
		deletePod(t, ns, name)
	}
	for _, c := range []*resourceapi.ResourceClaim{claimA, claimB} {
		waitForCDISpecsGone(t, c)
		waitForClaimGone(t, c)
	}
}

// vnpuNodes are the vNPU device nodes (vdavinciN) the claim's CDI spec
// names on the real node.
func vnpuNodes(t *testing.T, claim *resourceapi.ResourceClaim) []string {
	t.Helper()
	var out []string
	for _, f := range cdiSpecs(t, claim) {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, regexp.MustCompile(`vdavinci[0-9]+`).FindAllString(string(raw), -1)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

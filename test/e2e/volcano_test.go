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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// volcanoGates are the DRA gates of Volcano v1.14.1's embedded
// kube-scheduler 1.34 code that are off by default there and that our
// slices need (docs/queues.md#volcano): DRADeviceTaints (else it hands out
// chips we taint unhealthy), DRAPartitionableDevices (vNPU/sMLU partitions
// consume the chip's counters) and DRAConsumableCapacity (shared chips).
// DynamicResourceAllocation (GA), DRAPrioritizedList and DRAAdminAccess
// (beta) are on by default in 1.34.
const volcanoGates = "DRADeviceTaints=true,DRAPartitionableDevices=true,DRAConsumableCapacity=true"

var (
	volcanoJobsGVR      = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
	volcanoPodGroupsGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

// TestVolcanoJobsOverDRAClaims runs Volcano v1.14.1 (built from the Go
// module proxy) with docs/queues.md's scheduler configuration, queues,
// claim templates and Volcano Jobs, once for all its subtests, and checks
// on the real node: gang start, a queue's capability with priority inside
// it, what the capability does not count and the ResourceQuota that does,
// a job across vendors, bad input, and tainted chips with the gate on and
// off.
func TestVolcanoJobsOverDRAClaims(t *testing.T) {
	ctx := t.Context()
	vc, err := cluster.StartVolcano(ctx, repoPath(queuesDemo, "volcano", "scheduler-config.yaml"), volcanoGates)
	require.NoError(t, err)
	t.Cleanup(vc.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Volcano's logs (tail):\n%s", vc.Log(80))
		}
	})
	queues := readDemoObjects(t, "volcano/queues.yaml", "")
	_, err = cluster.Apply(ctx, framework.FieldManager, queues...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), queues...) })

	v := &volcanoRun{t: t, vc: vc, nsA: newNamespace(t), nsB: newNamespace(t)}
	for _, ns := range []string{v.nsA, v.nsB} {
		_, err = cluster.Apply(ctx, framework.FieldManager, readDemoObjects(t, "claimtemplates.yaml", ns)...)
		require.NoError(t, err)
	}

	t.Run("gang", v.testGang)
	t.Run("queue capability and priority", v.testCapabilityAndPriority)
	t.Run("chips per queue: a ResourceQuota per class", v.testChipQuota)
	t.Run("across vendors", v.testAcrossVendors)
	t.Run("bad input stays Pending", v.testBadInput)
	t.Run("tainted chips", v.testTaintedChips)
}

// testGang: with 2 of the 4 910B3 taken, a job of two workers of 2 chips
// each (minAvailable 2) binds neither worker and holds no chips; when the
// other job ends, both start on distinct chips.
func (v *volcanoRun) testGang(t *testing.T) {
	v.t = t
	holder, holderPods := v.submitRunning(v.nsA, "train", 1)
	gang := v.submit(v.nsB, "gang-train")
	v.waitUnschedulable(v.nsB, gang)
	require.Len(t, realNodeDevicesInUse(t), 2, "two chips are free, yet a worker of the gang holds chips")
	for _, p := range v.pods(v.nsB, gang) {
		require.Empty(t, p.Spec.NodeName, "worker %s was bound alone", p.Name)
	}

	v.deleteJob(v.nsA, holder, holderPods)
	workers := v.waitRunning(v.nsB, gang, 2)
	devs := deviceNames(workers)
	require.Len(t, devs, 4)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(devs))), 4, "the workers got distinct chips")
	v.deleteAll()
}

// testCapabilityAndPriority: team-a's capability (200m CPU) runs two of
// the guide's 100m jobs; a third batch job and then an urgent one wait in
// Pending; when one running job ends the urgent one runs on its chips, the
// batch one still waits, and runs when the other ends.
func (v *volcanoRun) testCapabilityAndPriority(t *testing.T) {
	v.t = t
	first, firstPods := v.submitRunning(v.nsA, "train", 1)
	second, secondPods := v.submitRunning(v.nsA, "train", 1)
	batch := v.submit(v.nsA, "train")
	v.waitPodGroupPhase(v.nsA, batch, "Pending")
	urgent := v.submit(v.nsA, "urgent-train")
	v.waitPodGroupPhase(v.nsA, urgent, "Pending")
	require.Len(t, realNodeDevicesInUse(t), 4)

	v.deleteJob(v.nsA, first, firstPods)
	urgentPods := v.waitRunning(v.nsA, urgent, 1)
	require.ElementsMatch(t, deviceNames(firstPods), deviceNames(urgentPods), "the urgent job got the chips the ended one freed")
	require.Equal(t, "Pending", v.podGroupPhase(v.nsA, batch), "the batch job was admitted before the urgent one")
	require.Empty(t, v.boundPods(v.nsA, batch))

	v.deleteJob(v.nsA, second, secondPods)
	v.waitRunning(v.nsA, batch, 1)
	v.deleteAll()
}

// testChipQuota: team-b's capability names deviceclass/mlu370-x8 2, which
// v1.14 accepts and does not count (volcano-sh/volcano#4400): two 2-chip
// serving jobs run. With the guide's ResourceQuota per class in the
// namespace, the second job's claim is refused, its pod waits, and it runs
// when the first ends.
func (v *volcanoRun) testChipQuota(t *testing.T) {
	v.t = t
	s1, _ := v.submitRunning(v.nsB, "serve", 1)
	s2, _ := v.submitRunning(v.nsB, "serve", 1)
	var mlus int
	for _, d := range realNodeDevicesInUse(t) {
		if strings.HasPrefix(d, "cambricon.accel-dra.dev/") {
			mlus++
		}
	}
	require.Equal(t, 4, mlus, "jobs %s and %s run 4 MLU370 in a queue whose capability says 2", s1, s2)
	v.deleteAll()

	quota := readDemoObjects(t, "volcano/quota.yaml", v.nsB)
	_, err := cluster.Apply(t.Context(), framework.FieldManager, quota...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), quota...) })
	// The quota controller must have counted the namespace before it
	// refuses anything.
	waitQuotaCounted(t, v.nsB, "mlu370-chips")
	s3, s3Pods := v.submitRunning(v.nsB, "serve", 1)
	s4 := v.submit(v.nsB, "serve")
	ev := v.waitPodEvent(v.nsB, s4, "exceeded quota")
	t.Logf("Held by the ResourceQuota: %s", ev)
	require.Empty(t, v.boundPods(v.nsB, s4))
	v.deleteJob(v.nsB, s3, s3Pods)
	v.waitRunning(v.nsB, s4, 1)
	v.testQuotaBypasses(t)
	v.deleteAll()
}

// testQuotaBypasses: with quota.yaml in team-b's namespace and its 2
// MLU370-X8 in use, every other way to the same chips the review found is
// refused when the claim or pod is created, and the implicit extended
// resource of a class is held at the claim the scheduler makes for it (a
// plain pod, not through Volcano: the quota holds any scheduler).
func (v *volcanoRun) testQuotaBypasses(t *testing.T) {
	mlu := `device.attributes["accel-dra.dev"].model == "MLU370-X8"`
	claims := []struct {
		name, class string
		cel         []string
	}{
		{"the generic class", "accelerator.accel-dra.dev", []string{mlu}},
		{"the vendor class", "cambricon.accel-dra.dev", []string{mlu}},
		{"the extended-resource class", "cambricon-mlu.accel-dra.dev", []string{mlu}},
		{"a partition shape of the chip", "mlu370-x8-smlu-25p.accel-dra.dev", nil},
	}
	for _, tc := range claims {
		t.Run("a claim of "+tc.name, func(t *testing.T) {
			claim := &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: v.nsB, Name: "bypass-" + strings.ReplaceAll(tc.name, " ", "-")},
				Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{exactly("mlus", tc.class, 2, tc.cel...)}}},
			}
			_, err := cluster.Admin.ResourceV1().ResourceClaims(v.nsB).Create(t.Context(), claim, metav1.CreateOptions{})
			require.True(t, apierrors.IsForbidden(err), "claim of %s: want Forbidden, got %v", tc.class, err)
			requireSays(t, err.Error(), "exceeded quota: mlu370-chips", tc.class+".deviceclass.resource.k8s.io/devices=2")
			t.Logf("Refused: %v", err)
		})
	}

	bypassPod := func(name string, resourceName corev1.ResourceName) *corev1.Pod {
		pod := realNodePod(v.nsB, name)
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{resourceName: resource.MustParse("2")}
		return pod
	}
	t.Run("a pod asking for cambricon.com/mlu", func(t *testing.T) {
		_, err := cluster.Admin.CoreV1().Pods(v.nsB).Create(t.Context(), bypassPod("bypass-extended", "cambricon.com/mlu"), metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
		requireSays(t, err.Error(), "exceeded quota: mlu370-chips", "requests.cambricon.com/mlu=2")
		t.Logf("Refused: %v", err)
	})
	t.Run("a pod asking for the implicit extended resource of the vendor class", func(t *testing.T) {
		created := createPod(t, bypassPod("bypass-implicit-0", "deviceclass.resource.kubernetes.io/cambricon.accel-dra.dev"))
		t.Cleanup(func() {
			// t.Context() is done by now.
			_ = cluster.Admin.CoreV1().Pods(v.nsB).Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
		ev := v.waitPodEvent(v.nsB, "bypass-implicit", "exceeded quota: mlu370-chips")
		t.Logf("Held: %s", ev)
		p, err := cluster.Admin.CoreV1().Pods(v.nsB).Get(t.Context(), created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, p.Spec.NodeName, "the pod was bound")
		cl, err := cluster.Admin.ResourceV1().ResourceClaims(v.nsB).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, c := range cl.Items {
			for _, o := range c.OwnerReferences {
				require.NotEqual(t, created.UID, o.UID, "the pod got claim %s", c.Name)
			}
		}
	})
}

// testAcrossVendors: the demo's train-on-Ascend / serve-on-Cambricon pair
// as one Volcano Job of two tasks: both start, each with its vendor's chip
// on the real node and its variable in the container.
func (v *volcanoRun) testAcrossVendors(t *testing.T) {
	v.t = t
	_, pods := v.submitRunning(v.nsB, "train-and-serve", 2)
	want := map[string]string{"train": "ASCEND_VISIBLE_DEVICES=", "serve": "CAMBRICON_VISIBLE_DEVICES="}
	models := map[string]string{}
	for _, pd := range pods {
		task := pd.pod.Annotations["volcano.sh/task-spec"]
		require.Contains(t, want, task, "pod %s", pd.pod.Name)
		require.Len(t, pd.devs, 1)
		models[task] = pd.devs[0].Model
		logs := podLogsContaining(t, pd.pod, want[task])
		require.True(t, slices.ContainsFunc(strings.Split(logs, "\n"), func(l string) bool {
			return strings.HasPrefix(l, want[task]) && len(l) > len(want[task])
		}), "%s not set in task %s:\n%s", want[task], task, logs)
	}
	require.Equal(t, map[string]string{"train": "Ascend910B3", "serve": "MLU370-X8"}, models)
	v.deleteAll()
}

// testBadInput: a Volcano Job whose claim names a class that does not
// exist, and one asking for more chips than any node has, stay Pending
// with Volcano's reason in the pod's events; accel-dra why says what is
// missing.
func (v *volcanoRun) testBadInput(t *testing.T) {
	v.t = t
	var bad []*unstructured.Unstructured
	for _, f := range []string{"claim-unknown-class.yaml", "claim-too-many.yaml", "bad-jobs.yaml"} {
		bad = append(bad, readDemoObjects(t, "volcano/"+f, v.nsB)...)
	}
	_, err := cluster.Apply(t.Context(), framework.FieldManager, bad...)
	require.NoError(t, err)
	v.submitted = append(v.submitted, [2]string{v.nsB, "typo"}, [2]string{v.nsB, "too-many"})

	typo := v.waitPodEvent(v.nsB, "typo", "request npu: device class ascend910c.accel-dra.dev does not exist")
	t.Logf("typo: %s", typo)
	tooMany := v.waitPodEvent(v.nsB, "too-many", "cannot allocate all claims")
	t.Logf("too-many: %s", tooMany)
	require.Empty(t, v.boundPods(v.nsB, "typo"))
	require.Empty(t, v.boundPods(v.nsB, "too-many"))

	out, code := runCLI(t, "why", "pod/too-many-worker-0", "-n", v.nsB)
	require.Equal(t, 0, code)
	requireSays(t, out,
		"pod "+v.nsB+"/too-many-worker-0: Pending, not scheduled",
		"request npus needs 9 of class ascend910b3.accel-dra.dev:",
		"nearest node: a2-0 has 8 of 9 free (lacks 1)",
		"the allocator cannot fit the claims on any of the",
	)
	v.deleteAll()
}

// testTaintedChips: on a node whose two MLU270 are tainted unhealthy,
// Volcano with DRADeviceTaints on leaves the job Pending; restarted with
// the gate off (its default in v1.14.1), it allocates a tainted chip.
func (v *volcanoRun) testTaintedChips(t *testing.T) {
	v.t = t
	const node = "vc-sick-0"
	_, err := cluster.AddAgentNode(t.Context(), framework.NodeInfo{Name: node, Profile: repoPath("test", "e2e", "testdata", "why-unhealthy-mlu270.yaml")}, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := cluster.RemoveAgentNode(context.Background(), node); err != nil {
			t.Errorf("removing node %s: %v", node, err)
		}
	})
	require.NoError(t, cluster.StartAgent(node))
	require.NoError(t, cluster.WaitForAgent(t.Context(), node), "agent log:\n%s", cluster.AgentLog(node))
	createTemplate(t, template(v.nsB, "one-mlu", exactly("mlu", "cambricon.accel-dra.dev", 1)))

	job := readDemoObjects(t, "volcano/job-serve.yaml", v.nsB)[0]
	tasks, _, _ := unstructured.NestedSlice(job.Object, "spec", "tasks")
	task := tasks[0].(map[string]any)
	require.NoError(t, unstructured.SetNestedField(task, map[string]any{"kubernetes.io/hostname": node}, "template", "spec", "nodeSelector"))
	require.NoError(t, unstructured.SetNestedSlice(task, []any{map[string]any{"name": "chips", "resourceClaimTemplateName": "one-mlu"}}, "template", "spec", "resourceClaims"))
	require.NoError(t, unstructured.SetNestedSlice(job.Object, tasks, "spec", "tasks"))
	created, err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(v.nsB).Create(t.Context(), job, metav1.CreateOptions{FieldManager: framework.FieldManager})
	require.NoError(t, err)
	name := created.GetName()
	v.submitted = append(v.submitted, [2]string{v.nsB, name})

	ev := v.waitPodEvent(v.nsB, name, "cannot allocate all claims")
	t.Logf("Gate on: %s", ev)
	require.Empty(t, v.boundPods(v.nsB, name), "a pod was bound to the tainted chips")

	require.NoError(t, v.vc.StartScheduler(t.Context(), "DRADeviceTaints=false,DRAPartitionableDevices=true,DRAConsumableCapacity=true"))
	t.Cleanup(func() {
		if err := v.vc.StartScheduler(context.Background(), volcanoGates); err != nil {
			t.Errorf("restarting Volcano's scheduler: %v", err)
		}
	})
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		b := v.boundPods(v.nsB, name)
		if len(b) == 1 {
			pod = &b[0]
		}
		return pod != nil, nil
	})
	require.NoError(t, err, "with DRADeviceTaints off the job stayed Pending")
	require.Equal(t, node, pod.Spec.NodeName)
	claims := podClaims(t, pod)
	require.Len(t, claims, 1)
	sl, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	r := claims[0].Status.Allocation.Devices.Results[0]
	var taints []string
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			if s.Spec.Pool.Name == r.Pool && d.Name == r.Device {
				for _, tn := range d.Taints {
					taints = append(taints, fmt.Sprintf("%s=%s:%s", tn.Key, tn.Value, tn.Effect))
				}
			}
		}
	}
	require.Equal(t, []string{"accel-dra.dev/unhealthy=SimulatedUnhealthy:NoSchedule"}, taints, "gate off: Volcano allocated %s/%s", r.Pool, r.Device)
	v.deleteAll()
}

// volcanoRun submits the guide's Volcano Jobs.
type volcanoRun struct {
	t         *testing.T
	vc        *framework.Volcano
	nsA, nsB  string
	submitted [][2]string // namespace, name
}

// submit creates the guide's volcano/job-<guideJob>.yaml in ns, as
// `kubectl create -f` does, and returns its name.
func (v *volcanoRun) submit(ns, guideJob string) string {
	v.t.Helper()
	objs := readDemoObjects(v.t, "volcano/job-"+guideJob+".yaml", ns)
	require.Len(v.t, objs, 1)
	created, err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(ns).Create(v.t.Context(), objs[0], metav1.CreateOptions{FieldManager: framework.FieldManager})
	require.NoError(v.t, err)
	v.submitted = append(v.submitted, [2]string{ns, created.GetName()})
	return created.GetName()
}

func (v *volcanoRun) submitRunning(ns, guideJob string, pods int) (string, []podDevices) {
	v.t.Helper()
	name := v.submit(ns, guideJob)
	return name, v.waitRunning(ns, name, pods)
}

// pods are the pods Volcano's job controller made for job.
func (v *volcanoRun) pods(ns, job string) []corev1.Pod {
	v.t.Helper()
	pl, err := cluster.Admin.CoreV1().Pods(ns).List(v.t.Context(), metav1.ListOptions{LabelSelector: "volcano.sh/job-name=" + job})
	require.NoError(v.t, err)
	return pl.Items
}

func (v *volcanoRun) boundPods(ns, job string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range v.pods(ns, job) {
		if p.Spec.NodeName != "" {
			out = append(out, p)
		}
	}
	return out
}

// podGroup is the PodGroup Volcano's job controller made for job.
func (v *volcanoRun) podGroup(ns, job string) *unstructured.Unstructured {
	v.t.Helper()
	l, err := cluster.Dynamic.Resource(volcanoPodGroupsGVR).Namespace(ns).List(v.t.Context(), metav1.ListOptions{})
	require.NoError(v.t, err)
	for i := range l.Items {
		for _, o := range l.Items[i].GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == job {
				return &l.Items[i]
			}
		}
	}
	return nil
}

func (v *volcanoRun) podGroupPhase(ns, job string) string {
	pg := v.podGroup(ns, job)
	if pg == nil {
		return ""
	}
	phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
	return phase
}

func (v *volcanoRun) podGroupSummary(ns, job string) string {
	pg := v.podGroup(ns, job)
	if pg == nil {
		return "no PodGroup yet"
	}
	phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
	conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
	parts := []string{pg.GetName() + " " + phase}
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			parts = append(parts, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
		}
	}
	return strings.Join(parts, "; ")
}

// waitPodGroupPhase waits until job's PodGroup is in phase, and, for
// Pending, that none of its pods is bound.
func (v *volcanoRun) waitPodGroupPhase(ns, job, phase string) {
	v.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(v.t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		last = v.podGroupSummary(ns, job)
		return v.podGroupPhase(ns, job) == phase, nil
	})
	require.NoError(v.t, err, "job %s/%s: PodGroup never %s: %s", ns, job, phase, last)
	v.t.Logf("%s/%s: %s", ns, job, last)
}

// waitUnschedulable waits until job's PodGroup says it cannot be placed,
// with its pods unbound.
func (v *volcanoRun) waitUnschedulable(ns, job string) {
	v.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(v.t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		last = v.podGroupSummary(ns, job)
		pg := v.podGroup(ns, job)
		if pg == nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Unschedulable" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(v.t, err, "job %s/%s never reported unschedulable: %s", ns, job, last)
	v.t.Logf("%s/%s: %s", ns, job, last)
	require.Empty(v.t, v.boundPods(ns, job))
}

// waitPodEvent waits until an event of a pod of job says text, and
// returns it as "reason: message".
func (v *volcanoRun) waitPodEvent(ns, job, text string) string {
	v.t.Helper()
	var found string
	var seen []string
	err := wait.PollUntilContextTimeout(v.t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		el, err := cluster.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range el.Items {
			if e.InvolvedObject.Kind != "Pod" || !strings.HasPrefix(e.InvolvedObject.Name, job+"-") {
				continue
			}
			s := e.Reason + ": " + e.Message
			seen = append(seen, s)
			if strings.Contains(e.Message, text) {
				found = s
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(v.t, err, "no event of job %s/%s says %q; events: %v; PodGroup: %s", ns, job, text, seen, v.podGroupSummary(ns, job))
	return found
}

// waitRunning waits until job's pods run on the real node with their
// claims allocated there, and returns them.
func (v *volcanoRun) waitRunning(ns, job string, pods int) []podDevices {
	v.t.Helper()
	return waitPodsOnRealNode(v.t, ns+"/"+job, pods, func() []corev1.Pod { return v.pods(ns, job) },
		func() string { return "PodGroup: " + v.podGroupSummary(ns, job) })
}

// deleteJob deletes a Volcano Job (its pods with it) and waits until its
// claims are unprepared and gone.
func (v *volcanoRun) deleteJob(ns, name string, running []podDevices) {
	v.t.Helper()
	err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(ns).Delete(v.t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	require.NoError(v.t, err)
	waitClaimsReleased(v.t, running)
}

// deleteAll deletes the jobs this test submitted and waits until no claim
// holds devices for the next subtest.
func (v *volcanoRun) deleteAll() {
	v.t.Helper()
	for _, s := range v.submitted {
		err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(s[0]).Delete(v.t.Context(), s[1], metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			require.NoError(v.t, err)
		}
	}
	v.submitted = nil
	err := wait.PollUntilContextTimeout(v.t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		for _, ns := range []string{v.nsA, v.nsB} {
			cl, err := cluster.Admin.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(cl.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(v.t, err, "claims of the Volcano jobs still there")
}

// realNodeDevicesInUse are the real node's devices allocated to claims.
func realNodeDevicesInUse(t *testing.T) []string {
	t.Helper()
	return (&kueueQueue{t: t}).realNodeDevicesInUse()
}

// waitQuotaCounted waits until the ResourceQuota's status has its hard
// limits, which the quota controller sets when it has counted usage.
func waitQuotaCounted(t *testing.T, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		q, err := cluster.Admin.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0, nil
	})
	require.NoError(t, err, "ResourceQuota %s/%s never counted", ns, name)
}

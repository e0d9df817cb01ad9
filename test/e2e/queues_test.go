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
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// The files of docs/queues.md: the e2e applies them as the guide says.
const queuesDemo = "demo/queues"

var workloadsGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// Quota resources of demo/queues/kueue/kueue-config.yaml.
const (
	quota910B3      = "accel-dra.dev/ascend910b3"
	quotaMLU370     = "accel-dra.dev/mlu370-x8"
	quotaVNPUMemory = "accel-dra.dev/vnpu-memory"
	quotaVNPUCores  = "accel-dra.dev/vnpu-cores"
	quotaSMLUMemory = "accel-dra.dev/smlu-memory"
	quotaSMLUCores  = "accel-dra.dev/smlu-cores"
)

// TestKueueQueuesJobsOverDRAClaims runs Kueue v0.19.2 (built from the Go
// module proxy) against the cluster with docs/queues.md's Configuration,
// queues, claim templates and jobs, and checks on the real node: quota per
// chip type, priority preemption that frees and reuses the chips, gang
// admission of a two-worker job, and a job that uses both vendors.
func TestKueueQueuesJobsOverDRAClaims(t *testing.T) {
	ctx := t.Context()
	q := startKueue(t, "kueue-config.yaml", "KueueDRAIntegration=true")
	ns := q.ns
	queues := readDemoObjects(t, "kueue/queues.yaml", ns)
	_, err := cluster.Apply(ctx, framework.FieldManager, queues...)
	require.NoError(t, err)
	t.Cleanup(func() {
		var clusterScoped []*unstructured.Unstructured
		for _, o := range queues {
			if o.GetKind() != "LocalQueue" {
				clusterScoped = append(clusterScoped, o)
			}
		}
		_ = cluster.Delete(context.Background(), clusterScoped...)
	})
	_, err = cluster.Apply(ctx, framework.FieldManager, readDemoObjects(t, "claimtemplates.yaml", ns)...)
	require.NoError(t, err)
	q.waitClusterQueueActive("accelerators")

	t.Run("quota per chip type", q.testQuota)
	t.Run("priority preemption", q.testPriority)
	t.Run("gang", q.testGang)
	t.Run("across vendors", q.testAcrossVendors)
	t.Run("a claim Kueue cannot count", q.testRefused)
	t.Run("a job without a queue", q.testNoQueue)
	t.Run("unchanged device-plugin jobs", q.testLegacy)
	// Last: it restarts the real node's agent with its chips Partitioned
	// and back.
	t.Run("partitions by chip memory and cores", q.testPartitions)
}

// startKueue runs Kueue until the test ends with the guide's Configuration
// file config (in demo/queues/kueue) and the manager's featureGates, and
// returns a queue user in a new namespace.
func startKueue(t *testing.T, config, featureGates string) *kueueQueue {
	t.Helper()
	runKueue(t, repoPath(queuesDemo, "kueue", config), featureGates)
	return &kueueQueue{t: t, ns: newNamespace(t)}
}

// runKueue starts Kueue's manager with the configuration file at
// configPath for the rest of the test, and logs its tail if the test
// fails.
func runKueue(t *testing.T, configPath, featureGates string) {
	t.Helper()
	kueue, err := cluster.StartKueue(t.Context(), configPath, featureGates)
	require.NoError(t, err)
	t.Cleanup(func() { kueue.Stop(context.Background()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kueue's log (tail):\n%s", kueue.Log(80))
		}
	})
}

// testQuota: the queue allows 4 × 910B3 and 2 × MLU370-X8 while the node
// has 4 of each. Two 2-chip training jobs run, a third is held; one
// 2-chip serving job runs, a second is held although the node has two
// MLU370 free; when a job ends, the held one gets its chips.
func (q *kueueQueue) testQuota(t *testing.T) {
	q.t = t
	train1, train1Pods := q.submitRunning("train", 1)
	q.submitRunning("train", 1)
	train3 := q.submit("train")
	q.waitHeldForQuota(train3, quota910B3)

	serve1, serve1Pods := q.submitRunning("serve", 1)
	serve2 := q.submit("serve")
	q.waitHeldForQuota(serve2, quotaMLU370)
	var mluChips, mluInUse int
	for _, c := range realInventory(t).Chips {
		if strings.HasPrefix(c.Model, "MLU370") {
			mluChips++
		}
	}
	for _, d := range q.realNodeDevicesInUse() {
		if strings.HasPrefix(d, "cambricon.accel-dra.dev/") {
			mluInUse++
		}
	}
	require.Equal(t, 2, mluChips-mluInUse, "two MLU370 are free: the quota, not the node, holds %s", serve2)
	require.Equal(t, map[string]string{quota910B3: "2"}, q.admittedUsage(train1), "Kueue counts the devices of the claim template")
	require.Equal(t, map[string]string{quotaMLU370: "2"}, q.admittedUsage(serve1))

	q.deleteJob(train1, train1Pods)
	train3Pods := q.waitRunning(train3, 1)
	require.ElementsMatch(t, deviceNames(train1Pods), deviceNames(train3Pods), "the held job got the chips the ended one freed")

	q.deleteJob(serve1, serve1Pods)
	require.Len(t, deviceNames(q.waitRunning(serve2, 1)), 2)
	q.deleteAll()
}

// testPriority: two batch jobs use the whole 910B3 quota; an urgent job
// makes Kueue evict one. The evicted job's pod goes, its claim is
// unprepared (CDI specs removed) and deleted, the urgent job runs on the
// very chips it held, the other batch job is untouched, and the evicted
// one waits in the queue again.
func (q *kueueQueue) testPriority(t *testing.T) {
	q.t = t
	held := map[string][]podDevices{}
	for range 2 {
		name, pods := q.submitRunning("train", 1)
		held[name] = pods
	}
	urgent := q.waitRunning(q.submit("urgent-train"), 1)

	var evicted, kept string
	for name := range held {
		if q.job(name).Spec.Suspend != nil && *q.job(name).Spec.Suspend {
			evicted = name
		} else {
			kept = name
		}
	}
	require.NotEmpty(t, evicted, "no batch job was suspended for the urgent one")
	require.NotEmpty(t, kept, "both batch jobs were evicted for one 2-chip job")
	for _, pd := range held[evicted] {
		for _, c := range pd.claims {
			waitForClaimGone(t, c)
			waitForCDISpecsGone(t, c)
		}
	}
	checkpoint, err := os.ReadFile(filepath.Join(cluster.Agents[cluster.RealNode()].StateDir, ascend.Driver, "checkpoint.json"))
	require.NoError(t, err)
	for _, pd := range held[evicted] {
		for _, c := range pd.claims {
			require.NotContains(t, string(checkpoint), string(c.UID), "the agent's checkpoint still records the evicted claim %s", c.Name)
		}
	}
	for _, pd := range urgent {
		require.Contains(t, string(checkpoint), string(pd.claims[0].UID), "the agent's checkpoint records the urgent claim")
	}
	require.ElementsMatch(t, deviceNames(held[evicted]), deviceNames(urgent), "the urgent job runs on the chips of the evicted one")
	cond := q.workloadCondition(evicted, "Evicted")
	require.NotNil(t, cond, "workload of %s has no Evicted condition", evicted)
	require.Equal(t, "Preempted", cond["reason"], "Evicted condition of %s: %v", evicted, cond)
	q.waitHeldForQuota(evicted, quota910B3)
	keptNow := q.waitRunning(kept, 1)
	require.Equal(t, held[kept][0].pod.UID, keptNow[0].pod.UID, "the other batch job's pod kept running")
	q.deleteAll()
}

// testGang: with 2 of the 4 chips taken, a job of two workers of 2 chips
// each does not start one worker on the 2 free chips: Kueue admits its 4
// chips at once, when the other job ends, and both workers run.
func (q *kueueQueue) testGang(t *testing.T) {
	q.t = t
	holder, holderPods := q.submitRunning("train", 1)
	gang := q.submit("gang-train")
	q.waitHeldForQuota(gang, quota910B3)
	require.Len(t, q.realNodeDevicesInUse(), 2, "two chips are free, yet no worker started")

	q.deleteJob(holder, holderPods)
	workers := q.waitRunning(gang, 2)
	devs := deviceNames(workers)
	require.Len(t, devs, 4)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(devs))), 4, "the workers got distinct chips")
	require.Equal(t, map[string]string{quota910B3: "4"}, q.admittedUsage(gang))
	q.deleteAll()
}

// testAcrossVendors: one pod trains on a 910B3 and serves on an MLU370,
// one claim per vendor; the queue counts both, the container sees both.
func (q *kueueQueue) testAcrossVendors(t *testing.T) {
	q.t = t
	pipeline, running := q.submitRunning("train-and-serve", 1)
	require.Equal(t, map[string]string{quota910B3: "1", quotaMLU370: "1"}, q.admittedUsage(pipeline))
	drivers := map[string]string{}
	for _, c := range running[0].claims {
		for _, d := range allocated(t, c) {
			drivers[d.Driver] = d.Model
			require.Equal(t, cluster.RealNode(), d.Pool)
		}
	}
	require.Equal(t, map[string]string{"ascend.accel-dra.dev": "Ascend910B3", "cambricon.accel-dra.dev": "MLU370-X8"}, drivers)
	logs := podLogsContaining(t, running[0].pod, "CAMBRICON_VISIBLE_DEVICES=")
	for _, env := range []string{"ASCEND_VISIBLE_DEVICES=", "CAMBRICON_VISIBLE_DEVICES="} {
		require.True(t, slices.ContainsFunc(strings.Split(logs, "\n"), func(l string) bool {
			return strings.HasPrefix(l, env) && len(l) > len(env)
		}), "%s not set in the container:\n%s", env, logs)
	}
	q.deleteAll()
}

// testRefused: a claim template with firstAvailable is not counted: the
// job is held with Kueue's reason and never gets pods or chips.
func (q *kueueQueue) testRefused(t *testing.T) {
	q.t = t
	refused := readDemoObjects(t, "kueue/refused.yaml", q.ns)
	_, err := cluster.Apply(t.Context(), framework.FieldManager, refused...)
	require.NoError(t, err)
	q.submitted = append(q.submitted, "big-memory-train")
	q.waitHeld("big-memory-train", "Inadmissible", "FirstAvailable device selection is not supported")
	q.deleteAll()
}

// testNoQueue: a Job without the queue-name label, created unsuspended as
// someone getting past the quota would, is suspended by Kueue's webhook
// (manageJobsWithoutQueueName) and held with no pods or claims although
// all the node's 910B3 are free; once labelled with a queue it is
// admitted like any other.
func (q *kueueQueue) testNoQueue(t *testing.T) {
	q.t = t
	objs := readDemoObjects(t, "kueue/job-train.yaml", q.ns)
	require.Len(t, objs, 1)
	job := objs[0]
	job.SetLabels(nil)
	require.NoError(t, unstructured.SetNestedField(job.Object, false, "spec", "suspend"))
	gvr, _, err := cluster.Resource(job)
	require.NoError(t, err)
	created, err := cluster.Dynamic.Resource(gvr).Namespace(q.ns).Create(t.Context(), job, metav1.CreateOptions{FieldManager: framework.FieldManager})
	require.NoError(t, err)
	name := created.GetName()
	q.submitted = append(q.submitted, name)
	suspend, _, _ := unstructured.NestedBool(created.Object, "spec", "suspend")
	require.True(t, suspend, "Kueue's webhook let the unlabelled job %s start", name)

	q.waitStaysHeld(name, 15*time.Second)
	require.Empty(t, q.realNodeDevicesInUse(), "the unlabelled job got chips")

	_, err = cluster.Admin.BatchV1().Jobs(q.ns).Patch(t.Context(), name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"team-a"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	q.waitRunning(name, 1)
	require.Equal(t, map[string]string{quota910B3: "2"}, q.admittedUsage(name))
	q.deleteAll()
}

// testLegacy: a job that asks for huawei.com/Ascend910 by count, as with
// the device plugin, is charged to the same quota as the claim jobs
// (kueue-config.yaml maps the class behind the name), so the 4 chips are
// counted once: with two claim jobs using the queue's 4 910B3 it is held,
// not admitted to a second quota on the same chips; when one ends it runs
// on the real node through the extended-resource class.
func (q *kueueQueue) testLegacy(t *testing.T) {
	q.t = t
	// Kueue v0.19.2 maps the extended resource only from requests; with
	// limits alone it stays huawei.com/Ascend910, which the queue does not
	// cover: held, never counted in a quota of its own.
	objs := readDemoObjects(t, "kueue/job-legacy-train.yaml", q.ns)
	require.Len(t, objs, 1)
	containers, _, err := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	unstructured.RemoveNestedField(containers[0].(map[string]any), "resources", "requests")
	require.NoError(t, unstructured.SetNestedSlice(objs[0].Object, containers, "spec", "template", "spec", "containers"))
	limitsOnly, err := cluster.Admin.BatchV1().Jobs(q.ns).Create(t.Context(), toJob(t, objs[0]), metav1.CreateOptions{})
	require.NoError(t, err)
	q.submitted = append(q.submitted, limitsOnly.Name)
	q.waitHeld(limitsOnly.Name, "Pending", "resource huawei.com/Ascend910 unavailable in ClusterQueue")
	q.deleteAll()

	train1, train1Pods := q.submitRunning("train", 1)
	q.submitRunning("train", 1)
	legacy := q.submit("legacy-train")
	q.waitHeldForQuota(legacy, quota910B3)

	q.deleteJob(train1, train1Pods)
	legacyPods := q.waitRunning(legacy, 1)
	require.Equal(t, map[string]string{quota910B3: "2"}, q.admittedUsage(legacy), "Kueue charges huawei.com/Ascend910 to the mapped quota")
	require.NotNil(t, legacyPods[0].pod.Status.ExtendedResourceClaimStatus, "the scheduler made no claim for huawei.com/Ascend910")
	require.Len(t, legacyPods[0].devs, 2)
	assertAll(t, legacyPods[0].devs, ascend.Driver, "Ascend910B3")
	require.ElementsMatch(t, deviceNames(train1Pods), deviceNames(legacyPods), "the legacy job got the chips the claim job freed")
	q.deleteAll()
}

// testPartitions: with the real node's chips Partitioned, the partitions
// queue charges a vNPU claim 16Gi and 5 cores and an sMLU claim 5827Mi and
// 4 cores, the counters the partition devices consume. Its 32Gi of vNPU
// memory runs two vir05_1c_16g jobs and holds a third although the node
// has 14 vNPU slots free; its 4 sMLU cores run one sMLU job and hold a
// second. When a job ends and its partition is released, the held one is
// admitted and runs on a partition.
func (q *kueueQueue) testPartitions(t *testing.T) {
	q.t = t
	setChipModes(t, cluster.RealNode(), "Partitioned",
		[]string{ascend.Driver + "/npu-3-vir05-1c-16g-3", cambricon.Driver + "/mlu-3-smlu-25p-3"},
		func(d resourceapi.Device) bool { return len(d.ConsumesCounters) > 0 })
	objs := readDemoObjects(t, "kueue/partitions.yaml", q.ns)
	_, err := cluster.Apply(t.Context(), framework.FieldManager, objs...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), objs...) })
	q.waitClusterQueueActive("partitions")

	vnpu1, vnpu1Pods := q.submitRunning("vnpu-infer", 1)
	require.Equal(t, map[string]string{quotaVNPUMemory: "16Gi", quotaVNPUCores: "5"}, q.admittedUsage(vnpu1), "Kueue charges the vir05_1c_16g counters")
	q.submitRunning("vnpu-infer", 1)
	vnpu3 := q.submit("vnpu-infer")
	q.waitHeldForQuota(vnpu3, quotaVNPUMemory)
	vnpus := 0
	for _, d := range q.realNodeDevicesInUse() {
		if strings.Contains(d, "-vir05-1c-16g-") {
			vnpus++
		}
	}
	require.Equal(t, 2, vnpus, "two vNPUs allocated, of 16 slots: the quota, not the node, holds %s", vnpu3)

	smlu1, smlu1Pods := q.submitRunning("smlu-infer", 1)
	require.Equal(t, map[string]string{quotaSMLUMemory: "5827Mi", quotaSMLUCores: "4"}, q.admittedUsage(smlu1), "Kueue charges the 1/4 sMLU counters")
	smlu2 := q.submit("smlu-infer")
	q.waitHeldForQuota(smlu2, quotaSMLUCores)

	for name, pods := range map[string][]podDevices{vnpu1: vnpu1Pods, smlu1: smlu1Pods} {
		for _, d := range deviceNames(pods) {
			require.Regexp(t, `/(npu-\d-vir05-1c-16g|mlu-\d-smlu-25p)-\d$`, d, "job %s got a partition", name)
		}
	}
	q.deleteJob(vnpu1, vnpu1Pods)
	require.Regexp(t, `-vir05-1c-16g-\d$`, deviceNames(q.waitRunning(vnpu3, 1))[0], "the held job runs on a vNPU once one is released")
	q.deleteJob(smlu1, smlu1Pods)
	require.Regexp(t, `-smlu-25p-\d$`, deviceNames(q.waitRunning(smlu2, 1))[0], "the held job runs on an sMLU once one is released")
	q.deleteAll()
}

// toJob converts a Job read from the guide.
func toJob(t *testing.T, o *unstructured.Unstructured) *batchv1.Job {
	t.Helper()
	var j batchv1.Job
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &j))
	return &j
}

// kueueQueue submits the guide's jobs to its LocalQueue in ns.
type kueueQueue struct {
	t         *testing.T
	ns        string
	submitted []string
}

// podDevices is a running pod of a job with its allocated claims.
type podDevices struct {
	pod    *corev1.Pod
	claims []*resourceapi.ResourceClaim
	devs   []device
}

func deviceNames(pds []podDevices) []string {
	var out []string
	for _, pd := range pds {
		for _, d := range pd.devs {
			out = append(out, d.Driver+"/"+d.Pool+"/"+d.Name)
		}
	}
	return out
}

// readDemoObjects reads a file of the guide; namespaced objects without a
// namespace go to ns, as `kubectl apply -n ns` would put them.
func readDemoObjects(t *testing.T, file, ns string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.ReadObjects(repoPath(queuesDemo, file))
	require.NoError(t, err)
	for _, o := range objs {
		gvr, namespaced, err := cluster.Resource(o)
		require.NoError(t, err, "%s", gvr)
		if namespaced && o.GetNamespace() == "" {
			o.SetNamespace(ns)
		}
	}
	return objs
}

// submit creates the guide's job-<guideJob>.yaml, as `kubectl create -f`
// does (a new Job of generateName each time), and returns its name.
func (q *kueueQueue) submit(guideJob string) string {
	q.t.Helper()
	objs := readDemoObjects(q.t, "kueue/job-"+guideJob+".yaml", q.ns)
	require.Len(q.t, objs, 1)
	gvr, _, err := cluster.Resource(objs[0])
	require.NoError(q.t, err)
	created, err := cluster.Dynamic.Resource(gvr).Namespace(q.ns).Create(q.t.Context(), objs[0], metav1.CreateOptions{FieldManager: framework.FieldManager})
	require.NoError(q.t, err)
	q.submitted = append(q.submitted, created.GetName())
	return created.GetName()
}

func (q *kueueQueue) submitRunning(guideJob string, pods int) (string, []podDevices) {
	q.t.Helper()
	name := q.submit(guideJob)
	return name, q.waitRunning(name, pods)
}

func (q *kueueQueue) job(name string) *batchv1.Job {
	q.t.Helper()
	j, err := cluster.Admin.BatchV1().Jobs(q.ns).Get(q.t.Context(), name, metav1.GetOptions{})
	require.NoError(q.t, err)
	return j
}

func (q *kueueQueue) pods(job string) []corev1.Pod {
	q.t.Helper()
	pl, err := cluster.Admin.CoreV1().Pods(q.ns).List(q.t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	require.NoError(q.t, err)
	return pl.Items
}

// waitRunning waits until the job is admitted and its pods run on the
// real node with their claims allocated there, and returns them.
func (q *kueueQueue) waitRunning(job string, pods int) []podDevices {
	q.t.Helper()
	return waitPodsOnRealNode(q.t, q.ns+"/"+job, pods, func() []corev1.Pod { return q.pods(job) },
		func() string { return "workload: " + q.workloadSummary(job) })
}

// waitPodsOnRealNode waits until list gives pods pods, all running (none
// being deleted), and returns them, sorted by name, with their claims,
// checking that pods and devices are on the real node. summary says how
// the queueing engine sees the job, for the failure message.
func waitPodsOnRealNode(t *testing.T, job string, pods int, list func() []corev1.Pod, summary func() string) []podDevices {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		ps := list()
		var running int
		var states []string
		for i := range ps {
			states = append(states, ps[i].Name+": "+podStatus(&ps[i]))
			if ps[i].Status.Phase == corev1.PodRunning && ps[i].DeletionTimestamp == nil {
				running++
			}
		}
		last = fmt.Sprintf("%d of %d pods running %v; %s", running, pods, states, summary())
		return running == pods && len(ps) == pods, nil
	})
	require.NoError(t, err, "job %s never ran: %s", job, last)
	var out []podDevices
	for _, p := range list() {
		require.Equal(t, cluster.RealNode(), p.Spec.NodeName, "pod %s is not on the real node", p.Name)
		pd := podDevices{pod: &p, claims: podClaims(t, &p)}
		require.NotEmpty(t, pd.claims, "pod %s has no claims", p.Name)
		for _, c := range pd.claims {
			devs := allocated(t, c)
			require.Equal(t, cluster.RealNode(), nodeOf(t, devs))
			pd.devs = append(pd.devs, devs...)
		}
		out = append(out, pd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod.Name < out[j].pod.Name })
	return out
}

// waitHeldForQuota waits until the job's workload is pending for want of
// quota of resource (see waitHeld).
func (q *kueueQueue) waitHeldForQuota(job, resource string) {
	q.t.Helper()
	q.waitHeld(job, "Pending", resource)
}

// waitHeld waits until the job's workload has no quota reserved, for
// reason with a message that contains text, and checks the job is
// suspended with no pods and claims.
func (q *kueueQueue) waitHeld(job, reason, text string) {
	q.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(q.t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		c := q.workloadCondition(job, "QuotaReserved")
		last = q.workloadSummary(job)
		if c == nil || c["status"] != "False" || c["reason"] != reason {
			return false, nil
		}
		msg, _ := c["message"].(string)
		return strings.Contains(msg, text) && len(q.pods(job)) == 0, nil
	})
	require.NoError(q.t, err, "job %s/%s is not held (%s: %s): %s", q.ns, job, reason, text, last)
	q.t.Logf("Held: %s", last)
	require.True(q.t, ptr.Deref(q.job(job).Spec.Suspend, false), "held job %s is not suspended", job)
	cl, err := cluster.Admin.ResourceV1().ResourceClaims(q.ns).List(q.t.Context(), metav1.ListOptions{})
	require.NoError(q.t, err)
	for _, c := range cl.Items {
		for _, o := range c.OwnerReferences {
			require.False(q.t, strings.HasPrefix(o.Name, job+"-"), "held job %s has claim %s", job, c.Name)
		}
	}
}

// waitStaysHeld waits until Kueue has made a Workload for job and checks
// for d that the job stays suspended with no pods and its Workload
// unadmitted. Kueue v0.19.2 gives a DRA workload without a LocalQueue no
// condition (it logs "localQueue doesn't exist or inactive"), so there is
// no reason to wait for; a job Kueue let through has pods within seconds.
func (q *kueueQueue) waitStaysHeld(job string, d time.Duration) {
	q.t.Helper()
	err := wait.PollUntilContextTimeout(q.t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		return q.workload(job) != nil, nil
	})
	require.NoError(q.t, err, "Kueue made no Workload for job %s/%s", q.ns, job)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		require.True(q.t, ptr.Deref(q.job(job).Spec.Suspend, false), "job %s was unsuspended: %s", job, q.workloadSummary(job))
		require.Empty(q.t, q.pods(job), "job %s has pods: %s", job, q.workloadSummary(job))
		for _, typ := range []string{"QuotaReserved", "Admitted"} {
			c := q.workloadCondition(job, typ)
			require.False(q.t, c != nil && c["status"] == "True", "job %s: %s", job, q.workloadSummary(job))
		}
		time.Sleep(time.Second)
	}
	q.t.Logf("Held for %s: %s", d, q.workloadSummary(job))
}

// workload is the Kueue Workload of a job (owned by it).
func (q *kueueQueue) workload(job string) *unstructured.Unstructured {
	q.t.Helper()
	l, err := cluster.Dynamic.Resource(workloadsGVR).Namespace(q.ns).List(q.t.Context(), metav1.ListOptions{})
	require.NoError(q.t, err)
	for i := range l.Items {
		for _, o := range l.Items[i].GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == job {
				return &l.Items[i]
			}
		}
	}
	return nil
}

func (q *kueueQueue) workloadCondition(job, typ string) map[string]any {
	wl := q.workload(job)
	if wl == nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func (q *kueueQueue) workloadSummary(job string) string {
	wl := q.workload(job)
	if wl == nil {
		return "none yet"
	}
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	var parts []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			parts = append(parts, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
		}
	}
	return wl.GetName() + " " + strings.Join(parts, "; ")
}

// admittedUsage is the quota the admitted workload of job uses.
func (q *kueueQueue) admittedUsage(job string) map[string]string {
	q.t.Helper()
	wl := q.workload(job)
	require.NotNil(q.t, wl, "job %s has no workload", job)
	psas, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
	require.NotEmpty(q.t, psas, "workload %s is not admitted: %s", wl.GetName(), q.workloadSummary(job))
	out := map[string]string{}
	for _, p := range psas {
		usage, _, _ := unstructured.NestedMap(p.(map[string]any), "resourceUsage")
		for k, v := range usage {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// realNodeDevicesInUse are the real node's devices allocated to claims.
func (q *kueueQueue) realNodeDevicesInUse() []string {
	q.t.Helper()
	cl, err := cluster.Admin.ResourceV1().ResourceClaims("").List(q.t.Context(), metav1.ListOptions{})
	require.NoError(q.t, err)
	var out []string
	for _, c := range cl.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Pool == cluster.RealNode() {
				out = append(out, r.Driver+"/"+r.Device)
			}
		}
	}
	return out
}

func (q *kueueQueue) waitClusterQueueActive(name string) {
	q.t.Helper()
	gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	var last any
	err := wait.PollUntilContextTimeout(q.t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cq, err := cluster.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
		last = conds
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Active" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(q.t, err, "ClusterQueue %s not active: %v", name, last)
}

// deleteJob deletes a job as a user would (its pods with it) and waits
// until its claims are unprepared and gone.
func (q *kueueQueue) deleteJob(name string, running []podDevices) {
	q.t.Helper()
	err := cluster.Admin.BatchV1().Jobs(q.ns).Delete(q.t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	require.NoError(q.t, err)
	waitClaimsReleased(q.t, running)
}

// waitClaimsReleased waits until the claims of the pods are unprepared
// (their CDI specs gone) and deleted.
func waitClaimsReleased(t *testing.T, running []podDevices) {
	t.Helper()
	for _, pd := range running {
		for _, c := range pd.claims {
			waitForClaimGone(t, c)
			waitForCDISpecsGone(t, c)
		}
	}
}

// deleteAll deletes the jobs this test submitted and waits until the
// real node's chips are free for the next one.
func (q *kueueQueue) deleteAll() {
	q.t.Helper()
	for _, name := range q.submitted {
		err := cluster.Admin.BatchV1().Jobs(q.ns).Delete(q.t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			require.NoError(q.t, err)
		}
	}
	q.submitted = nil
	err := wait.PollUntilContextTimeout(q.t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		return len(q.realNodeDevicesInUse()) == 0, nil
	})
	require.NoError(q.t, err, "chips of the real node still allocated: %v", q.realNodeDevicesInUse())
}

// TestWithoutAQueueEngineTheSchedulerDoesNotPreemptForChips checks the
// premise of docs/queues.md on this cluster: kube-scheduler 1.37 does not
// evict a lower-priority pod for the chips its claim holds, so a
// higher-priority pod that needs them stays Pending.
func TestWithoutAQueueEngineTheSchedulerDoesNotPreemptForChips(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	priority := map[string]int32{ns + "-low": 10, ns + "-high": 1000}
	for name, value := range priority {
		_, err := cluster.Admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = cluster.Admin.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	createTemplate(t, template(ns, "every-mlu370", exactly("mlus", "mlu370-x8.accel-dra.dev", 4)))
	low := realNodePod(ns, "low", "every-mlu370")
	low.Spec.PriorityClassName = ns + "-low"
	createPod(t, low)
	lowRunning := waitForPodRunning(t, ns, "low")

	high := realNodePod(ns, "high", "every-mlu370")
	high.Spec.PriorityClassName = ns + "-high"
	createPod(t, high)
	pending := waitForPod(t, ns, "high", "reported unschedulable", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "Preemption is not helpful for scheduling") {
				return true
			}
		}
		return false
	})
	for _, c := range pending.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			t.Logf("Pending: %s", c.Message)
		}
	}
	require.Empty(t, pending.Spec.NodeName)
	require.Empty(t, pending.Status.NominatedNodeName, "the scheduler nominated a node to preempt on")
	lowNow, err := cluster.Admin.CoreV1().Pods(ns).Get(ctx, "low", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, lowRunning.UID, lowNow.UID)
	require.Nil(t, lowNow.DeletionTimestamp, "the lower-priority pod was evicted")
	require.Equal(t, corev1.PodRunning, lowNow.Status.Phase)
}

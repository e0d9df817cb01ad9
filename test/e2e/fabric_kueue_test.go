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
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// fabricNodeLabel marks the A3 nodes of the fabric test, the nodes of its
// Kueue ResourceFlavor: the cluster's other nodes have no super pod.
const fabricNodeLabel = "e2e.accel-dra/fabric-node"

// kueueFabricConfig is Kueue's Configuration for the test: batch/job, the
// A3 dies' class counted as accel-dra.dev/ascend910-9392, and Jobs
// without a queue left alone (Volcano's run next to it).
const kueueFabricConfig = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks:
  - batch/job
resources:
  deviceClassMappings:
  - name: accel-dra.dev/ascend910-9392
    deviceClassNames: [` + a3Class + `]
`

// testKueueKeepsAJobInOneSuperPod runs Kueue v0.19.2's topology-aware
// scheduling over the Topology `accel-dra topology export --for kueue`
// prints, and pins what it does when only the other super pod has free
// chips: sp-1's 32 dies are held, sp-2's are free, and both have the same
// free CPU. Kueue v0.19 does not count DRA devices in a domain
// (kubernetes-sigs/kueue#10548), so it admits a 2 × 16-die job
// with podset-required-topology into a super pod by CPU: every pod gets
// one super pod's nodes, sp-1 (of two equal domains, the first). The pods
// stay Pending there (kube-scheduler finds no free dies on those nodes)
// and never move to sp-2; once sp-1's dies are free they bind in sp-1.
// Each pod asks for more than half a node's 64 CPUs: with less, Kueue
// packed both pods on one node by CPU (a node holds 16 dies, one pod's),
// and the second pod never ran (docs/queues.md).
func (f *fabricRun) testKueueKeepsAJobInOneSuperPod(t *testing.T) {
	ctx := t.Context()
	cfg := filepath.Join(t.TempDir(), "kueue-config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(kueueFabricConfig), 0o644))
	runKueue(t, cfg, "KueueDRAIntegration=true,TopologyAwareScheduling=true")
	objs := f.kueueObjects(t)
	_, err := cluster.Apply(ctx, framework.FieldManager, objs...)
	require.NoError(t, err)
	t.Cleanup(func() {
		var clusterScoped []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() != "LocalQueue" {
				clusterScoped = append(clusterScoped, o)
			}
		}
		_ = cluster.Delete(context.Background(), clusterScoped...)
	})
	q := &kueueQueue{t: t, ns: f.ns}
	q.waitClusterQueueActive("fabric")

	var holders []string
	for _, node := range []string{"sp1-a", "sp1-b"} {
		holders = append(holders, f.pinnedPod(t, "holder-"+node, node, "sixteen-dies", "1"))
	}
	for _, node := range []string{"sp2-a", "sp2-b"} {
		holders = append(holders, f.pinnedPod(t, "cpu-"+node, node, "", "1"))
	}
	job := f.kueueJob(t, "kueue-gang")
	nodes := f.waitUngated(t, job, q)
	superPods := map[string]bool{}
	for _, n := range nodes {
		superPods[f.superPodOf(t, n)] = true
	}
	require.Len(t, superPods, 1, "Kueue put the job's pods on nodes %v, in more than one super pod", nodes)
	require.NotEqual(t, nodes[0], nodes[1], "one pod a node: each asks for more than half its CPUs")
	require.Contains(t, superPods, "sp-1",
		"Kueue chose the super pod with the free dies (nodes %v): it did not in v0.19.2 (kueue#10548); update docs/queues.md", nodes)

	// sp-1 has no free die: the pods stay unschedulable there. (Kueue's
	// node controller replaces a pod unschedulable on its assigned node
	// now and then, with the same assignment.)
	for _, p := range f.kueuePods(t, job) {
		waitUnschedulable(t, f.ns, p.Name)
	}
	for _, p := range f.kueuePods(t, job) {
		require.Empty(t, p.Spec.NodeName, "pod %s bound although sp-1 has no free die", p.Name)
	}
	for _, h := range holders {
		deletePod(t, f.ns, h)
	}
	var bound []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		bound = nil
		for _, p := range f.kueuePods(t, job) {
			if p.Spec.NodeName != "" {
				bound = append(bound, p.Spec.NodeName)
			}
		}
		return len(bound) == 2, nil
	})
	require.NoError(t, err, "job %s: pods bound on %v; its workload %s", job, bound, q.workloadSummary(job))
	slices.Sort(bound)
	require.Equal(t, nodes, bound, "the pods bind on the nodes Kueue chose once their dies are free")
	require.NoError(t, cluster.Admin.BatchV1().Jobs(f.ns).Delete(ctx, job, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
}

// kueueObjects are the test's Topology (from the export), ResourceFlavor
// of the A3 nodes, ClusterQueue and LocalQueue.
func (f *fabricRun) kueueObjects(t *testing.T) []*unstructured.Unstructured {
	export, err := cluster.RunCLI(t.Context(), cluster.Kubeconfig(), "topology", "export", "--for", "kueue")
	require.NoError(t, err)
	require.Zero(t, export.ExitCode, "accel-dra topology export --for kueue: %s", export.Stderr)
	t.Logf("accel-dra topology export --for kueue:\n%s", export.Stdout)
	topo, err := framework.DecodeObjects("topology export", []byte(export.Stdout))
	require.NoError(t, err)
	require.Len(t, topo, 1)
	queues, err := framework.DecodeObjects("fabric queues", fmt.Appendf(nil, `apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: a3-fabric
spec:
  nodeLabels:
    %s: a3
  topologyName: %s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: fabric
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, accel-dra.dev/ascend910-9392]
    flavors:
    - name: a3-fabric
      resources:
      - {name: cpu, nominalQuota: 1000}
      - {name: accel-dra.dev/ascend910-9392, nominalQuota: 1000}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: fabric
  namespace: %s
spec:
  clusterQueue: fabric
`, fabricNodeLabel, topo[0].GetName(), f.ns))
	require.NoError(t, err)
	return append(topo, queues...)
}

// kueueJob submits an indexed Job of two pods × 16 dies in queue fabric,
// kept in one super pod (podset-required-topology), as
// demo/queues/fabric/kueue-gang.yaml asks; each pod asks for 33 of a
// node's 64 CPUs, so Kueue, which counts CPU and not dies, puts one pod on
// a node.
func (f *fabricRun) kueueJob(t *testing.T, name string) string {
	t.Helper()
	job, err := framework.DecodeObjects("kueue job", fmt.Appendf(nil, `apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
  labels:
    kueue.x-k8s.io/queue-name: fabric
spec:
  suspend: true
  parallelism: 2
  completions: 2
  completionMode: Indexed
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: %s
    spec:
      restartPolicy: Never
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists}
      resourceClaims:
      - {name: npus, resourceClaimTemplateName: sixteen-dies}
      containers:
      - name: main
        image: fake
        resources:
          requests: {cpu: "33"}
          claims: [{name: npus}]
`, name, f.ns, fabric.LabelSuperPod))
	require.NoError(t, err)
	_, err = cluster.Apply(t.Context(), framework.FieldManager, job...)
	require.NoError(t, err)
	return name
}

// kueuePods are the live pods of Job job: not failed (Kueue's node
// controller fails a pod it replaces), not being deleted.
func (f *fabricRun) kueuePods(t *testing.T, job string) []corev1.Pod {
	t.Helper()
	l, err := cluster.Admin.CoreV1().Pods(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	require.NoError(t, err)
	return slices.DeleteFunc(l.Items, func(p corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil
	})
}

// waitUngated waits until Kueue admitted job and ungated its two pods,
// and returns the nodes its topology assignment put them on (the
// hostname node selector Kueue adds), sorted.
func (f *fabricRun) waitUngated(t *testing.T, job string, q *kueueQueue) []string {
	t.Helper()
	var nodes []string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		nodes = nil
		pods := f.kueuePods(t, job)
		for _, p := range pods {
			if len(p.Spec.SchedulingGates) > 0 || p.Spec.NodeSelector["kubernetes.io/hostname"] == "" {
				return false, nil
			}
			nodes = append(nodes, p.Spec.NodeSelector["kubernetes.io/hostname"])
		}
		return len(pods) == 2, nil
	})
	require.NoError(t, err, "job %s: its workload %s", job, q.workloadSummary(job))
	slices.Sort(nodes)
	return nodes
}

// superPodOf is node's super pod label.
func (f *fabricRun) superPodOf(t *testing.T, node string) string {
	n, err := cluster.Admin.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	require.NoError(t, err)
	return n.Labels[fabric.LabelSuperPod]
}

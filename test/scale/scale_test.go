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

package scale

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/test/fakeapi"
)

func testNodes(n int) ([]corev1.Node, []runtime.Object) {
	var nodes []corev1.Node
	var objs []runtime.Object
	for i := range n {
		node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(i), UID: types.UID("uid-" + NodeName(i))}}
		nodes = append(nodes, node)
		objs = append(objs, node.DeepCopy())
	}
	return nodes, objs
}

// TestPublish runs the benchmark's publisher small against the fake API:
// every node's slices as the agent builds them, owned by the node, and
// gone again after DeleteSlices.
func TestPublish(t *testing.T) {
	for _, tc := range []struct {
		modes      partitions.Mode
		wantSlices int // 4 nodes, alternating OurProfiles
	}{
		{partitions.ModeWhole, 4},
		{partitions.ModePartitioned, 0}, // counted from OurResources below
	} {
		t.Run(string(tc.modes), func(t *testing.T) {
			ctx := context.Background()
			nodes, objs := testNodes(4)
			client := fakeapi.NewClient(objs...)
			want := 0
			for i, n := range nodes {
				res, err := OurResources(ctx, n.Name, i, Slices{Modes: string(tc.modes)})
				require.NoError(t, err)
				for _, r := range res {
					want += len(r.Pools[n.Name].Slices)
				}
			}
			if tc.wantSlices > 0 {
				require.Equal(t, tc.wantSlices, want, "one slice per node and driver")
			} else {
				require.Greater(t, want, 4, "partitions publish counter sets in slices of their own")
			}
			p, err := Publish(ctx, client, nodes, Slices{Modes: string(tc.modes)}, time.Minute)
			require.NoError(t, err)
			defer p.Stop()
			require.Equal(t, want, p.Slices)
			require.ElementsMatch(t, []string{"ascend.accel-dra.dev", "cambricon.accel-dra.dev"}, p.Drivers)
			list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, list.Items, want)
			for _, s := range list.Items {
				require.NotNil(t, s.Spec.NodeName)
				require.Len(t, s.OwnerReferences, 1, "slice %s", s.Name)
				require.Equal(t, "Node", s.OwnerReferences[0].Kind)
				require.Equal(t, *s.Spec.NodeName, s.OwnerReferences[0].Name)
				require.Equal(t, types.UID("uid-"+*s.Spec.NodeName), s.OwnerReferences[0].UID)
			}
			p.Stop()
			require.NoError(t, DeleteSlices(ctx, client, time.Minute, p.Drivers...))
			n, err := CountSlices(ctx, client, p.Drivers...)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// TestLeverSlices checks the settings the levers publish with: the
// omitted attributes are gone from every device and only those, and the
// offered templates leave two slots per chip.
func TestLeverSlices(t *testing.T) {
	devices := func(i int, s Slices) []resourceapi.Device { return chipDevices(t, i, s) }
	for i := range OurProfiles {
		full := devices(i, Slices{Modes: "Whole"})
		lean := devices(i, Slices{Modes: "Whole", Omit: LeanOmit})
		require.Len(t, lean, len(full))
		for j, d := range lean {
			for _, k := range LeanOmit {
				require.NotContains(t, d.Attributes, k, d.Name)
			}
			gone := 0
			for k := range full[j].Attributes {
				if _, ok := d.Attributes[k]; !ok {
					gone++
					require.Contains(t, LeanOmit, k, d.Name)
				}
			}
			require.GreaterOrEqual(t, gone, 3, "%s: healthy, family and driverVersion at least", d.Name)
		}
		all := devices(i, Slices{Modes: "Partitioned"})
		halves := devices(i, Slices{Modes: "Partitioned", Templates: HalfChipTemplates})
		require.Len(t, all, 7*len(full), "chip + 6 slots")
		require.Len(t, halves, 3*len(full), "chip + 2 slots of %v", HalfChipTemplates)
	}
}

// TestOneVendorSlices checks the peers' setting of our side: every node,
// whatever its index, publishes the one profile's 8 chips of one model in
// one link group, as a peer node publishes 8 alike devices.
func TestOneVendorSlices(t *testing.T) {
	for i := range 3 {
		res, err := OurResources(context.Background(), NodeName(i), i, Slices{Modes: "Whole", Profile: OneVendorProfile})
		require.NoError(t, err)
		require.Len(t, res, 1, "node %d: one driver", i)
		devices := chipDevices(t, i, Slices{Modes: "Whole", Profile: OneVendorProfile})
		require.Len(t, devices, 8, "node %d", i)
		for _, d := range devices {
			require.Equal(t, "Ascend910B3", *d.Attributes[names.AttrModel].StringValue, d.Name)
			require.Equal(t, *devices[0].Attributes[names.AttrLinkGroup].StringValue, *d.Attributes[names.AttrLinkGroup].StringValue, d.Name)
		}
	}
}

// TestBaselineSlice checks the scheduler_perf shape
// (resourceslice-basic-devices.yaml with numDevices 10, numPCIRoots 2).
func TestBaselineSlice(t *testing.T) {
	s := BaselineSlice("scale-0007", 7)
	require.Equal(t, "resourceslice-7", s.Name)
	require.Equal(t, "scale-0007", *s.Spec.NodeName)
	require.Equal(t, BaselineDriver, s.Spec.Driver)
	require.Equal(t, resourceapi.ResourcePool{Name: "resourceslice-7", Generation: 1, ResourceSliceCount: 1}, s.Spec.Pool)
	require.Len(t, s.Spec.Devices, 10)
	for i, d := range s.Spec.Devices {
		require.Len(t, d.Attributes, 13, d.Name)
		require.Len(t, d.Capacity, 2, d.Name)
		root := []string{"00", "01"}[i%2]
		require.Equal(t, root, *d.Attributes["pciRoot"].StringValue, d.Name)
		require.Equal(t, "pci0000:"+root, *d.Attributes["resource.kubernetes.io/pciRoot"].StringValue, d.Name)
	}
	require.Equal(t, "basic-device-9", s.Spec.Devices[9].Name)
	require.Equal(t, "0000:09:00.0", *s.Spec.Devices[9].Attributes["pciAddress"].StringValue)
}

// TestWorkloads checks that every class a template asks for is in its
// workload.
func TestWorkloads(t *testing.T) {
	ours, err := OurWorkload("../..")
	require.NoError(t, err)
	oneVendor, err := LoadWorkload("../..", "test/bench/testdata/claims.yaml", OneVendorTemplates)
	require.NoError(t, err)
	perModel, err := LoadWorkload("../..", "test/scale/testdata/levers.yaml", PerModelTemplates)
	require.NoError(t, err)
	driverOnly, err := LoadWorkload("../..", "test/scale/testdata/levers.yaml", DriverOnlyTemplates)
	require.NoError(t, err)
	partitionedShares, err := LoadWorkload("../..", SharesFile, PartitionedShareTemplates)
	require.NoError(t, err)
	sharedShares, err := LoadWorkload("../..", SharesFile, SharedShareTemplates)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		w         Workload
		templates []string
	}{
		{"ours", ours, OurTemplates},
		{"one vendor", oneVendor, OneVendorTemplates},
		{"per-model", perModel, PerModelTemplates},
		{"driver-only", driverOnly, DriverOnlyTemplates},
		{"partitioned shares", partitionedShares, PartitionedShareTemplates},
		{"shared shares", sharedShares, SharedShareTemplates},
		{"baseline", BaselineWorkload(), []string{BaselineTemplate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			classes := map[string]bool{}
			for _, c := range tc.w.Classes {
				require.False(t, strings.HasSuffix(c.Name, ".bench.accel-dra.dev"), "the allocation benchmark's own class %s", c.Name)
				classes[c.Name] = true
			}
			var names []string
			for _, tmpl := range tc.w.Templates {
				names = append(names, tmpl.Name)
				for _, r := range tmpl.Spec.Spec.Devices.Requests {
					if r.Exactly != nil {
						require.True(t, classes[r.Exactly.DeviceClassName], "template %s: class %s", tmpl.Name, r.Exactly.DeviceClassName)
					}
					for _, sub := range r.FirstAvailable {
						require.True(t, classes[sub.DeviceClassName], "template %s: class %s", tmpl.Name, sub.DeviceClassName)
					}
				}
			}
			require.Equal(t, tc.templates, names)
		})
	}
}

// TestScheduleAndDeletePods runs the pod side against the fake API, with
// a reactor binding each pod as it is created in place of the scheduler.
func TestScheduleAndDeletePods(t *testing.T) {
	ctx := context.Background()
	client := fakeapi.NewClient()
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Spec.NodeName = "scale-0000"
		return false, nil, nil
	})
	ours, err := OurWorkload("../..")
	require.NoError(t, err)
	require.NoError(t, ours.Apply(ctx, client, "bench-1"))
	s, err := ours.Schedule(ctx, client, "bench-1", 7, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 7, s.Pods)
	require.Equal(t, 7, s.Bound)
	require.Positive(t, s.PodsPerSecond())
	pods, err := client.CoreV1().Pods("bench-1").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	perTemplate := map[string]int{}
	for _, p := range pods.Items {
		perTemplate[*p.Spec.ResourceClaims[0].ResourceClaimTemplateName]++
	}
	require.Equal(t, map[string]int{OurTemplates[0]: 3, OurTemplates[1]: 2, OurTemplates[2]: 2}, perTemplate)
	require.NoError(t, DeletePods(ctx, client, "bench-1", time.Minute))
	pods, err = client.CoreV1().Pods("bench-1").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, pods.Items)
}

// TestNodeSelectorsGoOnTheirTemplatesPodsOnly checks lever 3's pods: the
// vendor label on the pods of the one-vendor template, none on the others.
func TestNodeSelectorsGoOnTheirTemplatesPodsOnly(t *testing.T) {
	ctx := context.Background()
	client := fakeapi.NewClient()
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		action.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Spec.NodeName = "scale-0000"
		return false, nil, nil
	})
	w, err := LoadWorkload("../..", "test/scale/testdata/levers.yaml", PerModelTemplates)
	require.NoError(t, err)
	sel := map[string]string{VendorLabel: OurVendorLabels[0]}
	w = w.WithNodeSelector(PerModelTemplates[0], sel)
	require.NoError(t, w.Apply(ctx, client, "bench-2"))
	_, err = w.Schedule(ctx, client, "bench-2", 6, time.Minute)
	require.NoError(t, err)
	pods, err := client.CoreV1().Pods("bench-2").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 6)
	for _, p := range pods.Items {
		if *p.Spec.ResourceClaims[0].ResourceClaimTemplateName == PerModelTemplates[0] {
			require.Equal(t, sel, p.Spec.NodeSelector, p.Name)
		} else {
			require.Empty(t, p.Spec.NodeSelector, p.Name)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	data, err := os.ReadFile("testdata/metrics.txt")
	require.NoError(t, err)
	m, err := ParseMetrics(data)
	require.NoError(t, err)
	writes := map[string][]string{"verb": {"POST", "PUT", "PATCH", "DELETE", "APPLY"}}
	for _, tc := range []struct {
		name  string
		match map[string][]string
		want  float64
	}{
		{"scheduler_schedule_attempts_total", nil, 504},
		{"scheduler_schedule_attempts_total", map[string][]string{"result": {"unschedulable", "error"}}, 4},
		{"scheduler_scheduling_attempt_duration_seconds_sum", nil, 12.5},
		{"apiserver_request_total", writes, 2980},
		{"apiserver_request_total", map[string][]string{"verb": writes["verb"], "resource": {"pods", "resourceclaims"}}, 980},
		{"process_start_time_seconds", nil, 1.78e9},
		{"weird_label_value", map[string][]string{"path": {`a"b,c=d\e`}}, 2},
		{"no_such_metric", nil, 0},
	} {
		require.Equal(t, tc.want, m.Sum(tc.name, tc.match), "%s %v", tc.name, tc.match)
	}
	_, err = ParseMetrics([]byte("broken{a=\"x\" 1\n"))
	require.Error(t, err)
	_, err = ParseMetrics([]byte("novalue{a=\"x\"}\n"))
	require.Error(t, err)
}

func TestProcCPU(t *testing.T) {
	before, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	// Burn at least two clock ticks of CPU.
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, after, before)
	_, err = ProcCPU(-1)
	require.Error(t, err)
}

func TestEvaluatedNodes(t *testing.T) {
	log := []byte(`I1204 15:26:23.506964    8978 schedule_one.go:483] "Successfully bound pod to node" pod="bench-1/pod-00494" node="scale-0861" evaluatedNodes=850 feasibleNodes=420
I1204 15:26:23.570123    8978 schedule_one.go:483] "Successfully bound pod to node" pod="bench-1/pod-00495" node="scale-0708" evaluatedNodes=870 feasibleNodes=410
I1204 15:26:23.570123    8978 schedule_one.go:483] "Successfully bound pod to node" pod="bench-0/pod-00001" node="scale-0001" evaluatedNodes=420 feasibleNodes=420
I1204 15:26:23.600000    8978 schedule_one.go:100] "Unable to schedule pod; no fit; waiting" pod="bench-1/pod-00496" evaluatedNodes=1000
`)
	e, f, n := EvaluatedNodes(log, "bench-1")
	require.Equal(t, 2, n)
	require.Equal(t, 860.0, e)
	require.Equal(t, 415.0, f)
	_, _, n = EvaluatedNodes(log, "bench-2")
	require.Zero(t, n)
}

func TestProcStatusMiB(t *testing.T) {
	rss, err := ProcStatusMiB(os.Getpid(), "VmRSS")
	require.NoError(t, err)
	anon, err := ProcStatusMiB(os.Getpid(), "RssAnon")
	require.NoError(t, err)
	require.Positive(t, anon)
	require.GreaterOrEqual(t, rss, anon)
	_, err = ProcStatusMiB(os.Getpid(), "NoSuchField")
	require.ErrorContains(t, err, "no NoSuchField")
	_, err = ProcStatusMiB(-1, "VmRSS")
	require.Error(t, err)
}

func TestProcSmapsRollupMiB(t *testing.T) {
	rss, err := ProcSmapsRollupMiB(os.Getpid(), "Rss")
	require.NoError(t, err)
	pss, err := ProcSmapsRollupMiB(os.Getpid(), "Pss")
	require.NoError(t, err)
	anon, err := ProcSmapsRollupMiB(os.Getpid(), "Pss_Anon")
	require.NoError(t, err)
	require.Positive(t, anon)
	require.GreaterOrEqual(t, rss, pss, "a shared page counts whole in RSS, in part in PSS")
	require.GreaterOrEqual(t, pss, anon)
	_, err = ProcSmapsRollupMiB(os.Getpid(), "NoSuchField")
	require.ErrorContains(t, err, "no NoSuchField in /proc/")
}

// TestFabricSlices checks what the fabric side adds: node i's chips carry
// its super pod, server index and an SDID with the server in bits 22-31,
// and nothing else changes; its labels place it in one super pod, leaf
// and spine.
func TestFabricSlices(t *testing.T) {
	ctx := context.Background()
	for _, i := range []int{0, 1, 17, 300} {
		plain, err := OurResources(ctx, NodeName(i), i, Slices{Modes: "Whole"})
		require.NoError(t, err)
		placed, err := OurResources(ctx, NodeName(i), i, Slices{Modes: "Whole", Fabric: true})
		require.NoError(t, err)
		superPod, server := FabricPlace(i)
		for driver, r := range placed {
			for p, pool := range r.Pools {
				for s, sl := range pool.Slices {
					for d, dev := range sl.Devices {
						before := plain[driver].Pools[p].Slices[s].Devices[d]
						require.Len(t, dev.Attributes, len(before.Attributes)+3, dev.Name)
						require.Equal(t, superPod, *dev.Attributes[names.AttrSuperPod].StringValue, dev.Name)
						require.Equal(t, server, *dev.Attributes[names.AttrServerIndex].IntValue, dev.Name)
						require.Equal(t, server, *dev.Attributes[names.AttrSuperDeviceID].IntValue>>22, dev.Name)
					}
				}
			}
		}
	}
	require.Equal(t, map[string]string{fabric.LabelSuperPod: "sp-18", fabric.LabelLeaf: "leaf-18", fabric.LabelSpine: "spine-2"}, FabricLabels(300))
}

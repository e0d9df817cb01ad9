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
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// TestTheHelmChartIsAcceptedByTheAPIServerAndItsDaemonSetFindsTheAcceleratorNodes
// renders the chart with `helm template` and applies every object
// server-side (no dry run), without forcing, as an upgrade of the
// harness's install (same field manager): the API server must accept
// them all, the DaemonSets included. Each node group's DaemonSet must run
// nowhere until a node carries its accelerator label, then exactly there.
func TestTheHelmChartIsAcceptedByTheAPIServerAndItsDaemonSetFindsTheAcceleratorNodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{name: "default values", sets: []string{webhookOnKwok}},
		{name: "a simulated profile with fake devices", sets: []string{webhookOnKwok, "simulation.profile=atlas-800-910a", "simulation.fakeDevices=true", "image.pullPolicy=Never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			chart, err := cluster.RenderChart(ctx, tc.sets...)
			require.NoError(t, err)
			kinds := map[string]int{}
			for _, o := range chart.Objects {
				kinds[o.GetKind()]++
			}
			t.Logf("helm template rendered %v", kinds)
			for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "DeviceClass"} {
				require.NotZero(t, kinds[kind], "the chart renders a %s", kind)
			}
			t.Cleanup(func() { restoreBaseInstall(t, chart) })

			for _, obj := range chart.Objects {
				applied, err := applyUnforced(ctx, obj)
				require.NoError(t, err, "server-side apply of %s %s", obj.GetKind(), obj.GetName())
				assert.Contains(t, managers(applied), framework.ChartFieldManager, "%s %s is owned by the chart's apply", obj.GetKind(), obj.GetName())
			}
			deviceClasses, err := framework.ReadObjects(repoPath(framework.ChartPath, "deviceclasses"))
			require.NoError(t, err)
			for _, want := range deviceClasses {
				got, err := cluster.Admin.ResourceV1().DeviceClasses().Get(ctx, want.GetName(), metav1.GetOptions{})
				require.NoError(t, err)
				wantSpec, _, _ := unstructured.NestedMap(want.Object, "spec")
				var gotSpec map[string]any
				data, err := json.Marshal(got.Spec)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(data, &gotSpec))
				assert.Equal(t, wantSpec, gotSpec, "DeviceClass %s as the chart's file says", want.GetName())
			}

			// One DaemonSet per default node group.
			groups := map[string]string{}
			for _, ds := range chart.Kinds("DaemonSet") {
				groups[ds.GetLabels()["accel-dra.dev/node-group"]] = ds.GetName()
			}
			require.Len(t, groups, 2)
			require.Contains(t, groups, "ascend")
			require.Contains(t, groups, "cambricon")
			for _, name := range groups {
				waitForDaemonSet(t, name, 0)
			}
			for group, label := range map[string]string{"ascend": "huawei-ascend", "cambricon": "cambricon-mlu"} {
				labelNode(t, "train-0", "accelerator", label)
				waitForDaemonSet(t, groups[group], 1)
				pods, err := cluster.Admin.CoreV1().Pods(framework.AgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(daemonSetSelector(t, groups[group]))})
				require.NoError(t, err)
				require.Len(t, pods.Items, 1)
				assert.Equal(t, "train-0", pods.Items[0].Spec.NodeName, "the %s agent runs on the labelled node only", group)
				assert.Equal(t, cluster.Chart.ServiceAccount, pods.Items[0].Spec.ServiceAccountName)
				for other, name := range groups {
					if other != group {
						waitForDaemonSet(t, name, 0)
					}
				}
			}
			labelNode(t, "train-0", "accelerator", "")
		})
	}
}

func applyUnforced(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvr, namespaced, err := cluster.Resource(obj)
	if err != nil {
		return nil, err
	}
	ri := cluster.Dynamic.Resource(gvr)
	opts := metav1.ApplyOptions{FieldManager: framework.ChartFieldManager}
	if namespaced {
		return ri.Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	}
	return ri.Apply(ctx, obj.GetName(), obj, opts)
}

func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager)
	}
	return out
}

func daemonSetSelector(t *testing.T, name string) *metav1.LabelSelector {
	t.Helper()
	ds, err := cluster.Admin.AppsV1().DaemonSets(framework.AgentNamespace).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return ds.Spec.Selector
}

// waitForDaemonSet waits until the DaemonSet controller has seen the
// current spec and wants n pods, all of them scheduled and running.
func waitForDaemonSet(t *testing.T, name string, n int32) {
	t.Helper()
	var ds *appsv1.DaemonSet
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		ds, err = cluster.Admin.AppsV1().DaemonSets(framework.AgentNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st := ds.Status
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == n && st.CurrentNumberScheduled == n && st.NumberReady == n, nil
	})
	require.NoError(t, err, "DaemonSet %s never had %d ready pods; status %+v", name, n, ds.Status)
}

// labelNode sets (or, with an empty value, removes) a node label.
func labelNode(t *testing.T, node, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	require.NoError(t, err)
	_, err = cluster.Admin.CoreV1().Nodes().Patch(t.Context(), node, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// webhookOnKwok keeps the chart's webhook Deployment on kwok nodes: the
// real node has no image for it (and pulls nothing).
const webhookOnKwok = `webhook.nodeSelector.accel-dra\.dev/e2e-node=kwok`

// restoreBaseInstall undoes the chart test's upgrade: it removes the
// accelerator label and the objects the harness's install does not have
// (the DaemonSet, the webhook), waiting for their pods, and re-applies the
// harness's install.
func restoreBaseInstall(t *testing.T, chart framework.ChartObjects) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	patch := []byte(`{"metadata":{"labels":{"accelerator":null}}}`)
	_, _ = cluster.Admin.CoreV1().Nodes().Patch(ctx, "train-0", types.MergePatchType, patch, metav1.PatchOptions{})
	base := map[string]bool{}
	for _, o := range cluster.Chart.Objects {
		if o.GetKind() != "DaemonSet" {
			base[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
		}
	}
	var extra []*unstructured.Unstructured
	for _, o := range chart.Objects {
		if !base[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] {
			extra = append(extra, o)
		}
	}
	if err := cluster.Delete(ctx, extra...); err != nil {
		t.Errorf("removing the chart test's objects: %v", err)
	}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, o := range extra {
			gvr, namespaced, err := cluster.Resource(o)
			if err != nil {
				return false, err
			}
			ri := cluster.Dynamic.Resource(gvr)
			if namespaced {
				_, err = ri.Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
			} else {
				_, err = ri.Get(ctx, o.GetName(), metav1.GetOptions{})
			}
			if !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		pods, err := cluster.Admin.CoreV1().Pods(framework.AgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "!" + framework.StandInLabel})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the chart test's objects or pods are still there: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, o := range cluster.Chart.Objects {
		if o.GetKind() != "DaemonSet" {
			objs = append(objs, o)
		}
	}
	if _, err := cluster.Apply(ctx, framework.ChartFieldManager, objs...); err != nil {
		t.Errorf("re-applying the harness's install: %v", err)
	}
}

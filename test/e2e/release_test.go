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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

const (
	releaseName      = "e2e-pods"
	releaseNamespace = "accel-dra-release"
	helmTimeout      = 5 * time.Minute
)

// TestTheHelmReleaseRunsTheAgentAndTheWebhookInRealPods installs the
// chart with the real helm binary, from the image `make image` built,
// so the real node's agent is the DaemonSet's pod and the webhook a
// Deployment's pod, both in real containers on the real node. The
// host-process agent stops first; the release's agent takes over its
// directories (slices, CDI specs, checkpoint) as a new DaemonSet pod takes
// over from an old one. Then: a pod gets its chips, the webhook rejects a
// bad claim through its Service with the chart's TLS certificate, `helm
// upgrade` rolls the agent while a pod holds chips and new claims are
// prepared, and `helm uninstall` leaves no socket of ours behind. The
// host-process agent is started again at the end.
func TestTheHelmReleaseRunsTheAgentAndTheWebhookInRealPods(t *testing.T) {
	require.NotEmpty(t, os.Getenv(framework.ImageEnv), "%s names the image archive of `make image`; hack/e2e/run.sh sets it", framework.ImageEnv)
	real := cluster.RealNode()
	agent := cluster.RealAgent()
	ns := newNamespace(t)
	createTemplate(t, template(ns, "one-npu", exactly("npu", "ascend.accel-dra.dev", 1)))
	createTemplate(t, template(ns, "one-mlu", exactly("mlu", "cambricon.accel-dra.dev", 1)))
	before := waitForPodRunning(t, ns, createPod(t, realNodePod(ns, "before", "one-npu")).Name)
	beforeClaim := podClaims(t, before)[0]

	_, err := cluster.Admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cluster.StopAgent(real))
	installed := false
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if installed {
			if out, err := cluster.Helm(ctx, helmTimeout, "uninstall", releaseName, "-n", releaseNamespace, "--wait"); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		}
		_ = cluster.Admin.CoreV1().Namespaces().Delete(ctx, releaseNamespace, metav1.DeleteOptions{})
		if err := cluster.RestartAgent(ctx, real); err != nil {
			t.Errorf("restarting the host agent of %s: %v", real, err)
		}
	})

	onRealNode := map[string]any{framework.NodeTypeLabel: "real"}
	values := map[string]any{
		"image": map[string]any{"pullPolicy": "Never"},
		// Only the real node runs the release's pods; kwok's nodes keep
		// their host-process agents. The real node has both vendors' chips:
		// one node group serving both, so one pod.
		"nodeGroups": []any{map[string]any{"name": "real", "vendors": []any{"ascend", "cambricon"},
			"nodeSelector": map[string]any{framework.NodeTypeLabel: "real"}}},
		"simulation": map[string]any{"profile": framework.RealNodeProfile, "fakeDevices": true, "root": agent.Root},
		"kubeletPlugin": map[string]any{
			"registrarDir": agent.RegistrarDir, "pluginsDir": agent.PluginDir, "cdiDir": agent.CDIDir, "stateDir": agent.StateDir,
		},
		// The chip metrics' pod labels: the relocated kubelet's PodResources.
		"metrics": map[string]any{"chips": map[string]any{"podResourcesDir": cluster.PodResourcesDir()}},
		// The harness installed the DeviceClasses; two releases cannot own them.
		"deviceClasses": map[string]any{"ascend": false, "cambricon": false, "accelerator": false, "ascend910": false,
			"ascend310p": false, "cambricon-mlu": false, "ascend-vnpu": false, "cambricon-partition": false},
		"modelDeviceClasses": map[string]any{"enabled": false},
		// Nor the viewer ClusterRole, whose name is cluster-wide.
		"viewerRole": map[string]any{"enabled": false},
		"webhook":    map[string]any{"replicas": 1, "nodeSelector": onRealNode, "failurePolicy": "Fail"},
	}
	valuesFile, err := cluster.WriteValues(releaseName, values)
	require.NoError(t, err)
	chart := repoPath(framework.ChartPath)
	out, err := cluster.Helm(t.Context(), helmTimeout, "install", releaseName, chart, "-n", releaseNamespace, "-f", valuesFile, "--wait", "--timeout", "4m")
	if err != nil {
		logReleasePods(t)
	}
	require.NoError(t, err, out)
	installed = true

	agentPod := func() *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
			pods, err := cluster.Admin.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=kubeletplugin"})
			if err != nil || len(pods.Items) != 1 {
				return false, nil
			}
			pod = &pods.Items[0]
			return pod.DeletionTimestamp == nil && podReady(pod), nil
		})
		if err != nil {
			dss, _ := cluster.Admin.AppsV1().DaemonSets(releaseNamespace).List(context.Background(), metav1.ListOptions{})
			events, _ := cluster.Admin.CoreV1().Events(releaseNamespace).List(context.Background(), metav1.ListOptions{})
			node, _ := cluster.Admin.CoreV1().Nodes().Get(context.Background(), real, metav1.GetOptions{})
			var evs []string
			for _, e := range events.Items {
				evs = append(evs, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
			}
			for _, ds := range dss.Items {
				t.Logf("DaemonSet %s: status %+v", ds.Name, ds.Status)
			}
			t.Logf("events: %s", strings.Join(evs, "\n"))
			if node != nil {
				t.Logf("node %s: labels %v taints %v", real, node.Labels, node.Spec.Taints)
			}
		}
		require.NoError(t, err, "no one ready agent pod; last: %s", podStatus(pod))
		return pod
	}
	first := agentPod()
	require.Equal(t, real, first.Spec.NodeName)

	t.Run("the agent registered with the kubelet from its container", func(t *testing.T) {
		for _, d := range []string{ascend.Driver, cambricon.Driver} {
			// With --pod-uid the helper names the sockets per pod.
			reg := filepath.Join(agent.RegistrarDir, kubeletplugin.RollingUpdateRegistrarSocketFile(agent.RegistrarDir, d, first.UID))
			assert.FileExists(t, reg, "registration socket of the pod's %s", d)
			assert.FileExists(t, filepath.Join(agent.PluginDir, d, "dra-"+string(first.UID)+".sock"), "DRA socket of the pod's %s", d)
		}
	})
	t.Run("a pod gets its chips from the release's agent", func(t *testing.T) {
		pod := waitForPodRunning(t, ns, createPod(t, realNodePod(ns, "after-install", "one-npu", "one-mlu")).Name)
		var devs []device
		for _, c := range podClaims(t, pod) {
			devs = append(devs, allocated(t, c)...)
		}
		assertContainerSees(t, podLogs(t, pod), devs)
	})
	t.Run("the demo's mixed pod gets one chip of each vendor", func(t *testing.T) {
		objs, err := framework.ReadObjects(repoPath("demo", "manifests", "07-mixed-pod.yaml"))
		require.NoError(t, err)
		for _, o := range objs {
			o.SetNamespace(ns)
		}
		out, err := cluster.Apply(t.Context(), "kubectl", objs...)
		require.NoError(t, err)
		for _, o := range out {
			if o.GetKind() != "Pod" {
				continue
			}
			pod := waitForPodRunning(t, ns, o.GetName())
			require.Equal(t, real, pod.Spec.NodeName)
			var devs []device
			for _, c := range podClaims(t, pod) {
				devs = append(devs, allocated(t, c)...)
			}
			require.Len(t, devs, 2)
			assertDemoContainerSees(t, pod, devs)
		}
	})
	t.Run("the webhook pod rejects a bad claim through its Service", func(t *testing.T) {
		bad := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{exactly("npu", "ascend.accel-dra.dev", 1)},
				Config: []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver: ascend.Driver, Parameters: runtime.RawExtension{Raw: []byte(`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`)},
				}}}},
			}},
		}
		_, err := cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), bad, metav1.CreateOptions{})
		require.Error(t, err, "the release's webhook refuses the claim")
		assert.Contains(t, err.Error(), `unknown field "envs"`)
		good := bad.DeepCopy()
		good.Name = "good"
		good.Spec.Devices.Config[0].Opaque.Parameters.Raw = []byte(`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"A":"1"}}`)
		_, err = cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), good, metav1.CreateOptions{})
		require.NoError(t, err, "a good claim passes: the webhook answers (failurePolicy Fail)")
	})

	t.Run("helm upgrade rolls the agent while pods hold and get chips", func(t *testing.T) {
		var upgradeOut string
		var upgradeErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			upgradeOut, upgradeErr = cluster.Helm(t.Context(), helmTimeout, "upgrade", releaseName, chart, "-n", releaseNamespace, "-f", valuesFile,
				"--set", "logVerbosity=3", "--wait", "--timeout", "4m")
		})
		// New claims while the DaemonSet rolls.
		var during []string
		for i := range 3 {
			tmpl := "one-mlu"
			if i%2 == 1 {
				tmpl = "one-npu"
			}
			p := createPod(t, realNodePod(ns, "during-"+strconv.Itoa(i), tmpl))
			during = append(during, p.Name)
			time.Sleep(2 * time.Second)
		}
		wg.Wait()
		if upgradeErr != nil {
			logReleasePods(t)
		}
		require.NoError(t, upgradeErr, upgradeOut)
		second := agentPod()
		assert.NotEqual(t, first.UID, second.UID, "the upgrade replaced the agent's pod")
		for _, name := range during {
			waitForPodRunning(t, ns, name)
		}
		events, err := cluster.Admin.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=" + "FailedPrepareDynamicResources"})
		require.NoError(t, err)
		assert.Empty(t, events.Items, "no prepare failed during the roll")
		p, err := cluster.Admin.CoreV1().Pods(ns).Get(t.Context(), before.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodRunning, p.Status.Phase, "the pod from before the release keeps running")
		assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
		assert.NotEmpty(t, cdiSpecs(t, beforeClaim), "and keeps its CDI spec")
		raw, err := os.ReadFile(filepath.Join(agent.StateDir, ascend.Driver, "checkpoint.json"))
		require.NoError(t, err)
		assert.Contains(t, string(raw), string(beforeClaim.UID), "and its checkpoint entry")
	})

	t.Run("helm uninstall leaves no socket of ours", func(t *testing.T) {
		out, err := cluster.Helm(t.Context(), helmTimeout, "uninstall", releaseName, "-n", releaseNamespace, "--wait")
		require.NoError(t, err, out)
		installed = false
		err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
			pods, err := cluster.Admin.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, nil
		})
		require.NoError(t, err, "the release's pods are gone")
		for _, d := range []string{ascend.Driver, cambricon.Driver} {
			left, _ := filepath.Glob(filepath.Join(agent.RegistrarDir, d+"*"))
			assert.Empty(t, left, "registration sockets of %s", d)
			socks, _ := filepath.Glob(filepath.Join(agent.PluginDir, d, "*.sock"))
			assert.Empty(t, socks, "DRA sockets of %s", d)
		}
		assert.NotEmpty(t, cdiSpecs(t, beforeClaim), "CDI specs of running pods stay until they end")
		_, err = cluster.Helm(t.Context(), time.Minute, "status", releaseName, "-n", releaseNamespace)
		assert.Error(t, err, "the release is gone")
	})
}

// logReleasePods logs the status and logs of the release's pods, for a
// failed install or upgrade.
func logReleasePods(t *testing.T) {
	ctx := context.Background()
	pods, err := cluster.Admin.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing the release's pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		logs, _ := cluster.Admin.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](15)}).DoRaw(ctx)
		previous, _ := cluster.Admin.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](15), Previous: true}).DoRaw(ctx)
		t.Logf("pod %s on %s: %s\n%s\nprevious container:\n%s", p.Name, p.Spec.NodeName, podStatus(&p), logs, previous)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

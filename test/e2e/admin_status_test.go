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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// TestAMonitoringPodSeesEveryChipNextToAWorkloadOnTheRealNode runs a
// workload on one Ascend chip of the real node, then the monitoring
// DaemonSet of demo/manifests/09 (admin access to every chip): the
// monitor's container gets every chip, the workload's one included, and
// when the monitor goes the workload keeps its chip. The workload's claim
// carries our device status, its container the device metadata file, and
// its status is cleared when it is unprepared.
func TestAMonitoringPodSeesEveryChipNextToAWorkloadOnTheRealNode(t *testing.T) {
	ns := newNamespace(t)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{exactly("npu", "ascend.accel-dra.dev", 1)}}},
	}
	claim, err := cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{})
	require.NoError(t, err)
	work := realNodePod(ns, "train")
	work.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "npu", ResourceClaimName: ptr.To(claim.Name)}}
	work.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "npu"}}
	work = createPod(t, work)
	work = waitForPodRunning(t, ns, work.Name)
	workLogs := podLogs(t, work)
	claim, err = cluster.Admin.ResourceV1().ResourceClaims(ns).Get(t.Context(), claim.Name, metav1.GetOptions{})
	require.NoError(t, err)
	devs := allocated(t, claim)
	require.Len(t, devs, 1)
	chip := realChip(t, devs[0])

	t.Run("the claim's status has the chip's facts", func(t *testing.T) {
		st := waitForDeviceStatus(t, claim, func(s []resourceapi.AllocatedDeviceStatus) bool { return len(ours(s)) == 1 })[0]
		assert.Equal(t, devs[0].Pool, st.Pool)
		assert.Equal(t, devs[0].Name, st.Device)
		require.Len(t, st.Conditions, 1)
		assert.Equal(t, "Ready", st.Conditions[0].Type)
		assert.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)
		require.NotNil(t, st.Data)
		var data v1alpha1.DeviceStatusData
		require.NoError(t, json.Unmarshal(st.Data.Raw, &data))
		assert.Equal(t, chip.UUID, data.UUID)
		assert.Equal(t, chip.Model, data.Model)
		assert.Equal(t, ptr.To(chip.Index), data.Index)
		assert.Equal(t, chip.PCIBusID, data.PCIBusID)
		assert.Equal(t, chip.DriverVersion, data.DriverVersion)
		if chip.DeviceIP != "" {
			require.NotNil(t, st.NetworkData, "the chip has a RoCE address")
			assert.Equal(t, []string{chip.DeviceIP}, st.NetworkData.IPs)
		}
	})
	t.Run("the container has the device metadata file", func(t *testing.T) {
		files := metadataFiles(workLogs)
		file := "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/train/npu/" + ascend.Driver + "-metadata.json"
		require.Contains(t, files, file, "metadata files: %v", keysOf(files))
		attrs := metadataAttributes(t, files[file])
		require.Contains(t, attrs, devs[0].Name)
		assert.Equal(t, chip.UUID, ptr.Deref(attrs[devs[0].Name]["uuid"].StringValue, ""))
		assert.Equal(t, int64(chip.Index), ptr.Deref(attrs[devs[0].Name]["index"].IntValue, -1))
	})

	objs, err := framework.ReadObjects(repoPath("demo", "manifests", "09-monitoring-daemonset.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" {
			// Only the real node runs pods for real; the kwok nodes' would
			// only show Running.
			require.NoError(t, unstructured.SetNestedStringMap(o.Object, map[string]string{"kubernetes.io/hostname": cluster.RealNode()},
				"spec", "template", "spec", "nodeSelector"))
		}
	}
	applied, err := cluster.Apply(t.Context(), "kubectl", objs...)
	deleted := false
	removeMonitor := func() {
		if deleted {
			return
		}
		deleted = true
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = cluster.Admin.CoreV1().Pods("accel-monitoring").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}, metav1.ListOptions{})
		if err := cluster.Delete(ctx, applied...); err != nil {
			t.Errorf("deleting the monitoring demo: %v", err)
		}
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := cluster.Admin.CoreV1().Namespaces().Get(ctx, "accel-monitoring", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace accel-monitoring still there: %v", err)
		}
	}
	t.Cleanup(removeMonitor)
	require.NoError(t, err)
	monitor := monitorPod(t)
	logs := podLogs(t, monitor)
	mclaims := podClaims(t, monitor)
	require.Len(t, mclaims, 1)
	mdevs := allocated(t, mclaims[0])
	inv := realInventory(t)

	t.Run("the monitor sees every chip, the held one too", func(t *testing.T) {
		require.Len(t, mdevs, len(inv.Chips), "allocationMode All with admin access gets every chip: %v", mdevs)
		for _, r := range mclaims[0].Status.Allocation.Devices.Results {
			assert.True(t, ptr.Deref(r.AdminAccess, false), "result %s is admin", r.Device)
		}
		held := false
		for _, d := range mdevs {
			held = held || (d.Driver == devs[0].Driver && d.Pool == devs[0].Pool && d.Name == devs[0].Name)
		}
		assert.True(t, held, "the monitor has the workload's chip %s: %v", devs[0], mdevs)
		assert.Equal(t, expectedDevNodes(t, mdevs), extraDev(logs))
		v, _ := envOf(logs, "DRA_ADMIN_ACCESS")
		assert.Equal(t, "true", v)
		for driver, key := range visibleEnv {
			got, _ := envOf(logs, key)
			assert.ElementsMatch(t, indicesOf(mdevs, driver), strings.Split(got, ","), key)
		}
		files := metadataFiles(logs)
		for _, driver := range []string{ascend.Driver, cambricon.Driver} {
			file := "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/chips/chips/" + driver + "-metadata.json"
			require.Contains(t, files, file, "metadata files: %v", keysOf(files))
			assert.Len(t, metadataAttributes(t, files[file]), len(inv.ChipsOf(framework.Registry.VendorFor(driver))), "one entry per chip of %s", driver)
		}
		waitForDeviceStatus(t, mclaims[0], func(s []resourceapi.AllocatedDeviceStatus) bool { return len(ours(s)) == len(inv.Chips) })
	})

	t.Run("the workload keeps its chip when the monitor goes", func(t *testing.T) {
		removeMonitor()
		waitForCDISpecsGone(t, mclaims[0])
		require.NotEmpty(t, cdiSpecs(t, claim), "the workload's CDI spec stays")
		p, err := cluster.Admin.CoreV1().Pods(ns).Get(t.Context(), work.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodRunning, p.Status.Phase)
		assert.Equal(t, int32(0), p.Status.ContainerStatuses[0].RestartCount)
	})

	t.Run("unprepare clears the status", func(t *testing.T) {
		deletePod(t, ns, work.Name)
		waitForCDISpecsGone(t, claim)
		waitForDeviceStatus(t, claim, func(s []resourceapi.AllocatedDeviceStatus) bool { return len(ours(s)) == 0 })
	})
}

// ours are the status entries of our drivers.
func ours(s []resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
	var out []resourceapi.AllocatedDeviceStatus
	for _, d := range s {
		if d.Driver == ascend.Driver || d.Driver == cambricon.Driver {
			out = append(out, d)
		}
	}
	return out
}

// waitForDeviceStatus waits until the claim's status.devices satisfy
// cond and returns our entries; a deleted claim has none.
func waitForDeviceStatus(t *testing.T, claim *resourceapi.ResourceClaim, cond func([]resourceapi.AllocatedDeviceStatus) bool) []resourceapi.AllocatedDeviceStatus {
	t.Helper()
	var got []resourceapi.AllocatedDeviceStatus
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := cluster.Admin.ResourceV1().ResourceClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got = nil
			return cond(nil), nil
		}
		if err != nil {
			return false, nil
		}
		got = ours(c.Status.Devices)
		return cond(c.Status.Devices), nil
	})
	require.NoError(t, err, "status.devices of claim %s/%s: %+v", claim.Namespace, claim.Name, got)
	return got
}

// monitorPod waits for the monitoring DaemonSet's pod on the real node to run.
func monitorPod(t *testing.T) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cluster.Admin.CoreV1().Pods("accel-monitoring").List(ctx, metav1.ListOptions{LabelSelector: "app=accel-exporter"})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName == cluster.RealNode() {
				pod = &pods.Items[i]
				return pod.Status.Phase == corev1.PodRunning, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the monitoring pod never ran on %s; last status: %s", cluster.RealNode(), podStatus(pod))
	return pod
}

// realChip is the real node's chip behind an allocated device.
func realChip(t *testing.T, d device) inventory.Chip {
	t.Helper()
	for _, c := range realInventory(t).Chips {
		if framework.Registry.DriverFor(c.Vendor) == d.Driver && framework.Registry.ChipDeviceName(c) == d.Name {
			return c
		}
	}
	t.Fatalf("device %s is not in the real node's inventory", d)
	return inventory.Chip{}
}

// metadataFiles splits the "== metadata" section of a probe's output
// ("--- <path>" lines, each followed by the file) into files by path.
func metadataFiles(logs string) map[string]string {
	out := map[string]string{}
	var path string
	for _, line := range section(logs, "metadata") {
		if p, ok := strings.CutPrefix(line, "--- "); ok {
			path = p
			continue
		}
		if path != "" {
			out[path] += line + "\n"
		}
	}
	return out
}

// metadataAttributes decodes the first object of a device metadata file
// (a JSON stream, newest version first) into attributes by device name.
func metadataAttributes(t *testing.T, file string) map[string]map[string]resourceapi.DeviceAttribute {
	t.Helper()
	var md struct {
		APIVersion string `json:"apiVersion"`
		Requests   []struct {
			Devices []struct {
				Name       string                                 `json:"name"`
				Attributes map[string]resourceapi.DeviceAttribute `json:"attributes"`
			} `json:"devices"`
		} `json:"requests"`
	}
	require.NoError(t, json.NewDecoder(strings.NewReader(file)).Decode(&md), "metadata file:\n%s", file)
	assert.Equal(t, "metadata.resource.k8s.io/v1beta1", md.APIVersion)
	out := map[string]map[string]resourceapi.DeviceAttribute{}
	for _, r := range md.Requests {
		for _, d := range r.Devices {
			out[d.Name] = d.Attributes
		}
	}
	return out
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

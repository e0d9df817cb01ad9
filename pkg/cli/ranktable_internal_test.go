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

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
)

// rankedPod is a pod of job train on its node with a prepared claim of
// one Atlas A3 chip in super pod 7.
func rankedPod(t *testing.T, name, host string) []runtime.Object {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"job-name": "train"}},
		Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "chips", ResourceClaimName: ptr.To(name + "-chips")}}},
		Status: corev1.PodStatus{HostIP: host, PodIP: "10.244.0.9"}}
	data, err := json.Marshal(v1alpha1.DeviceStatusData{Model: "Ascend910C", Index: ptr.To(0), DeviceIP: "10.0.0.1/24", SuperPodID: "7", SuperDeviceID: ptr.To[int64](4194304)})
	require.NoError(t, err)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-chips"}}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "npus", Driver: "ascend.accel-dra.dev", Pool: host, Device: "npu-0"}}}}
	claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: "ascend.accel-dra.dev", Pool: host, Device: "npu-0",
		Conditions: []metav1.Condition{{Type: claimstatus.ConditionReady, Status: metav1.ConditionTrue}}, Data: &runtime.RawExtension{Raw: data}}}
	return []runtime.Object{pod, claim}
}

func TestRankTableWritesTheTableWholeAndOnlyReads(t *testing.T) {
	client := useFakeCluster(t, rankedPod(t, "train-0", "10.1.0.1")...)
	out := filepath.Join(t.TempDir(), "hccl.json")
	_, _, err := runCLI(t, "ranktable", "-l", "job-name=train", "--pods", "1", "-o", out)
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.JSONEq(t, `{"status": "completed", "version": "1.2", "server_count": "1",
		"server_list": [{"server_id": "10.1.0.1", "host_ip": "10.1.0.1", "container_ip": "10.244.0.9",
			"device": [{"device_id": "0", "device_ip": "10.0.0.1", "super_device_id": "4194304", "rank_id": "0"}]}],
		"super_pod_list": [{"super_pod_id": "7", "server_list": [{"server_id": "10.1.0.1"}]}]}`, string(data))
	for _, a := range client.Actions() {
		require.Contains(t, []string{"list", "get"}, a.GetVerb(), "%s %s", a.GetVerb(), a.GetResource().Resource)
	}
}

func TestRankTableExitsNonZeroWhenTheJobIsNotReadyInTime(t *testing.T) {
	useFakeCluster(t, rankedPod(t, "train-0", "10.1.0.1")...)
	_, _, err := runCLI(t, "ranktable", "-l", "job-name=train", "--pods", "2", "--timeout", "0s")
	require.EqualError(t, err, "timed out waiting for the pods of job-name=train in namespace default: 1 of 2 pods exist")
	_, _, err = runCLI(t, "ranktable", "--pods", "2")
	require.EqualError(t, err, "--selector and --pods (at least 1) are required: they say which pods make up the job")
}

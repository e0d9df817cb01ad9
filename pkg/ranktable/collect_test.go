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

package ranktable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/ranktable"
)

const ascend = "ascend.accel-dra.dev"

// jobPod is pod i of job train, on node i, with one claim made from a
// template; placed says it is on its node.
func jobPod(i int, placed bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: fmt.Sprintf("train-%d", i),
			Labels: map[string]string{"job-name": "train", ranktable.CompletionIndexLabel: fmt.Sprint(i)}},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "chips", ResourceClaimTemplateName: ptr.To("two-chips")}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{
			{Name: "chips", ResourceClaimName: ptr.To(fmt.Sprintf("train-%d-chips", i))}}},
	}
	if placed {
		p.Status.HostIP, p.Status.PodIP = fmt.Sprintf("10.1.0.%d", i+1), fmt.Sprintf("10.244.%d.5", i)
	}
	return p
}

// jobClaim is the claim of pod i, allocated on node i to the chips of
// member i of the golden 910B table; prepared says the agent wrote its
// status.
func jobClaim(t *testing.T, i int, driver string, prepared bool) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: fmt.Sprintf("train-%d-chips", i)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for chip := range 2 {
		dev := fmt.Sprintf("npu-%d", chip)
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "npus", Driver: driver, Pool: fmt.Sprintf("node-%d", i), Device: dev})
		if !prepared {
			continue
		}
		data, err := json.Marshal(b3Chip(i, chip).Data)
		require.NoError(t, err)
		c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: driver, Pool: fmt.Sprintf("node-%d", i), Device: dev,
			Conditions: []metav1.Condition{{Type: claimstatus.ConditionReady, Status: metav1.ConditionTrue}},
			Data:       &runtime.RawExtension{Raw: data}})
	}
	return c
}

func collect(t *testing.T, ctx context.Context, objs ...runtime.Object) ([]ranktable.Member, error) {
	t.Helper()
	return ranktable.Collect(ctx, ranktable.Job{Client: fake.NewClientset(objs...), Namespace: "ml", Selector: "job-name=train", Pods: 2,
		Drivers: []string{ascend, "cambricon.accel-dra.dev"}})
}

func TestCollectGivesThePodsInRankOrderOnceEveryClaimIsPrepared(t *testing.T) {
	members, err := collect(t, context.Background(), jobPod(1, true), jobPod(0, true),
		jobClaim(t, 0, ascend, true), jobClaim(t, 1, ascend, true))
	require.NoError(t, err)
	table, err := ranktable.Build(members)
	require.NoError(t, err)
	got, err := json.Marshal(table)
	require.NoError(t, err)
	want, err := json.Marshal(mustBuild(t, member(0, b3Chip(0, 0), b3Chip(0, 1)), member(1, b3Chip(1, 0), b3Chip(1, 1))))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

func mustBuild(t *testing.T, members ...ranktable.Member) ranktable.Table {
	t.Helper()
	table, err := ranktable.Build(members)
	require.NoError(t, err)
	return table
}

// done is a context that has ended: Collect looks once, then gives up
// saying what it waited for.
func done() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestCollectSaysWhatItWaitedForOrWhyTheJobCanNeverBeRanked(t *testing.T) {
	noClaims := jobPod(1, true)
	noClaims.Spec.ResourceClaims = nil
	tests := []struct {
		name string
		objs []runtime.Object
		err  string
	}{
		{"a pod not created yet", []runtime.Object{jobPod(0, true), jobClaim(t, 0, ascend, true)},
			"timed out waiting for the pods of job-name=train in namespace ml: 1 of 2 pods exist"},
		{"a pod not on a node yet", []runtime.Object{jobPod(0, true), jobPod(1, false), jobClaim(t, 0, ascend, true)},
			"timed out waiting for the pods of job-name=train in namespace ml: pod ml/train-1 has no host or pod IP yet"},
		{"a claim not prepared yet", []runtime.Object{jobPod(0, true), jobPod(1, true), jobClaim(t, 0, ascend, true), jobClaim(t, 1, ascend, false)},
			"timed out waiting for the pods of job-name=train in namespace ml: pod ml/train-1: claim ml/train-1-chips: device npu-0 is not prepared yet"},
		{"a pod without claims", []runtime.Object{jobPod(0, true), noClaims, jobClaim(t, 0, ascend, true)},
			"pod ml/train-1 has no resource claims: every pod of the job must hold chips of ascend.accel-dra.dev or cambricon.accel-dra.dev"},
		{"a pod with another driver's devices only", []runtime.Object{jobPod(0, true), jobPod(1, true), jobClaim(t, 0, ascend, true), jobClaim(t, 1, "gpu.example.com", true)},
			"pod ml/train-1 has no chips of ascend.accel-dra.dev or cambricon.accel-dra.dev in its claims: every pod of the job must hold chips"},
		{"more pods than the job has", []runtime.Object{jobPod(0, true), jobPod(1, true), jobPod(2, true)},
			"3 pods match job-name=train in namespace ml, the job has 2: narrow the selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collect(t, done(), tc.objs...)
			require.EqualError(t, err, tc.err)
		})
	}
}

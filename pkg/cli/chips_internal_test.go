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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// fakeCluster is a fake cluster with two nodes: mlu270-0 (4 MLU270,
// PCIe only, chip 3 unhealthy) and a2-0 (8 × 910B3, npu-0 partitioned,
// npu-1 shared), a workload on mlu-1 prepared for pod serve-0, a monitor
// with admin access to mlu-1 and mlu-2, a vNPU and a share in use, and a
// GPU driver's pool. It returns the fake clientset, whose actions the
// tests check.
func fakeCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	for _, n := range []struct {
		node, profile, modes string
		unhealthy            []int
	}{{"mlu270-0", "mlu270", "", []int{3}}, {"a2-0", "atlas-800t-a2", "npu-0=Partitioned,npu-1=Shared", nil}} {
		slices, err := liveclustertest.ProfileSlices(all.Registry(), n.node, n.profile, n.modes, n.unhealthy...)
		require.NoError(t, err)
		for i := range slices {
			objs = append(objs, &slices[i])
		}
	}
	objs = append(objs, &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("a2-0"),
			Pool: resourceapi.ResourcePool{Name: "a2-0", Generation: 1, ResourceSliceCount: 1}, Devices: []resourceapi.Device{{Name: "gpu-0"}}},
	})
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", LastTransitionTime: metav1.Now()}}
	claim := func(ns, name, pod string, prepared bool, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: resourceapi.ResourceClaimStatus{
				Allocation:  &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
				ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID(pod)}},
			}}
		for _, r := range results {
			if prepared {
				c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: (*string)(r.ShareID), Conditions: ready})
			}
		}
		return c
	}
	res := func(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: pool, Device: device}
	}
	mon := func(r resourceapi.DeviceRequestAllocationResult) resourceapi.DeviceRequestAllocationResult {
		r.AdminAccess = ptr.To(true)
		return r
	}
	shared := res("ascend.accel-dra.dev", "a2-0", "npu-1")
	shared.ShareID = ptr.To(types.UID("3f1c"))
	// A 910B3's shares are vNPUs counted in units (one: vir05_1c_16g).
	shared.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"accel-dra.dev/memory": resource.MustParse("0"), "accel-dra.dev/cores": resource.MustParse("0"), "accel-dra.dev/shareUnits": resource.MustParse("1")}
	objs = append(objs,
		claim("ml", "serve", "serve-0", true, res("cambricon.accel-dra.dev", "mlu270-0", "mlu-1")),
		claim("monitoring", "chips-x7", "monitor-x7", true, mon(res("cambricon.accel-dra.dev", "mlu270-0", "mlu-1")), mon(res("cambricon.accel-dra.dev", "mlu270-0", "mlu-2"))),
		claim("ml", "vnpu", "vnpu-0", false, res("ascend.accel-dra.dev", "a2-0", "npu-0-vir05-1c-16g-1")),
		claim("ml", "infer", "infer-0", true, shared),
	)
	return useFakeCluster(t, objs...)
}

// useFakeCluster makes the commands connect to a fake cluster holding
// objs until the test ends.
func useFakeCluster(t *testing.T, objs ...runtime.Object) *fake.Clientset {
	conn, client := liveclustertest.Connection("default", objs...)
	old := connect
	connect = func(*livecluster.Flags) (*livecluster.Connection, error) { return conn, nil }
	t.Cleanup(func() { connect = old })
	return client
}

// runCLI runs the command line and returns stdout and stderr.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := NewRootCommand(all.Registry())
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestChipsPrintsEachChipWithItsHoldersOneListPerKindAndNoWrites(t *testing.T) {
	client := fakeCluster(t)
	out, _, err := runCLI(t, "chips")
	require.NoError(t, err)
	require.Equal(t, `NODE      DEVICE  MODEL        MEMORY  LINK GROUP  HEALTH                        STATE      HOLDERS            ADMIN ACCESS                     IN USE / LEFT
a2-0      npu-0   Ascend910B3  64Gi    hccs-0      ok                            allocated  ml/vnpu(vnpu-0)    -                                vir05_1c_16g×1, left aicpu=5 cores=15 memory=48Gi
a2-0      npu-1   Ascend910B3  64Gi    hccs-0      ok                            prepared   ml/infer(infer-0)  -                                1 share (hardware-enforced), left cores=20 memory=64Gi shareUnits=3
a2-0      npu-2   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
a2-0      npu-3   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
a2-0      npu-4   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
a2-0      npu-5   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
a2-0      npu-6   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
a2-0      npu-7   Ascend910B3  64Gi    hccs-0      ok                            free       -                  -                                -
mlu270-0  mlu-0   MLU270-S4    16Gi    pcie-0      ok                            free       -                  -                                -
mlu270-0  mlu-1   MLU270-S4    16Gi    pcie-1      ok                            prepared   ml/serve(serve-0)  monitoring/chips-x7(monitor-x7)  -
mlu270-0  mlu-2   MLU270-S4    16Gi    pcie-2      ok                            free       -                  monitoring/chips-x7(monitor-x7)  -
mlu270-0  mlu-3   MLU270-S4    16Gi    pcie-3      DeviceFileMissing:NoSchedule  free       -                  -                                -

OTHER DRIVERS (not interpreted)
NODE  DRIVER           POOL  SLICES  DEVICES
a2-0  gpu.example.com  a2-0  1       1
`, out)
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	require.Equal(t, []string{"get group", "list resourceslices", "list resourceclaims"}, verbs, "discovery, then one list per kind, nothing written")
}

func TestChipsJSONAndYAMLCarryTheSameView(t *testing.T) {
	fakeCluster(t)
	out, _, err := runCLI(t, "chips", "--node", "mlu270-0", "-o", "json")
	require.NoError(t, err)
	var v chipview.View
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Chips, 4)
	require.Empty(t, v.OtherDrivers, "the GPU pool is on another node")
	mlu1 := v.Chips[1]
	require.Equal(t, "mlu-1", mlu1.Device)
	require.Equal(t, chipview.Prepared, mlu1.State)
	require.Equal(t, []chipview.Holder{{Namespace: "ml", Claim: "serve", Request: "r", Device: "mlu-1", Pods: []string{"serve-0"}, Prepared: true}}, mlu1.Holders)
	require.Equal(t, []chipview.Holder{{Namespace: "monitoring", Claim: "chips-x7", Request: "r", Device: "mlu-1", Pods: []string{"monitor-x7"}, Prepared: true}}, mlu1.AdminHolders)

	yamlOut, _, err := runCLI(t, "chips", "--node", "mlu270-0", "-o", "yaml")
	require.NoError(t, err)
	require.Contains(t, yamlOut, "- adminHolders:\n")
	require.Contains(t, yamlOut, "  state: prepared\n")
}

func TestChipsWideNamesTheDriverModeAndThePartitionOrShareHeld(t *testing.T) {
	fakeCluster(t)
	out, _, err := runCLI(t, "chips", "--node", "a2-0", "-o", "wide")
	require.NoError(t, err)
	require.Contains(t, out, "NODE  DRIVER                DEVICE  INDEX  MODEL        MODE         MEMORY  CORES  LINK GROUP  HEALTH  STATE      HOLDERS")
	require.Regexp(t, `a2-0 +ascend.accel-dra.dev +npu-0 +0 +Ascend910B3 +partitioned +64Gi +20 +hccs-0 +ok +allocated +ml/vnpu@npu-0-vir05-1c-16g-1\(vnpu-0\) `, out)
	require.Regexp(t, `npu-1 +1 +Ascend910B3 +shared .* ml/infer@npu-1/3f1c\(infer-0\) `, out)
}

func TestChipsSummaryCountsPerModelAndPerNodeWhenWide(t *testing.T) {
	fakeCluster(t)
	out, _, err := runCLI(t, "chips", "--summary")
	require.NoError(t, err)
	require.Equal(t, `MODEL        TOTAL  ALLOCATED  FREE  UNHEALTHY
Ascend910B3  8      2          6     0
MLU270-S4    4      1          2     1
`, out)
	out, _, err = runCLI(t, "chips", "--summary", "-o", "wide")
	require.NoError(t, err)
	require.Equal(t, `NODE      MODEL        TOTAL  ALLOCATED  FREE  UNHEALTHY
a2-0      Ascend910B3  8      2          6     0
mlu270-0  MLU270-S4    4      1          2     1
`, out)
	out, _, err = runCLI(t, "chips", "--summary", "-o", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"models": [{"model": "Ascend910B3", "total": 8, "allocated": 2, "free": 6, "unhealthy": 0},
		{"model": "MLU270-S4", "total": 4, "allocated": 1, "free": 2, "unhealthy": 1}]}`, out)
}

func TestChipsBadInputIsOneClearError(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// refuse makes the fake cluster answer the claims list with this.
		refuse error
		want   string
	}{{
		name: "an unknown output format",
		args: []string{"chips", "-o", "csv"},
		want: `--output "csv": must be table, wide, json or yaml`,
	}, {
		name: "an unknown node",
		args: []string{"chips", "--node", "a2-9"},
		want: `no ResourceSlice is published for node "a2-9": the node does not exist or no DRA driver runs there (accel-dra chips without --node lists the nodes that have chips)`,
	}, {
		name:   "a user who may not list claims",
		args:   []string{"chips"},
		refuse: apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, "", errors.New(`User "dev" cannot list resource "resourceclaims"`)),
		want:   `not allowed to list resourceclaims.resource.k8s.io at cluster scope: ask an admin to bind the ClusterRole accel-dra-viewer to you (kubectl create clusterrolebinding NAME --clusterrole=accel-dra-viewer --user=YOU): resourceclaims.resource.k8s.io is forbidden: User "dev" cannot list resource "resourceclaims"`,
	}, {
		name: "an argument",
		args: []string{"chips", "a2-0"},
		want: `unknown command "a2-0" for "accel-dra chips"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := fakeCluster(t)
			if tc.refuse != nil {
				client.PrependReactor("list", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.refuse })
			}
			out, _, err := runCLI(t, tc.args...)
			require.EqualError(t, err, tc.want)
			require.Empty(t, out)
		})
	}
}

func TestChipsWithoutAReachableClusterSaysWhere(t *testing.T) {
	// The real connection: a server on a port nobody listens on.
	_, _, err := runCLI(t, "chips", "--server", "https://127.0.0.1:1", "--kubeconfig", "/dev/null")
	require.ErrorContains(t, err, "cannot reach the cluster at https://127.0.0.1:1 (to read the API groups the cluster serves): check --kubeconfig and --context")
}

func TestTheCommandIsNamedAfterHowItWasInvoked(t *testing.T) {
	for _, tc := range []struct{ argv0, want string }{
		{"/usr/local/bin/kubectl-accel_dra", "kubectl accel-dra chips [--node NAME]"},
		{"kubectl-accel_dra.exe", "kubectl accel-dra chips [--node NAME]"},
		{"./bin/accel-dra", "accel-dra chips [--node NAME]"},
	} {
		t.Run(tc.argv0, func(t *testing.T) {
			cmd := NewRootCommand(all.Registry())
			SetInvokedAs(cmd, tc.argv0)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetArgs([]string{"chips", "--help"})
			require.NoError(t, cmd.Execute())
			require.Contains(t, out.String(), "Usage:\n  "+tc.want)
		})
	}
}

func TestChipsOnAClusterWithoutDRADriversSaysSoOnStderr(t *testing.T) {
	useFakeCluster(t)
	out, errOut, err := runCLI(t, "chips")
	require.NoError(t, err)
	require.Empty(t, out)
	require.Equal(t, "No chips found: no DRA driver publishes ResourceSlices in this cluster.\n", errOut)
	out, _, err = runCLI(t, "chips", "-o", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"chips": []}`, out)
}

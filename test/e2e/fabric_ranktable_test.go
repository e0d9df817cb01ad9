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
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/ranktable"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// realA3 is the place of the real node's dies while the rank table test
// runs: super pod 7, server 2; die i's RoCE address is 10.20.7.(i+1)/24.
var realA3 = superPodNode{superPod: 7, server: 2}

// testRankTableInAnInitContainer runs the real node's agent over 16 A3
// dies of the mock DCMI (each with a RoCE address), then a one-pod job
// whose init container, from the accel-dra image, runs `accel-dra
// ranktable` with the pod's own ServiceAccount (get and list on pods, get
// on resourceclaims, as the command's help says). The table it prints is
// version 1.2 and lists exactly the dies allocated to the pod's claim,
// with the address and SDID the agent wrote into the claim's status.
func (f *fabricRun) testRankTableInAnInitContainer(t *testing.T, lib string) {
	image, ok, err := cluster.AccelDRAImage()
	require.NoError(t, err)
	if !ok {
		t.Skipf("no accel-dra image on the real node (%s): hack/e2e/run.sh builds it", framework.ImageEnv)
	}
	real := cluster.RealNode()
	runRealNodeOnA3Dies(t, real, lib)
	f.rankTableAccess(t)

	const job = "ranktable"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: job + "-0", Labels: map[string]string{"job": job}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": real},
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            job,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			InitContainers: []corev1.Container{{Name: "ranktable", Image: image, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/usr/bin/accel-dra", "ranktable", "-l", "job=" + job, "--pods", "1", "--timeout", "2m"}}},
			Containers: []corev1.Container{{Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"true"}, Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "npus"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "npus", ResourceClaimTemplateName: ptr.To("sixteen-dies")}},
		},
	}
	createPod(t, pod)
	var claimName string
	t.Cleanup(func() {
		_ = cluster.Admin.CoreV1().Pods(f.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		// The claim goes once the A3 agent unprepared it: before that
		// agent is replaced (the cleanup registered before this one).
		if claimName != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				_, err := cluster.Admin.ResourceV1().ResourceClaims(f.ns).Get(ctx, claimName, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if err != nil {
				t.Errorf("claim %s/%s was not released: %v", f.ns, claimName, err)
			}
		}
	})
	p := waitForPod(t, f.ns, pod.Name, "its init container done", func(p *corev1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Terminated != nil
	})
	for _, s := range p.Status.ResourceClaimStatuses {
		claimName = ptr.Deref(s.ResourceClaimName, "")
	}
	out, err := cluster.Admin.CoreV1().Pods(f.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "ranktable"}).DoRaw(t.Context())
	require.NoError(t, err)
	require.Zero(t, p.Status.InitContainerStatuses[0].State.Terminated.ExitCode, "accel-dra ranktable:\n%s", out)
	t.Logf("accel-dra ranktable in the init container of %s:\n%s", pod.Name, out)
	var table ranktable.Table
	require.NoError(t, json.Unmarshal(out, &table), "the table:\n%s", out)

	claim, err := cluster.Admin.ResourceV1().ResourceClaims(f.ns).Get(t.Context(), claimName, metav1.GetOptions{})
	require.NoError(t, err)
	want := allocatedRanks(t, claim)
	require.Len(t, want, diesPerNode)
	require.Equal(t, ranktable.Version1Dot2, table.Version)
	require.Equal(t, ranktable.StatusCompleted, table.Status)
	require.Len(t, table.ServerList, 1)
	server := table.ServerList[0]
	require.Equal(t, p.Status.HostIP, server.HostIP)
	require.Equal(t, []ranktable.SuperPod{{SuperPodID: strconv.Itoa(realA3.superPod), ServerList: []ranktable.SuperPodServer{{ServerID: server.ServerID}}}}, table.SuperPodList)
	var got []ranktable.Device
	for _, d := range server.DeviceList {
		got = append(got, ranktable.Device{DeviceID: d.DeviceID, DeviceIP: d.DeviceIP, SuperDeviceID: d.SuperDeviceID})
	}
	require.Equal(t, want, got, "the table's devices are the claim's, with the agent's addresses and SDIDs")
}

// allocatedRanks are the devices of claim as the table must list them:
// the allocated dies by index, each with the address and SDID the
// agent's status says, checked against the mock's fixture.
func allocatedRanks(t *testing.T, claim *resourceapi.ResourceClaim) []ranktable.Device {
	t.Helper()
	require.NotNil(t, claim.Status.Allocation)
	var out []ranktable.Device
	for _, r := range claim.Status.Allocation.Devices.Results {
		var data v1alpha1.DeviceStatusData
		for _, s := range claim.Status.Devices {
			if s.Device == r.Device && s.Driver == r.Driver && s.Data != nil {
				require.NoError(t, json.Unmarshal(s.Data.Raw, &data))
			}
		}
		require.NotNil(t, data.Index, "device %s has no index in its status", r.Device)
		index := int64(*data.Index)
		require.Equal(t, strconv.Itoa(realA3.superPod), data.SuperPodID, "device %s", r.Device)
		require.Equal(t, int64(realA3.server)<<22|(index/2)<<18|(index%2)<<16|index, ptr.Deref(data.SuperDeviceID, -1), "device %s", r.Device)
		require.Equal(t, fmt.Sprintf("10.20.7.%d/24", index+1), data.DeviceIP, "device %s", r.Device)
		addr := netip.MustParsePrefix(data.DeviceIP).Addr().String()
		out = append(out, ranktable.Device{DeviceID: strconv.FormatInt(index, 10), DeviceIP: addr, SuperDeviceID: strconv.FormatInt(*data.SuperDeviceID, 10)})
	}
	slices.SortFunc(out, func(a, b ranktable.Device) int {
		ia, _ := strconv.Atoi(a.DeviceID)
		ib, _ := strconv.Atoi(b.DeviceID)
		return ia - ib
	})
	return out
}

// rankTableAccess gives the ServiceAccount ranktable of the test's
// namespace what `accel-dra ranktable` needs: get and list on pods, get
// on resourceclaims.
func (f *fabricRun) rankTableAccess(t *testing.T) {
	ctx := t.Context()
	const name = "ranktable"
	_, err := cluster.Admin.CoreV1().ServiceAccounts(f.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cluster.Admin.RbacV1().Roles(f.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cluster.Admin.RbacV1().RoleBindings(f.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: f.ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// runRealNodeOnA3Dies restarts the real node's agent over 16 A3 dies of
// the mock DCMI (realA3, with RoCE addresses) under a root whose device
// files are /dev/null clones, so the kubelet's containers can get them,
// and waits until the dies are published; the agent gets its own flags
// back when the test ends.
func runRealNodeOnA3Dies(t *testing.T, node, lib string) {
	t.Helper()
	origArgs, origEnv := cluster.AgentArgs(node), cluster.AgentEnv(node)
	dir := t.TempDir()
	root := a3NodeRoot(t, dir)
	devs, err := os.ReadDir(filepath.Join(root, "dev"))
	require.NoError(t, err)
	for _, d := range devs {
		p := filepath.Join(root, "dev", d.Name())
		require.NoError(t, os.Remove(p))
		require.NoError(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))), "mknod %s", p)
	}
	fixture := filepath.Join(dir, "dcmi.txt")
	lines := a3Fixture(realA3)
	for i := range diesPerNode {
		lines += fmt.Sprintf("ip %d 10.20.7.%d/24\n", i, i+1)
	}
	require.NoError(t, os.WriteFile(fixture, []byte(lines), 0o644))
	tool := vnpuModeTool(t, dir)
	args := slices.DeleteFunc(append([]string(nil), origArgs...), func(a string) bool {
		return strings.HasPrefix(a, "--profile=") || strings.HasPrefix(a, "--root=") || a == "--fake-devices" || strings.HasPrefix(a, "--chip-modes=")
	})
	args = append(args, "--root="+root, "--vendors="+ascend.Option, "--dcmi-library="+lib, "--npu-smi="+tool)

	restart := func(args, env []string) error {
		if err := cluster.StopAgent(node); err != nil {
			return err
		}
		cluster.SetAgentArgs(node, args)
		cluster.SetAgentEnv(node, env)
		return cluster.StartAgent(node)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := restart(origArgs, origEnv); err == nil {
			err = cluster.WaitForAgent(ctx, node)
			if err != nil {
				t.Errorf("the agent of %s with its own flags again: %v", node, err)
			}
		} else {
			t.Errorf("restarting the agent of %s with its own flags: %v", node, err)
		}
	})
	require.NoError(t, restart(args, append(origEnv, "ACCEL_DRA_DCMI_FIXTURE="+fixture)))
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		dies := 0
		for _, d := range nodeChips(t, node) {
			if ptr.Deref(d.Attributes[names.AttrSuperPod].StringValue, "") == strconv.Itoa(realA3.superPod) {
				dies++
			}
		}
		return dies == diesPerNode, nil
	})
	require.NoError(t, err, "the real node's agent over A3 dies; its log: %s", cluster.AgentLog(node))
}

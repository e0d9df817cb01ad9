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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// TestTheChipsViewNamesWhoHoldsEachChipOfTheRealNode runs real pods on
// the real node: a workload on one whole Ascend chip, two pods sharing
// another chip (published Shared for this test), and a monitor with admin
// access to every chip. `accel-dra chips` then shows, for every device
// the scheduler allocated, the claim and pod holding it, prepared by the
// agent; the monitor apart on every chip; the shared chip's two shares and
// the memory left. The same binary runs as `kubectl accel-dra` through
// kubectl's plugin lookup, and for a user bound to the chart's
// accel-dra-viewer role; a user without it gets one line naming the role.
func TestTheChipsViewNamesWhoHoldsEachChipOfTheRealNode(t *testing.T) {
	real := cluster.RealNode()
	inv := realInventory(t)
	shared := firstChipOf(t, inv, ascend.Vendor)
	sharedName := framework.Registry.ChipDeviceName(shared)
	publishShared(t, real, sharedName)

	ns := newNamespace(t)
	// The workload's chip is any other Ascend chip: a claim without a
	// capacity request would take the whole of the shared one.
	other := fmt.Sprintf(`device.attributes["accel-dra.dev"].index != %d`, shared.Index)
	onShared := fmt.Sprintf(`device.attributes["accel-dra.dev"].index == %d`, shared.Index)
	train := createClaim(t, ns, "train", exactly("npu", ascend.Driver, 1, other))
	shares := map[string]string{"infer-a": "1Gi", "infer-b": "2Gi"}
	for name, memory := range shares {
		req := exactly("npu", ascend.Driver, 1, onShared)
		req.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: resource.MustParse(memory)}}
		createClaim(t, ns, name, req)
	}
	monNS := newNamespace(t)
	_, err := cluster.Admin.CoreV1().Namespaces().Patch(t.Context(), monNS, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"resource.kubernetes.io/admin-access":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	every := exactly("chips", "accelerator.accel-dra.dev", 0)
	every.Exactly.AllocationMode, every.Exactly.AdminAccess = resourceapi.DeviceAllocationModeAll, ptr.To(true)
	// The allocator checks an admin-access request against a shared
	// chip's free capacity too, and a request without one asks for the
	// chip's default, all of its memory: the smallest share fits beside
	// the workloads' (docs/partitions.md). The scheduler does not count
	// what admin access takes.
	every.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{names.CapMemory: resource.MustParse("1Gi")}}
	createClaim(t, monNS, "monitor", every)

	pods := map[string]string{} // claim namespace/name -> pod
	for _, p := range []struct{ ns, claim string }{{ns, train.Name}, {ns, "infer-a"}, {ns, "infer-b"}, {monNS, "monitor"}} {
		pod := podWithClaim(p.ns, p.claim+"-pod", p.claim)
		createPod(t, pod)
		pods[p.ns+"/"+p.claim] = pod.Name
	}
	var claims []*resourceapi.ResourceClaim
	for key, pod := range pods {
		p := waitForPodRunning(t, strings.Split(key, "/")[0], pod)
		claims = append(claims, podClaims(t, p)...)
	}

	admin := cluster.Kubeconfig()
	var view chipview.View
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		res, err := cluster.RunCLI(ctx, admin, "chips", "--node", real, "-o", "json")
		if err != nil || res.ExitCode != 0 {
			return false, fmt.Errorf("accel-dra chips: %w (exit %d): %s", err, res.ExitCode, res.Stderr)
		}
		view = chipview.View{}
		if err := json.Unmarshal([]byte(res.Stdout), &view); err != nil {
			return false, err
		}
		// The agents write each claim's device status after prepare, the
		// admin monitor's too; until then a holder shows not prepared.
		for _, c := range view.Chips {
			if c.State == chipview.Allocated {
				return false, nil
			}
			for _, h := range c.AdminHolders {
				if !h.Prepared {
					return false, nil
				}
			}
		}
		return true, nil
	})
	require.NoError(t, err, "every held chip of %s shows prepared: %+v", real, view.Chips)
	require.Len(t, view.Chips, len(inv.Chips), "one row per chip of the real node")
	row := func(device string) chipview.Chip {
		i := slices.IndexFunc(view.Chips, func(c chipview.Chip) bool { return c.Device == device })
		require.GreaterOrEqual(t, i, 0, "no row for %s", device)
		return view.Chips[i]
	}

	t.Run("every device the scheduler allocated names its claim and pod", func(t *testing.T) {
		held := map[string]bool{}
		for _, claim := range claims {
			require.NotNil(t, claim.Status.Allocation, "claim %s/%s", claim.Namespace, claim.Name)
			for _, r := range claim.Status.Allocation.Devices.Results {
				require.Equal(t, real, r.Pool)
				c := row(r.Device)
				holders := c.Holders
				if ptr.Deref(r.AdminAccess, false) {
					holders = c.AdminHolders
				} else {
					held[r.Device] = true
				}
				i := slices.IndexFunc(holders, func(h chipview.Holder) bool {
					return h.Namespace == claim.Namespace && h.Claim == claim.Name && h.ShareID == string(ptr.Deref(r.ShareID, ""))
				})
				require.GreaterOrEqual(t, i, 0, "%s holds %s (share %v): row %+v", claim.Name, r.Device, r.ShareID, c)
				assert.Equal(t, []string{pods[claim.Namespace+"/"+claim.Name]}, holders[i].Pods)
				assert.True(t, holders[i].Prepared, "%s prepared for %s", r.Device, claim.Name)
			}
		}
		for _, c := range view.Chips {
			want := chipview.Free
			if held[c.Device] {
				want = chipview.Prepared
			}
			assert.Equal(t, want, c.State, "%s", c.Device)
			require.Len(t, c.AdminHolders, 1, "the monitor sees %s", c.Device)
			assert.Equal(t, monNS+"/monitor", c.AdminHolders[0].ClaimName())
		}
		assert.Len(t, held, 2, "the workload's chip and the shared one: %v", held)
	})

	t.Run("the shared chip shows its two shares and the memory left", func(t *testing.T) {
		c := row(sharedName)
		require.Equal(t, partitions.ModeShared, c.Mode)
		require.Len(t, c.Holders, 2)
		left := c.Memory.DeepCopy()
		for _, h := range c.Holders {
			share, want := h.Consumed["memory"], resource.MustParse(shares[h.Claim])
			assert.Equal(t, want.Value(), share.Value(), "share of %s", h.Claim)
			left.Sub(share)
		}
		got := c.Left["memory"]
		assert.Equal(t, left.Value(), got.Value(), "the chip's memory less both shares")
	})

	table, err := cluster.RunCLI(t.Context(), admin, "chips", "--node", real)
	require.NoError(t, err)
	require.Zero(t, table.ExitCode, table.Stderr)
	t.Logf("accel-dra chips --node %s:\n%s", real, table.Stdout)
	trainDev := row(allocatedTo(t, claims, ns, "train")).Device
	t.Run("the table has one line per chip, the workload's with its holder and the monitor", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(table.Stdout), "\n")
		require.Len(t, lines, 1+len(inv.Chips))
		assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s +Ascend910B3 +64Gi +\S+ +ok +prepared +%s/train\(train-pod\) +%s/monitor\(monitor-pod\) +-$`,
			regexp.QuoteMeta(real), trainDev, ns, monNS)), table.Stdout)
		assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s .* prepared +(%s/infer-a\(infer-a-pod\) %s/infer-b\(infer-b-pod\)|%s/infer-b\(infer-b-pod\) %s/infer-a\(infer-a-pod\)) +%s/monitor\(monitor-pod\) +2 shares, left cores=\d+ memory=61Gi$`,
			regexp.QuoteMeta(real), sharedName, ns, ns, ns, ns, monNS)), table.Stdout)
	})

	// The outputs docs/cli.md shows.
	for _, args := range [][]string{{"chips", "--node", real, "-o", "wide"}, {"chips", "--summary"}} {
		res, err := cluster.RunCLI(t.Context(), admin, args...)
		require.NoError(t, err)
		require.Zero(t, res.ExitCode, res.Stderr)
		t.Logf("accel-dra %s:\n%s", strings.Join(args, " "), res.Stdout)
	}

	t.Run("the summary counts what the rows show", func(t *testing.T) {
		res, err := cluster.RunCLI(t.Context(), admin, "chips", "--summary", "-o", "wide")
		require.NoError(t, err)
		require.Zero(t, res.ExitCode, res.Stderr)
		t.Logf("accel-dra chips --summary -o wide:\n%s", res.Stdout)
		for _, model := range []string{"Ascend910B3", "MLU370-X8"} {
			total, allocated := 0, 0
			for _, c := range view.Chips {
				if c.Model == model {
					total++
					if c.State != chipview.Free {
						allocated++
					}
				}
			}
			assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%s +%d +%d +%d +0$`, regexp.QuoteMeta(real), model, total, allocated, total-allocated)), res.Stdout)
		}
	})

	t.Run("kubectl runs it as the plugin kubectl accel-dra", func(t *testing.T) {
		res, err := cluster.RunKubectlPlugin(t.Context(), admin, "accel-dra", "chips", "--node", real)
		require.NoError(t, err)
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Equal(t, table.Stdout, res.Stdout)
		help, err := cluster.RunKubectlPlugin(t.Context(), admin, "accel-dra", "chips", "--help")
		require.NoError(t, err)
		assert.Contains(t, help.Stdout, "Usage:\n  kubectl accel-dra chips [--node NAME]")
		list, err := cluster.RunKubectlPlugin(t.Context(), admin, "plugin", "list")
		require.NoError(t, err)
		assert.Contains(t, list.Stdout, "kubectl-accel_dra")
	})

	t.Run("a user bound to accel-dra-viewer may look, one without it is told which role to ask for", func(t *testing.T) {
		viewer := bindViewer(t, "e2e-chips-viewer")
		res, err := cluster.RunKubectlPlugin(t.Context(), viewer, "accel-dra", "chips", "--node", real)
		require.NoError(t, err)
		require.Zero(t, res.ExitCode, res.Stderr)
		assert.Equal(t, table.Stdout, res.Stdout)

		nobody, err := cluster.UserKubeconfig("e2e-nobody")
		require.NoError(t, err)
		res, err = cluster.RunCLI(t.Context(), nobody, "chips")
		require.NoError(t, err)
		assert.Equal(t, 1, res.ExitCode)
		assert.Empty(t, res.Stdout)
		assert.Equal(t, `accel-dra: not allowed to list resourceslices.resource.k8s.io: ask an admin to bind the ClusterRole accel-dra-viewer to you (kubectl create clusterrolebinding NAME --clusterrole=accel-dra-viewer --user=YOU): resourceslices.resource.k8s.io is forbidden: User "e2e-nobody" cannot list resource "resourceslices" in API group "resource.k8s.io" at the cluster scope`+"\n", res.Stderr)
	})

	t.Run("bad input is one line and a non-zero exit", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"chips", "--node", "no-such-node"}, `accel-dra: no ResourceSlice is published for node "no-such-node": the node does not exist or no DRA driver runs there (accel-dra chips without --node lists the nodes that have chips)`},
			{[]string{"chips", "--server", "https://127.0.0.1:1"}, `accel-dra: cannot reach the cluster at https://127.0.0.1:1 (to read the API groups the cluster serves): check --kubeconfig and --context: `},
		} {
			res, err := cluster.RunCLI(t.Context(), admin, tc.args...)
			require.NoError(t, err)
			assert.Equal(t, 1, res.ExitCode, "%v", tc.args)
			assert.Empty(t, res.Stdout)
			assert.True(t, strings.HasPrefix(res.Stderr, tc.want), "%v: %s", tc.args, res.Stderr)
			assert.Equal(t, 1, strings.Count(res.Stderr, "\n"), "one line: %s", res.Stderr)
		}
	})
}

// firstChipOf is the real node's chip of vendor with the lowest index.
func firstChipOf(t *testing.T, inv inventory.Inventory, v inventory.Vendor) inventory.Chip {
	t.Helper()
	chips := inv.ChipsOf(v)
	require.NotEmpty(t, chips, "the real node has %s chips", v)
	return chips[0]
}

// publishShared restarts the real node's agent with device publishes
// Shared (--chip-modes), waits until its slice says so, and puts the
// agent's flags back when the test ends.
func publishShared(t *testing.T, node, device string) {
	t.Helper()
	// vNPUs off: the shares are accounting only and asked for in memory;
	// a chip whose shares are vNPUs counts them in template units
	// (docs/partitions.md).
	setChipModes(t, node, device+"=Shared", []string{ascend.Driver + "/" + device}, func(d resourceapi.Device) bool {
		return ptr.Deref(d.AllowMultipleAllocations, false)
	}, "--partition-mode=off")
}

// setChipModes restarts node's agent with --chip-modes=modes, waits until
// its slices publish each of devices (driver/device) and published says
// it is in its new mode, and puts the agent's flags back when the test
// ends.
func setChipModes(t *testing.T, node, modes string, devices []string, published func(resourceapi.Device) bool, extra ...string) {
	t.Helper()
	orig := cluster.AgentArgs(node)
	args := slices.DeleteFunc(append([]string(nil), orig...), func(a string) bool {
		for _, e := range append([]string{"--chip-modes="}, extra...) {
			if flag, _, _ := strings.Cut(e, "="); strings.HasPrefix(a, flag+"=") {
				return true
			}
		}
		return false
	})
	args = append(args, extra...)
	restart := func(args []string) error {
		if err := cluster.StopAgent(node); err != nil {
			return err
		}
		cluster.SetAgentArgs(node, args)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		return cluster.RestartAgent(ctx, node)
	}
	require.NoError(t, restart(append(args, "--chip-modes="+modes)), "log %s", cluster.AgentLog(node))
	t.Cleanup(func() {
		if err := restart(orig); err != nil {
			t.Errorf("restarting the agent of %s with its flags: %v", node, err)
		}
	})
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// A failed list is tried again until the timeout.
		sl, _ := cluster.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if sl == nil {
			return false, nil
		}
		var ok int
		for _, s := range sl.Items {
			for _, d := range s.Spec.Devices {
				if slices.Contains(devices, s.Spec.Driver+"/"+d.Name) && published(d) {
					ok++
				}
			}
		}
		return ok == len(devices), nil
	})
	require.NoError(t, err, "%v of %s are published with --chip-modes=%s", devices, node, modes)
}

// createClaim creates a claim with one request.
func createClaim(t *testing.T, ns, name string, req resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	t.Helper()
	c, err := cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return c
}

// podWithClaim is a real-node pod whose container uses the named claim.
func podWithClaim(ns, name, claim string) *corev1.Pod {
	pod := realNodePod(ns, name)
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "chips", ResourceClaimName: ptr.To(claim)}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "chips"}}
	return pod
}

// allocatedTo is the one device allocated to claim ns/name.
func allocatedTo(t *testing.T, claims []*resourceapi.ResourceClaim, ns, name string) string {
	t.Helper()
	for _, c := range claims {
		if c.Namespace == ns && c.Name == name {
			require.Len(t, c.Status.Allocation.Devices.Results, 1)
			return c.Status.Allocation.Devices.Results[0].Device
		}
	}
	require.Failf(t, "no such claim", "%s/%s", ns, name)
	return ""
}

// bindViewer binds the chart's viewer ClusterRole to user (as
// docs/install.md says) and returns a kubeconfig of that user.
func bindViewer(t *testing.T, user string) string {
	t.Helper()
	b, err := cluster.Admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: livecluster.ViewerRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cluster.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
	})
	kc, err := cluster.UserKubeconfig(user)
	require.NoError(t, err)
	return kc
}

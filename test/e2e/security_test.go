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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// probeDriver is a driver no agent serves, so no ResourceSlice controller
// deletes the probe slices as obsolete while the test looks at them; the
// chart's policy refuses it to the agent.
const probeDriver = "e2e-probe.accel-dra.dev"

func probeSlice(name, node string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:  probeDriver,
			Pool:    resourceapi.ResourcePool{Name: "probe-" + name, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "probe-0"}},
		},
	}
	if node == "" {
		s.Spec.AllNodes = ptr.To(true)
	} else {
		s.Spec.NodeName = ptr.To(node)
	}
	return s
}

func clientFor(t *testing.T, token string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.RESTConfigForToken(token))
	require.NoError(t, err)
	return cs
}

// requireRefusedByPolicy expects the chart's ValidatingAdmissionPolicy to
// deny a write. The API server compiles a new policy asynchronously, so
// the write is retried for a while until it is refused.
func requireRefusedByPolicy(t *testing.T, message string, write func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = write(ctx)
		return last != nil, nil
	})
	require.NoError(t, err, "the write was never refused")
	require.Error(t, last)
	assert.True(t, apierrors.IsInvalid(last) || apierrors.IsForbidden(last), "refused as invalid or forbidden: %v", last)
	assert.Contains(t, last.Error(), "ValidatingAdmissionPolicy")
	assert.Contains(t, last.Error(), message)
}

// TestTheNodeAgentTokenOnlyWritesItsOwnNodesSlicesAndNothingElse uses
// the real node agent's credentials: a ServiceAccount token of the
// chart's ServiceAccount bound to a pod on the real node, so it carries
// the node's name. The chart's RBAC and ValidatingAdmissionPolicy must let
// it write that node's ResourceSlices only, read claims but not change
// them, and read no Secrets.
func TestTheNodeAgentTokenOnlyWritesItsOwnNodesSlicesAndNothingElse(t *testing.T) {
	own := cluster.RealNode()
	other := "train-0"
	agent := clientFor(t, cluster.Agents[own].Token)
	slices := agent.ResourceV1().ResourceSlices()

	t.Run("it writes a ResourceSlice of its own node", func(t *testing.T) {
		// Its own drivers' pools on its node are the only slices it may
		// write, and its agent's ResourceSlice controller owns them: the
		// probe changes a label of one, which the controller leaves alone.
		ctx := t.Context()
		list, err := cluster.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + own})
		require.NoError(t, err)
		require.NotEmpty(t, list.Items, "the agent of %s published its slices", own)
		s := list.Items[0].DeepCopy()
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["e2e-probe"] = "true"
		s, err = slices.Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
		delete(s.Labels, "e2e-probe")
		_, err = slices.Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
	})

	t.Run("the policy refuses a ResourceSlice of another driver on its own node", func(t *testing.T) {
		requireRefusedByPolicy(t, "may only write ResourceSlices of its drivers ascend.accel-dra.dev and cambricon.accel-dra.dev, not of "+probeDriver, func(ctx context.Context) error {
			s, err := slices.Create(ctx, probeSlice("e2e-probe-driver", own), metav1.CreateOptions{})
			if err == nil {
				_ = cluster.Admin.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
			return err
		})
	})

	t.Run("the policy refuses a ResourceSlice of its driver in another pool", func(t *testing.T) {
		requireRefusedByPolicy(t, "may only write ResourceSlices of pool "+own+", not of pool probe-e2e-probe-pool", func(ctx context.Context) error {
			p := probeSlice("e2e-probe-pool", own)
			p.Spec.Driver = ascend.Driver
			s, err := slices.Create(ctx, p, metav1.CreateOptions{})
			if err == nil {
				_ = cluster.Admin.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
			return err
		})
	})

	t.Run("the policy refuses a ResourceSlice of another node", func(t *testing.T) {
		requireRefusedByPolicy(t, "may only write ResourceSlices of its own node, not of node "+other, func(ctx context.Context) error {
			s, err := slices.Create(ctx, probeSlice("e2e-probe-other", other), metav1.CreateOptions{})
			if err == nil {
				_ = cluster.Admin.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
			return err
		})
	})

	t.Run("the policy refuses to change or delete another node's published slices", func(t *testing.T) {
		ctx := t.Context()
		list, err := cluster.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + other})
		require.NoError(t, err)
		require.NotEmpty(t, list.Items, "the agent of %s published its slices", other)
		victim := list.Items[0]
		requireRefusedByPolicy(t, "not of node "+other, func(ctx context.Context) error {
			s := victim.DeepCopy()
			s.Spec.Devices = nil
			_, err := slices.Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
		requireRefusedByPolicy(t, "not of node "+other, func(ctx context.Context) error {
			return slices.Delete(ctx, victim.Name, metav1.DeleteOptions{})
		})
		after, err := cluster.Admin.ResourceV1().ResourceSlices().Get(ctx, victim.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, victim.ResourceVersion, after.ResourceVersion, "the slice of %s is unchanged", other)
	})

	t.Run("the policy refuses a ResourceSlice for all nodes", func(t *testing.T) {
		requireRefusedByPolicy(t, "slices without spec.nodeName", func(ctx context.Context) error {
			s, err := slices.Create(ctx, probeSlice("e2e-probe-all", ""), metav1.CreateOptions{})
			if err == nil {
				_ = cluster.Admin.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
			return err
		})
	})

	t.Run("a token of the ServiceAccount that is bound to no pod has no node and is refused", func(t *testing.T) {
		tr, err := cluster.Admin.CoreV1().ServiceAccounts(framework.AgentNamespace).CreateToken(t.Context(), cluster.Chart.ServiceAccount,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		unbound := clientFor(t, tr.Status.Token).ResourceV1().ResourceSlices()
		requireRefusedByPolicy(t, "no node name in the user's credentials", func(ctx context.Context) error {
			s, err := unbound.Create(ctx, probeSlice("e2e-probe-unbound", own), metav1.CreateOptions{})
			if err == nil {
				_ = cluster.Admin.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
			return err
		})
	})

	t.Run("it cannot read Secrets", func(t *testing.T) {
		for _, ns := range []string{"kube-system", framework.AgentNamespace, "default"} {
			_, err := agent.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
			assert.True(t, apierrors.IsForbidden(err), "listing Secrets in %s: %v", ns, err)
			_, err = agent.CoreV1().Secrets(ns).Get(t.Context(), "any", metav1.GetOptions{})
			assert.True(t, apierrors.IsForbidden(err), "getting a Secret in %s: %v", ns, err)
		}
	})

	t.Run("it reads ResourceClaims but cannot create, change or delete them", func(t *testing.T) {
		ns := newNamespace(t)
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses"},
			Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{exactly("npu", "ascend.accel-dra.dev", 1)}}},
		}
		claim, err := cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{})
		require.NoError(t, err)
		claims := agent.ResourceV1().ResourceClaims(ns)

		got, err := claims.Get(t.Context(), claim.Name, metav1.GetOptions{})
		require.NoError(t, err, "NodePrepareResources reads the claim")
		got.Labels = map[string]string{"tampered": "true"}
		_, err = claims.Update(t.Context(), got, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "update: %v", err)
		got.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "npu", Driver: ascend.Driver, Pool: own, Device: "npu-0"},
		}}}
		_, err = claims.UpdateStatus(t.Context(), got, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "status update: %v", err)
		err = claims.Delete(t.Context(), claim.Name, metav1.DeleteOptions{})
		assert.True(t, apierrors.IsForbidden(err), "delete: %v", err)
		fresh := claim.DeepCopy()
		fresh.ResourceVersion, fresh.UID, fresh.Name = "", "", "agent-made"
		_, err = claims.Create(t.Context(), fresh, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "create: %v", err)
		_, err = agent.ResourceV1().ResourceClaims("").List(t.Context(), metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "list: %v", err)
	})

	t.Run("it writes device status only for its drivers and claims allocated on its node", func(t *testing.T) {
		ns := newNamespace(t)
		// Claims allocated by hand (as the scheduler would) on a device no
		// other test uses; the namespace goes with the test.
		allocatedOn := func(name, node string) *resourceapi.ResourceClaim {
			c := &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
					exactly("npu", "ascend.accel-dra.dev", 1), exactly("probe", "ascend.accel-dra.dev", 1)}}},
			}
			c, err := cluster.Admin.ResourceV1().ResourceClaims(ns).Create(t.Context(), c, metav1.CreateOptions{})
			require.NoError(t, err)
			c.Status.Allocation = &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
					{Request: "npu", Driver: ascend.Driver, Pool: node, Device: "npu-7"},
					{Request: "probe", Driver: probeDriver, Pool: node, Device: "probe-0"},
				}},
				NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
				}}}},
			}
			c, err = cluster.Admin.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), c, metav1.UpdateOptions{})
			require.NoError(t, err)
			return c
		}
		apply := func(c *resourceapi.ResourceClaim, driver, pool, device string) error {
			ac := resourceac.ResourceClaim(c.Name, c.Namespace).WithStatus(resourceac.ResourceClaimStatus().WithDevices(
				resourceac.AllocatedDeviceStatus().WithDriver(driver).WithPool(pool).WithDevice(device)))
			_, err := agent.ResourceV1().ResourceClaims(c.Namespace).ApplyStatus(t.Context(), ac, metav1.ApplyOptions{FieldManager: "e2e-" + driver, Force: true})
			return err
		}
		mine := allocatedOn("on-my-node", own)
		require.NoError(t, apply(mine, ascend.Driver, own, "npu-7"), "status of our driver on the agent's node")
		// The API server's per-driver check answers with a field error
		// (Invalid: status.devices: Forbidden).
		err := apply(mine, probeDriver, own, "probe-0")
		require.Error(t, err, "status of another driver")
		assert.Contains(t, err.Error(), `changing status.devices requires resource="resourceclaims/driver"`)
		assert.Contains(t, err.Error(), "cannot associated-node:patch")
		elsewhere := allocatedOn("on-another-node", other)
		err = apply(elsewhere, ascend.Driver, other, "npu-7")
		require.Error(t, err, "status of a claim on %s", other)
		assert.Contains(t, err.Error(), "cannot arbitrary-node:patch", "a claim of another node needs arbitrary-node, which the agent lacks")
	})
}

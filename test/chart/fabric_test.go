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

package chart_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

const fabricValues = `
kubeletPlugin:
  fabric:
    leafLabel: volcano.sh/tor
    levelConfigMap: fabric-levels
    superPodScope: hall-2
    mirrorTopotreeSuperPodID: true
`

func TestTheFabricValuesBecomeTheAgentsFlagsAndAReadOfOneConfigMap(t *testing.T) {
	r := renderValues(t, "fabric labels from the admin", fabricValues)
	ctr := agentContainer(t, r.daemonSet(t))
	require.Subset(t, ctr.Args, []string{"--fabric-labels=true", "--fabric-label-interval=5m", "--superpod-scope=hall-2",
		"--fabric-leaf-label=volcano.sh/tor", "--fabric-level-configmap=accel-dra/fabric-levels", "--mirror-topotree-superpodid=true"})

	role := only[*rbacv1.Role](t, r)
	require.Equal(t, namespace, role.Namespace)
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"fabric-levels"}, Verbs: []string{"get"}}}, role.Rules)
	binding := only[*rbacv1.RoleBinding](t, r)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, binding.RoleRef)
	sa := r.serviceAccount(t)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)

	require.Empty(t, objectsOf[*rbacv1.Role](render(t, cases[0])), "no ConfigMap, no Role")
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"}}
}

// relabel is node with labels changed: a value set, or removed where "".
func relabel(n *corev1.Node, change map[string]string) *corev1.Node {
	out := n.DeepCopy()
	out.Labels = maps.Clone(n.Labels)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range change {
		if v == "" {
			delete(out.Labels, k)
		} else {
			out.Labels[k] = v
		}
	}
	return out
}

func TestTheNodePolicyKeepsTheAgentToItsOwnNodesFabricLabels(t *testing.T) {
	r := render(t, cases[0])
	policy, binding := r.nodePolicy(t), r.nodePolicyBinding(t)
	require.Equal(t, policy.Name, binding.Spec.PolicyName)
	require.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, binding.Spec.ValidationActions)
	require.Nil(t, binding.Spec.MatchResources, "the binding covers every Node")
	require.Equal(t, admissionregistrationv1.Fail, *policy.Spec.FailurePolicy)

	sa := r.serviceAccount(t)
	agentName := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	agentOn := func(node string) user.Info {
		return &user.DefaultInfo{Name: agentName, Extra: map[string][]string{"authentication.kubernetes.io/node-name": {node}}}
	}
	a := node("node-a", map[string]string{"kubernetes.io/hostname": "node-a", "volcano.sh/tor": "tor-3"})
	tainted := a.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "example.com/x", Effect: corev1.TaintEffectNoSchedule}}
	annotated := a.DeepCopy()
	annotated.Annotations = map[string]string{"example.com/x": "y"}
	onlyOurs := "the accel-dra node agent may only change labels under accel-dra.dev/, not "
	tests := []struct {
		name    string
		request request
		matched bool
		denied  []string
	}{
		{"the agent may add its fabric labels to its own node",
			request{agentOn("node-a"), admission.Update, relabel(a, map[string]string{"accel-dra.dev/superpod": "sp-1", "accel-dra.dev/fabric-leaf": "tor-3"}), a}, true, nil},
		{"the agent may remove its fabric label",
			request{agentOn("node-a"), admission.Update, a, relabel(a, map[string]string{"accel-dra.dev/fabric-leaf": "tor-3"})}, true, nil},
		{"the agent may not label another node",
			request{agentOn("node-a"), admission.Update, relabel(node("node-b", nil), map[string]string{"accel-dra.dev/superpod": "sp-1"}), node("node-b", nil)}, true,
			[]string{"the accel-dra node agent on node node-a may only write its own Node, not node node-b"}},
		{"the agent may not change another label of its node",
			request{agentOn("node-a"), admission.Update, relabel(a, map[string]string{"volcano.sh/tor": "tor-4"}), a}, true,
			[]string{onlyOurs + "volcano.sh/tor"}},
		{"the agent may not remove another label of its node",
			request{agentOn("node-a"), admission.Update, relabel(a, map[string]string{"kubernetes.io/hostname": ""}), a}, true,
			[]string{onlyOurs + "kubernetes.io/hostname"}},
		{"the mirror label is not the agent's unless the values turn it on",
			request{agentOn("node-a"), admission.Update, relabel(a, map[string]string{"huawei.com/topotree.superpodid": "1"}), a}, true,
			[]string{onlyOurs + "huawei.com/topotree.superpodid"}},
		{"the agent may not taint its node",
			request{agentOn("node-a"), admission.Update, tainted, a}, true,
			[]string{"the accel-dra node agent may only change labels of a Node, not its spec, annotations, finalizers or owner references"}},
		{"the agent may not annotate its node",
			request{agentOn("node-a"), admission.Update, annotated, a}, true,
			[]string{"the accel-dra node agent may only change labels of a Node, not its spec, annotations, finalizers or owner references"}},
		{"the agent may not delete its node",
			request{agentOn("node-a"), admission.Delete, nil, a}, true,
			[]string{"the accel-dra node agent may only change labels of a Node, not delete one"}},
		{"the agent's account without a node-bound token may write nothing",
			request{&user.DefaultInfo{Name: agentName}, admission.Update, relabel(a, map[string]string{"accel-dra.dev/superpod": "sp-1"}), a}, true,
			[]string{"no node name in the user's credentials: the accel-dra node agent must run in a pod with a bound ServiceAccount token (ServiceAccountTokenPodNodeInfo)"}},
		{"another user is not restricted",
			request{&user.DefaultInfo{Name: "system:node:node-a"}, admission.Update, relabel(a, map[string]string{"volcano.sh/tor": "tor-4"}), a}, false, nil},
	}
	cp := compilePolicy(t, policy)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			matched, denied := cp.admit(t, tc.request)
			require.Equal(t, tc.matched, matched, "the policy applies")
			require.Equal(t, tc.denied, denied)
		})
	}

	t.Run("with the mirror on the agent may write the mirror label", func(t *testing.T) {
		mirror := compilePolicy(t, renderValues(t, "fabric labels from the admin", fabricValues).nodePolicy(t))
		matched, denied := mirror.admit(t, request{agentOn("node-a"), admission.Update, relabel(a, map[string]string{"huawei.com/topotree.superpodid": "1"}), a})
		require.True(t, matched)
		require.Empty(t, denied)
	})
}

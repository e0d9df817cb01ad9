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
	"context"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	require.NoError(t, err)
	return q
}

// expression is a policy expression for the apiserver's CEL compiler.
type expression struct {
	name, expr string
	returns    *cel.Type
}

func (e expression) GetExpression() string    { return e.expr }
func (e expression) ReturnTypes() []*cel.Type { return []*cel.Type{e.returns} }
func (e expression) GetName() string          { return e.name }
func accessors(es ...expression) []plugincel.ExpressionAccessor {
	out := make([]plugincel.ExpressionAccessor, len(es))
	for i := range es {
		out[i] = es[i]
	}
	return out
}

// compiledPolicy is a ValidatingAdmissionPolicy compiled the way the
// apiserver's ValidatingAdmissionPolicy plugin does
// (k8s.io/apiserver/pkg/admission/plugin/policy/validating, compilePolicy:
// variables composed first, then match conditions, validations and
// message expressions), in the environment for new expressions that the
// apiserver checks a created policy with.
type compiledPolicy struct {
	policy          *admissionregistrationv1.ValidatingAdmissionPolicy
	matchConditions plugincel.ConditionEvaluator
	validations     plugincel.ConditionEvaluator
	messages        map[int]plugincel.ConditionEvaluator
}

func compilePolicy(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) *compiledPolicy {
	t.Helper()
	require.Nil(t, p.Spec.ParamKind)
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	require.NoError(t, err)
	withAuthorizer := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range p.Spec.Variables {
		result := compiler.CompileAndStoreVariable(expression{v.Name, v.Expression, cel.AnyType}, withAuthorizer, environment.NewExpressions)
		require.Nil(t, result.Error, "variable %s: %s", v.Name, v.Expression)
	}
	var matches, validations []expression
	for _, m := range p.Spec.MatchConditions {
		matches = append(matches, expression{m.Name, m.Expression, cel.BoolType})
	}
	for _, v := range p.Spec.Validations {
		validations = append(validations, expression{"", v.Expression, cel.BoolType})
	}
	cp := &compiledPolicy{
		policy:          p,
		matchConditions: compiler.CompileCondition(accessors(matches...), withAuthorizer, environment.NewExpressions),
		validations:     compiler.CompileCondition(accessors(validations...), withAuthorizer, environment.NewExpressions),
		messages:        map[int]plugincel.ConditionEvaluator{},
	}
	require.Empty(t, cp.matchConditions.CompilationErrors())
	require.Empty(t, cp.validations.CompilationErrors())
	for i, v := range p.Spec.Validations {
		if v.MessageExpression == "" {
			continue
		}
		cp.messages[i] = compiler.CompileCondition(accessors(expression{"", v.MessageExpression, cel.StringType}), plugincel.OptionalVariableDeclarations{}, environment.NewExpressions)
		require.Empty(t, cp.messages[i].CompilationErrors(), "messageExpression %s", v.MessageExpression)
	}
	return cp
}

// request is one write to a ResourceSlice or a Node.
type request struct {
	user      user.Info
	operation admission.Operation
	object    runtime.Object
	oldObject runtime.Object
}

// kindOf is the kind and resource of a request's objects.
func kindOf(t *testing.T, r request) (schema.GroupVersionKind, schema.GroupVersionResource) {
	t.Helper()
	obj := r.object
	if obj == nil {
		obj = r.oldObject
	}
	switch obj.(type) {
	case *resourcev1.ResourceSlice:
		return resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"), resourcev1.SchemeGroupVersion.WithResource("resourceslices")
	case *corev1.Node:
		return corev1.SchemeGroupVersion.WithKind("Node"), corev1.SchemeGroupVersion.WithResource("nodes")
	}
	require.Failf(t, "no kind", "%T", obj)
	return schema.GroupVersionKind{}, schema.GroupVersionResource{}
}

// admit evaluates the policy for r as the apiserver would and returns
// whether the policy applies to it and the messages of the failed
// validations (none: allowed).
func (cp *compiledPolicy) admit(t *testing.T, r request) (matched bool, denied []string) {
	t.Helper()
	gvk, gvr := kindOf(t, r)
	var obj, old runtime.Object
	name := ""
	if r.object != nil {
		obj, name = r.object, r.object.(metav1.Object).GetName()
	}
	if r.oldObject != nil {
		old, name = r.oldObject, r.oldObject.(metav1.Object).GetName()
	}
	attr := admission.NewAttributesRecord(obj, old, gvk, "", name, gvr, "", r.operation, nil, false, r.user)
	versioned := &admission.VersionedAttributes{
		Attributes:         attr,
		VersionedKind:      gvk,
		VersionedObject:    admission.NewLazyObject(obj),
		VersionedOldObject: admission.NewLazyObject(old),
	}
	req := plugincel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	evaluate := func(e plugincel.ConditionEvaluator) []plugincel.EvaluationResult {
		results, _, err := e.ForInput(context.Background(), versioned, req, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
		require.NoError(t, err)
		for _, res := range results {
			require.NoError(t, res.Error, "evaluating %s", res.ExpressionAccessor.GetExpression())
		}
		return results
	}
	for _, res := range evaluate(cp.matchConditions) {
		if res.EvalResult.Value() != true {
			return false, nil
		}
	}
	for i, res := range evaluate(cp.validations) {
		if res.EvalResult.Value() == true {
			continue
		}
		msg := cp.policy.Spec.Validations[i].Message
		if e, ok := cp.messages[i]; ok {
			msg = evaluate(e)[0].EvalResult.Value().(string)
		}
		denied = append(denied, msg)
	}
	return true, denied
}

func slice(node string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-ascend.accel-dra.dev-abcde"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: "ascend.accel-dra.dev",
			Pool:   resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
		},
	}
	if node == "" {
		s.Name = "cluster-wide"
		s.Spec.AllNodes = new(bool)
		*s.Spec.AllNodes = true
	} else {
		s.Spec.NodeName = &node
	}
	return s
}

// of sets a slice's driver and pool.
func of(s *resourcev1.ResourceSlice, driver, pool string) *resourcev1.ResourceSlice {
	s.Spec.Driver, s.Spec.Pool.Name = driver, pool
	return s
}

func TestTheAdmissionPolicyKeepsTheAgentToItsOwnNodesSlices(t *testing.T) {
	policy, binding := admissionPolicyFor(t, cases[0])
	sa := render(t, cases[0]).serviceAccount(t)

	require.Equal(t, policy.Name, binding.Spec.PolicyName)
	require.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, binding.Spec.ValidationActions)
	require.Nil(t, binding.Spec.ParamRef)
	require.Nil(t, binding.Spec.MatchResources, "the binding covers every ResourceSlice")
	require.Equal(t, admissionregistrationv1.Fail, *policy.Spec.FailurePolicy)
	require.Equal(t, admissionregistrationv1.Equivalent, *policy.Spec.MatchConstraints.MatchPolicy)
	require.Equal(t, []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"resourceslices"}},
	}}}, policy.Spec.MatchConstraints.ResourceRules)

	cp := compilePolicy(t, policy)
	agentName := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	agentOn := func(node string) user.Info {
		return &user.DefaultInfo{Name: agentName, Groups: []string{"system:serviceaccounts", "system:authenticated"},
			Extra: map[string][]string{"authentication.kubernetes.io/node-name": {node}}}
	}
	tests := []struct {
		name    string
		request request
		matched bool
		denied  []string
	}{
		{"the agent may create a slice of its own node",
			request{agentOn("node-a"), admission.Create, slice("node-a"), nil}, true, nil},
		{"the agent may update a slice of its own node",
			request{agentOn("node-a"), admission.Update, slice("node-a"), slice("node-a")}, true, nil},
		{"the agent may delete a slice of its own node",
			request{agentOn("node-a"), admission.Delete, nil, slice("node-a")}, true, nil},
		{"the agent may not create a slice of another node",
			request{agentOn("node-a"), admission.Create, slice("node-b"), nil}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of its own node, not of node node-b"}},
		{"the agent may not move a slice to another node",
			request{agentOn("node-a"), admission.Update, slice("node-b"), slice("node-a")}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of its own node, not of node node-b"}},
		{"the agent may not delete a slice of another node",
			request{agentOn("node-a"), admission.Delete, nil, slice("node-b")}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of its own node, not of node node-b"}},
		{"the agent may not create a slice for all nodes",
			request{agentOn("node-a"), admission.Create, slice(""), nil}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of its own node, not slices without spec.nodeName"}},
		{"the agent may write a Cambricon slice of its own node",
			request{agentOn("node-a"), admission.Update, of(slice("node-a"), "cambricon.accel-dra.dev", "node-a"), of(slice("node-a"), "cambricon.accel-dra.dev", "node-a")}, true, nil},
		{"the agent may not create a slice of another driver",
			request{agentOn("node-a"), admission.Create, of(slice("node-a"), "gpu.example.com", "node-a"), nil}, true,
			[]string{"the accel-dra node agent may only write ResourceSlices of its drivers ascend.accel-dra.dev and cambricon.accel-dra.dev, not of gpu.example.com"}},
		{"the agent may not turn another driver's slice into its own",
			request{agentOn("node-a"), admission.Update, slice("node-a"), of(slice("node-a"), "gpu.example.com", "node-a")}, true,
			[]string{"the accel-dra node agent may only write ResourceSlices of its drivers ascend.accel-dra.dev and cambricon.accel-dra.dev, not of gpu.example.com"}},
		{"the agent may not delete another driver's slice of its node",
			request{agentOn("node-a"), admission.Delete, nil, of(slice("node-a"), "gpu.example.com", "node-a")}, true,
			[]string{"the accel-dra node agent may only write ResourceSlices of its drivers ascend.accel-dra.dev and cambricon.accel-dra.dev, not of gpu.example.com"}},
		{"the agent may not create a slice of another pool",
			request{agentOn("node-a"), admission.Create, of(slice("node-a"), "ascend.accel-dra.dev", "node-b"), nil}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of pool node-a, not of pool node-b"}},
		{"the agent may not move its slice into another pool",
			request{agentOn("node-a"), admission.Update, of(slice("node-a"), "ascend.accel-dra.dev", "node-b"), slice("node-a")}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of pool node-a, not of pool node-b"}},
		{"the agent may not delete a slice of another pool on its node",
			request{agentOn("node-a"), admission.Delete, nil, of(slice("node-a"), "ascend.accel-dra.dev", "shared")}, true,
			[]string{"the accel-dra node agent on node node-a may only write ResourceSlices of pool node-a, not of pool shared"}},
		{"the agent may not take over another node's slice",
			request{agentOn("node-a"), admission.Update, slice("node-a"), slice("node-b")}, true,
			[]string{"the accel-dra node agent on node node-a may not take over a ResourceSlice of node node-b",
				"the accel-dra node agent on node node-a may only write ResourceSlices of pool node-a, not of pool node-b"}},
		{"the agent's account without a node-bound token may write nothing",
			request{&user.DefaultInfo{Name: agentName}, admission.Create, slice("node-a"), nil}, true,
			[]string{
				"no node name in the user's credentials: the accel-dra node agent must run in a pod with a bound ServiceAccount token (ServiceAccountTokenPodNodeInfo)",
			}},
		{"the agent's account with a token without the node name may write nothing",
			request{&user.DefaultInfo{Name: agentName, Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=1"}}}, admission.Create, slice("node-a"), nil}, true,
			[]string{"no node name in the user's credentials: the accel-dra node agent must run in a pod with a bound ServiceAccount token (ServiceAccountTokenPodNodeInfo)"}},
		{"another user is not restricted",
			request{&user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins"}}, admission.Create, slice("node-b"), nil}, false, nil},
		{"an account of the same name in another namespace is not restricted",
			request{&user.DefaultInfo{Name: "system:serviceaccount:default:" + sa.Name,
				Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}}}, admission.Create, slice("node-b"), nil}, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			matched, denied := cp.admit(t, tc.request)
			require.Equal(t, tc.matched, matched, "the policy applies")
			require.Equal(t, tc.denied, denied)
		})
	}
}

package webhook_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// snippet is testdata/chart-snippet.yaml, each object decoded strictly
// into its Kubernetes type.
type snippet struct {
	config  admissionregistrationv1.ValidatingWebhookConfiguration
	service corev1.Service
	deploy  appsv1.Deployment
	pdb     policyv1.PodDisruptionBudget
	// certSecret is the secretName of the cert-manager Certificate with
	// DNS names (the serving one).
	certSecret string
	certDNS    []string
}

func loadSnippet(t *testing.T) snippet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "chart-snippet.yaml"))
	require.NoError(t, err)
	var s snippet
	seen := map[string]int{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var head struct{ APIVersion, Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind == "" {
			continue
		}
		seen[head.Kind]++
		var target any
		switch head.Kind {
		case "ValidatingWebhookConfiguration":
			target = &s.config
		case "Service":
			target = &s.service
		case "Deployment":
			target = &s.deploy
		case "PodDisruptionBudget":
			target = &s.pdb
		case "Certificate", "Issuer":
			require.Equal(t, "cert-manager.io/v1", head.APIVersion)
			var cert struct {
				Spec struct {
					SecretName string   `json:"secretName"`
					DNSNames   []string `json:"dnsNames"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &cert))
			if len(cert.Spec.DNSNames) > 0 {
				s.certSecret, s.certDNS = cert.Spec.SecretName, cert.Spec.DNSNames
			}
			continue
		default:
			t.Fatalf("unexpected kind %s in the snippet", head.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), target), head.Kind)
	}
	require.Equal(t, map[string]int{"ValidatingWebhookConfiguration": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1, "Issuer": 2, "Certificate": 2}, seen)
	return s
}

func TestTheChartSnippetMatchesTheServer(t *testing.T) {
	s := loadSnippet(t)
	svc := s.service
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, intstr.FromString("https"), svc.Spec.Ports[0].TargetPort)

	resources := map[string]string{}
	for _, w := range s.config.Webhooks {
		require.Equal(t, []string{"v1"}, w.AdmissionReviewVersions, w.Name)
		require.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects, w.Name)
		require.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy, w.Name+": the documented default")
		require.Equal(t, admissionregistrationv1.Equivalent, *w.MatchPolicy, w.Name+": other versions must be converted to v1")
		ref := w.ClientConfig.Service
		require.NotNil(t, ref, w.Name)
		require.Equal(t, webhook.ValidatePath, *ref.Path, w.Name)
		require.Equal(t, svc.Name, ref.Name, w.Name)
		require.Equal(t, svc.Namespace, ref.Namespace, w.Name)
		require.Equal(t, svc.Spec.Ports[0].Port, *ref.Port, w.Name)
		require.Len(t, w.Rules, 1, w.Name)
		r := w.Rules[0]
		require.Equal(t, []string{"resource.k8s.io"}, r.APIGroups, w.Name)
		require.Equal(t, []string{"v1"}, r.APIVersions, w.Name)
		require.Len(t, r.Resources, 1, w.Name)
		resources[r.Resources[0]] = strings.Join(func() []string {
			var ops []string
			for _, op := range r.Operations {
				ops = append(ops, string(op))
			}
			return ops
		}(), ",")
	}
	require.Equal(t, map[string]string{"resourceclaims": "CREATE", "resourceclaimtemplates": "CREATE", "deviceclasses": "CREATE,UPDATE"}, resources)

	pod := s.deploy.Spec.Template
	require.Equal(t, s.deploy.Spec.Selector.MatchLabels, svc.Spec.Selector)
	require.Equal(t, s.deploy.Spec.Selector.MatchLabels, s.pdb.Spec.Selector.MatchLabels)
	for k, v := range svc.Spec.Selector {
		require.Equal(t, v, pod.Labels[k])
	}
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	require.Len(t, c.Ports, 1)
	require.Equal(t, "https", c.Ports[0].Name)
	require.Contains(t, c.Args, "--port=8443")
	require.Equal(t, int32(8443), c.Ports[0].ContainerPort)
	for probe, path := range map[*corev1.Probe]string{c.StartupProbe: webhook.ReadyzPath, c.ReadinessProbe: webhook.ReadyzPath, c.LivenessProbe: webhook.LivezPath} {
		require.NotNil(t, probe)
		require.Equal(t, path, probe.HTTPGet.Path)
		require.Equal(t, corev1.URISchemeHTTPS, probe.HTTPGet.Scheme)
		require.Equal(t, intstr.FromString("https"), probe.HTTPGet.Port)
	}
	require.Len(t, c.VolumeMounts, 1)
	mount := c.VolumeMounts[0]
	require.Contains(t, c.Args, "--tls-cert-file="+mount.MountPath+"/tls.crt")
	require.Contains(t, c.Args, "--tls-private-key-file="+mount.MountPath+"/tls.key")
	require.Len(t, pod.Spec.Volumes, 1)
	require.Equal(t, mount.Name, pod.Spec.Volumes[0].Name)
	require.Equal(t, s.certSecret, pod.Spec.Volumes[0].Secret.SecretName)
	require.Contains(t, s.certDNS, svc.Name+"."+svc.Namespace+".svc", "the API server calls <service>.<namespace>.svc")
}

// TestTheMatchConditionsSendOnlyObjectsWithOurConfigs evaluates the
// snippet's matchConditions with the API server's own webhook matcher
// (k8s.io/apiserver), on objects serialized from their types, so a typo
// cannot silently turn the webhook off: with failurePolicy Ignore a CEL
// error skips the webhook. The test evaluates with Fail to see errors.
func TestTheMatchConditionsSendOnlyObjectsWithOurConfigs(t *testing.T) {
	s := loadSnippet(t)
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	// matches runs webhook name's matcher for a create of obj (YAML).
	matches := func(t *testing.T, name, obj string) bool {
		t.Helper()
		var hook *admissionregistrationv1.ValidatingWebhook
		for i := range s.config.Webhooks {
			if s.config.Webhooks[i].Name == name {
				hook = s.config.Webhooks[i].DeepCopy()
			}
		}
		require.NotNil(t, hook, name)
		require.NotEmpty(t, hook.MatchConditions, name)
		fail := admissionregistrationv1.Fail
		hook.FailurePolicy = &fail
		// As the API server compiles a webhook's matchConditions
		// (k8s.io/apiserver/pkg/admission/plugin/webhook/accessors.go,
		// GetCompiledMatcher).
		var expressions []plugincel.ExpressionAccessor
		for _, mc := range hook.MatchConditions {
			expressions = append(expressions, &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression})
		}
		matcher := matchconditions.NewMatcher(compiler.CompileCondition(expressions,
			plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}, environment.StoredExpressions),
			hook.FailurePolicy, "webhook", "validating", name)

		typed := typedObject(t, obj)
		gvk := typed.GetObjectKind().GroupVersionKind()
		resource := map[string]string{"ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates", "DeviceClass": "deviceclasses"}[gvk.Kind]
		accessor, err := meta.Accessor(typed)
		require.NoError(t, err)
		attrs := admission.NewAttributesRecord(typed, nil, gvk, accessor.GetNamespace(), accessor.GetName(),
			gvk.GroupVersion().WithResource(resource), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
		result := matcher.Match(context.Background(), &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(typed), VersionedKind: gvk}, nil, nil)
		require.NoError(t, result.Error, "%s on\n%s", name, obj)
		return result.Matches
	}
	noConfig := strings.Split(claim("resource.k8s.io/v1", ""), "    config:\n")[0]
	tests := []struct {
		name, webhook, object string
		want                  bool
	}{
		{"a claim with an Ascend config", "resourceclaims.accel-dra.dev", claim("resource.k8s.io/v1", cfg(ascend, "", "AscendConfig", "")), true},
		{"a claim with a Cambricon config after another driver's", "resourceclaims.accel-dra.dev",
			claim("resource.k8s.io/v1", cfg("gpu.example.com", "", "GpuConfig", "")+cfg(cambricon, "", "CambriconConfig", "")), true},
		{"a claim with only another driver's config", "resourceclaims.accel-dra.dev", claim("resource.k8s.io/v1", cfg("gpu.example.com", "", "GpuConfig", "")), false},
		{"a claim without configs", "resourceclaims.accel-dra.dev", noConfig, false},
		{"a template with an Ascend config", "resourceclaimtemplates.accel-dra.dev", template(cfg(ascend, "", "AscendConfig", "")), true},
		{"a template with another driver's config", "resourceclaimtemplates.accel-dra.dev", template(cfg("gpu.example.com", "", "GpuConfig", "")), false},
		{"a DeviceClass with an Ascend config", "deviceclasses.accel-dra.dev", class(cfg(ascend, "", "AscendConfig", "")), true},
		{"a DeviceClass without configs", "deviceclasses.accel-dra.dev", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: c}\nspec: {}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, matches(t, tt.webhook, tt.object))
		})
	}
	t.Run("the demo's claims and templates are sent only with a config of ours", func(t *testing.T) {
		for _, obj := range demoObjects(t) {
			hook := map[string]string{"ResourceClaim": "resourceclaims.accel-dra.dev", "ResourceClaimTemplate": "resourceclaimtemplates.accel-dra.dev", "DeviceClass": "deviceclasses.accel-dra.dev"}[obj.kind]
			want := strings.Contains(obj.yaml, "driver: ascend.accel-dra.dev") || strings.Contains(obj.yaml, "driver: cambricon.accel-dra.dev")
			require.Equal(t, want, matches(t, hook, obj.yaml), obj.source)
		}
	})
}

// typedObject decodes obj (YAML) strictly into its resource.k8s.io/v1 type,
// as the API server holds it.
func typedObject(t *testing.T, obj string) runtime.Object {
	t.Helper()
	var head struct{ Kind string }
	require.NoError(t, yaml.Unmarshal([]byte(obj), &head))
	var typed runtime.Object
	switch head.Kind {
	case "ResourceClaim":
		typed = &resourcev1.ResourceClaim{}
	case "ResourceClaimTemplate":
		typed = &resourcev1.ResourceClaimTemplate{}
	case "DeviceClass":
		typed = &resourcev1.DeviceClass{}
	default:
		t.Fatalf("kind %q", head.Kind)
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(obj), typed))
	return typed
}

type demoObject struct{ source, kind, yaml string }

// demoObjects are the claims, templates and DeviceClasses users start
// from: demo/ and the chart's DeviceClasses.
func demoObjects(t *testing.T) []demoObject {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../demo/*/*.yaml", "../../demo/*.yaml", "../../deployments/helm/accel-dra/deviceclasses/*.yaml"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	var out []demoObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---") {
			var head struct{ APIVersion, Kind string }
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.APIVersion != "resource.k8s.io/v1" {
				continue
			}
			switch head.Kind {
			case "ResourceClaim", "ResourceClaimTemplate", "DeviceClass":
				out = append(out, demoObject{source: f, kind: head.Kind, yaml: doc})
			}
		}
	}
	require.NotEmpty(t, out, "no demo claims found")
	return out
}

func TestTheDemoClaimsAndTheChartsDeviceClassesAreAllowed(t *testing.T) {
	ts := startServer(t)
	for _, obj := range demoObjects(t) {
		resp := ts.review(t, admissionRequest(t, admissionv1.Create, obj.yaml, ""))
		require.True(t, resp.Allowed, "%s: %+v", obj.source, resp.Result)
	}
}

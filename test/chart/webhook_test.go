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
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// webhookCase is one values file and the admission webhook it must render.
type webhookCase struct {
	name   string
	values string
	// enabled: the webhook's objects are rendered at all.
	enabled bool
	// fullname and namespace of the release's objects.
	fullname, namespace string
	// certManager: cert-manager makes the serving certificate, signed by
	// issuerRef, or by the release's own CA when issuerRef is nil.
	certManager bool
	issuerRef   map[string]any
	// What the values set.
	failurePolicy  admissionregistrationv1.FailurePolicyType
	timeoutSeconds int32
	replicas       int32
	verbosity      string
	logFormat      string
	resources      corev1.ResourceRequirements
	tolerations    []corev1.Toleration
	nodeSelector   map[string]string
	podAnnotations map[string]string
}

// defaultWebhookResources are webhook.resources of values.yaml.
var defaultWebhookResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{"cpu": resource.MustParse("10m"), "memory": resource.MustParse("32Mi")},
	Limits:   corev1.ResourceList{"memory": resource.MustParse("128Mi")},
}

// webhookCases; the first is the default values. Fields left empty mean
// the defaults (see withDefaults).
var webhookCases = []webhookCase{
	{
		name:    "the default values: on, with a certificate made by Helm",
		values:  "",
		enabled: true,
	},
	{
		name:    "off",
		values:  "webhook: {enabled: false}",
		enabled: false,
	},
	{
		name:        "cert-manager with the release's own CA",
		values:      "webhook: {certManager: {enabled: true}}",
		enabled:     true,
		certManager: true,
	},
	{
		name: "cert-manager with an existing ClusterIssuer",
		values: `
webhook:
  certManager:
    enabled: true
    issuerRef: {name: corp-ca, kind: ClusterIssuer, group: cert-manager.io}
`,
		enabled:     true,
		certManager: true,
		issuerRef:   map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
	},
	{
		name: "failurePolicy Fail, three replicas on system nodes, other names",
		values: `
fullnameOverride: dra
namespaceOverride: accel-system
logging: {format: json}
webhook:
  failurePolicy: Fail
  replicas: 3
  timeoutSeconds: 10
  logVerbosity: 4
  resources:
    requests: {cpu: 20m, memory: 40Mi}
    limits: {cpu: 500m, memory: 200Mi}
  tolerations:
  - {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}
  nodeSelector: {node-role.example.com/system: "true"}
  podAnnotations: {example.com/team: ml-platform}
`,
		enabled:        true,
		fullname:       "dra",
		namespace:      "accel-system",
		failurePolicy:  admissionregistrationv1.Fail,
		timeoutSeconds: 10,
		replicas:       3,
		verbosity:      "4",
		logFormat:      "json",
		resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("20m"), "memory": resource.MustParse("40Mi")},
			Limits:   corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("200Mi")},
		},
		tolerations:    []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		nodeSelector:   map[string]string{"node-role.example.com/system": "true"},
		podAnnotations: map[string]string{"example.com/team": "ml-platform"},
	},
}

// withDefaults fills in the default values for the fields c leaves empty.
func (c webhookCase) withDefaults(t *testing.T) webhookCase {
	if c.fullname == "" {
		c.fullname = fullname
	}
	if c.namespace == "" {
		c.namespace = namespace
	}
	if c.failurePolicy == "" {
		c.failurePolicy = admissionregistrationv1.Ignore
	}
	if c.timeoutSeconds == 0 {
		c.timeoutSeconds = 5
	}
	if c.replicas == 0 {
		c.replicas = 2
	}
	if c.verbosity == "" {
		c.verbosity = "2"
	}
	if c.logFormat == "" {
		c.logFormat = "text"
	}
	if c.resources.Requests == nil {
		c.resources = defaultWebhookResources
	}
	return c
}

func (c webhookCase) caseName() string { return "webhook: " + c.name }

// webhookName names the Service, Deployment, PodDisruptionBudget,
// ValidatingWebhookConfiguration and serving Certificate.
func (c webhookCase) webhookName() string { return c.fullname + "-webhook" }

// secretName is the Secret the webhook serves from; Helm's and
// cert-manager's have different names.
func (c webhookCase) secretName() string {
	if c.certManager {
		return c.webhookName() + "-cert-manager-tls"
	}
	return c.webhookName() + "-tls"
}

// dnsNames are the names the API server calls the Service by.
func (c webhookCase) dnsNames() []string {
	svc := c.webhookName() + "." + c.namespace + ".svc"
	return []string{svc, svc + ".cluster.local"}
}

// kinds are the kinds of the webhook's objects, as rendering.kinds names them.
func (c webhookCase) kinds() []string {
	if !c.enabled {
		return nil
	}
	kinds := []string{"*v1.ValidatingWebhookConfiguration", "*v1.Service", "*v1.Deployment", "*v1.PodDisruptionBudget"}
	switch {
	case !c.certManager:
		kinds = append(kinds, "*v1.Secret")
	case c.issuerRef == nil:
		kinds = append(kinds, "cert-manager.io/v1 Issuer", "cert-manager.io/v1 Issuer", "cert-manager.io/v1 Certificate", "cert-manager.io/v1 Certificate")
	default:
		kinds = append(kinds, "cert-manager.io/v1 Certificate")
	}
	return kinds
}

func renderWebhook(t *testing.T, c webhookCase) *rendering {
	t.Helper()
	return renderValues(t, c.caseName(), c.values)
}

// forWebhookCases runs test for each case whose webhook is enabled and
// matches filter (nil: all).
func forWebhookCases(t *testing.T, filter func(webhookCase) bool, test func(t *testing.T, c webhookCase, r *rendering)) {
	t.Helper()
	ran := false
	for _, c := range webhookCases {
		if !c.enabled || (filter != nil && !filter(c)) {
			continue
		}
		ran = true
		t.Run(c.name, func(t *testing.T) {
			test(t, c.withDefaults(t), renderWebhook(t, c))
		})
	}
	require.True(t, ran, "no case for this test")
}

func helmTLS(c webhookCase) bool     { return !c.certManager }
func certManager(c webhookCase) bool { return c.certManager }

// objectRef is kind namespace/name of a rendered object.
func objectRef(t *testing.T, d document) string {
	t.Helper()
	var head struct{ Kind string }
	require.NoError(t, yaml.Unmarshal([]byte(d.raw), &head))
	accessor, err := meta.Accessor(d.object)
	require.NoError(t, err)
	return head.Kind + " " + accessor.GetNamespace() + "/" + accessor.GetName()
}

func TestTheWebhookObjectsAreRenderedOnlyWhenTheWebhookIsEnabled(t *testing.T) {
	for _, c := range webhookCases {
		t.Run(c.name, func(t *testing.T) {
			c := c.withDefaults(t)
			r := renderWebhook(t, c)
			var got []string
			for _, d := range r.docs {
				accessor, err := meta.Accessor(d.object)
				require.NoError(t, err)
				isWebhook := accessor.GetLabels()["app.kubernetes.io/component"] == "webhook"
				fromWebhookTemplate := strings.HasPrefix(d.source, "accel-dra/templates/webhook-")
				require.Equal(t, fromWebhookTemplate, isWebhook, "%s from %s: the webhook's objects, and only they, come from templates/webhook-*.yaml and carry its component label", objectRef(t, d), d.source)
				if isWebhook {
					require.Equal(t, release, accessor.GetLabels()["app.kubernetes.io/instance"], "%s", objectRef(t, d))
					got = append(got, objectRef(t, d))
				}
			}
			if !c.enabled {
				require.Empty(t, got)
				return
			}
			ns, name := c.namespace, c.webhookName()
			want := []string{
				// Cluster-scoped, named after the release.
				"ValidatingWebhookConfiguration /" + name,
				"Service " + ns + "/" + name,
				"Deployment " + ns + "/" + name,
				"PodDisruptionBudget " + ns + "/" + name,
			}
			switch {
			case !c.certManager:
				want = append(want, "Secret "+ns+"/"+c.secretName())
			case c.issuerRef == nil:
				want = append(want, "Issuer "+ns+"/"+name+"-selfsigned", "Certificate "+ns+"/"+name+"-ca", "Issuer "+ns+"/"+name+"-ca", "Certificate "+ns+"/"+name)
			default:
				want = append(want, "Certificate "+ns+"/"+name)
			}
			require.ElementsMatch(t, want, got)
		})
	}
}

func TestTheWebhookConfigurationSendsOurObjectsToTheService(t *testing.T) {
	type rule struct {
		operations string
		scope      admissionregistrationv1.ScopeType
	}
	want := map[string]map[string]rule{
		"resourceclaims.accel-dra.dev":         {"resourceclaims": {"CREATE", admissionregistrationv1.NamespacedScope}},
		"resourceclaimtemplates.accel-dra.dev": {"resourceclaimtemplates": {"CREATE", admissionregistrationv1.NamespacedScope}},
		"deviceclasses.accel-dra.dev":          {"deviceclasses": {"CREATE,UPDATE", admissionregistrationv1.ClusterScope}},
	}
	forWebhookCases(t, nil, func(t *testing.T, c webhookCase, r *rendering) {
		vwc := r.webhookConfiguration(t)
		svc := r.service(t)
		require.Empty(t, vwc.Namespace, "cluster-scoped")
		require.Equal(t, c.webhookName(), vwc.Name)
		require.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
		require.Len(t, svc.Spec.Ports, 1)
		port := svc.Spec.Ports[0]
		require.Equal(t, corev1.ProtocolTCP, port.Protocol)

		got := map[string]map[string]rule{}
		for _, w := range vwc.Webhooks {
			require.Equal(t, []string{"v1"}, w.AdmissionReviewVersions, w.Name)
			require.Equal(t, ptr.To(admissionregistrationv1.SideEffectClassNone), w.SideEffects, w.Name)
			require.Equal(t, ptr.To(c.failurePolicy), w.FailurePolicy, w.Name)
			require.Equal(t, ptr.To(c.timeoutSeconds), w.TimeoutSeconds, w.Name)
			require.Equal(t, ptr.To(admissionregistrationv1.Equivalent), w.MatchPolicy, w.Name+": other versions must be converted to v1")
			require.Nil(t, w.NamespaceSelector, w.Name)
			require.Nil(t, w.ObjectSelector, w.Name)
			require.Len(t, w.MatchConditions, 1, w.Name)
			require.Nil(t, w.ClientConfig.URL, w.Name)
			require.Equal(t, &admissionregistrationv1.ServiceReference{
				Name: svc.Name, Namespace: svc.Namespace, Path: ptr.To(webhook.ValidatePath), Port: ptr.To(port.Port),
			}, w.ClientConfig.Service, w.Name)
			rules := map[string]rule{}
			for _, r := range w.Rules {
				require.Equal(t, []string{"resource.k8s.io"}, r.APIGroups, w.Name)
				require.Equal(t, []string{"v1"}, r.APIVersions, w.Name)
				var ops []string
				for _, op := range r.Operations {
					ops = append(ops, string(op))
				}
				for _, res := range r.Resources {
					rules[res] = rule{strings.Join(ops, ","), *r.Scope}
				}
			}
			got[w.Name] = rules
		}
		require.Equal(t, want, got)
	})
}

// pemCertificates parses every CERTIFICATE block of data.
func pemCertificates(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", block.Type)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		out = append(out, cert)
	}
	require.NotEmpty(t, out, "no PEM certificate")
	return out
}

// checkServingSecret checks that secret holds a serving certificate for
// the case's DNS names, signed by the CA in every webhook's caBundle, and
// that the real webhook server serves it to a client that trusts only that
// CA and calls the Service's name, as the API server does.
func checkServingSecret(t *testing.T, c webhookCase, secret *corev1.Secret, vwc *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	require.Equal(t, c.secretName(), secret.Name)
	require.Equal(t, c.namespace, secret.Namespace)
	require.Equal(t, corev1.SecretTypeTLS, secret.Type)
	var keys []string
	for k := range secret.Data {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"tls.crt", "tls.key", "ca.crt"}, keys, "the CA's private key is not kept")

	caBundle := secret.Data["ca.crt"]
	for _, w := range vwc.Webhooks {
		require.Equal(t, string(caBundle), string(w.ClientConfig.CABundle), "caBundle of %s is the Secret's CA", w.Name)
	}
	cas := pemCertificates(t, caBundle)
	require.Len(t, cas, 1)
	require.True(t, cas[0].IsCA)
	roots := x509.NewCertPool()
	roots.AddCert(cas[0])

	chain := pemCertificates(t, secret.Data["tls.crt"])
	require.Len(t, chain, 1)
	leaf := chain[0]
	require.False(t, leaf.IsCA)
	require.ElementsMatch(t, c.dnsNames(), leaf.DNSNames)
	for _, name := range c.dnsNames() {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		require.NoError(t, err, "the certificate for %s", name)
	}
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: "other-webhook." + c.namespace + ".svc", Roots: roots})
	require.Error(t, err, "the certificate is for the webhook's Service only")
	require.True(t, leaf.NotAfter.After(time.Now().Add(9*365*24*time.Hour)), "valid for years: nothing renews it (expires %s)", leaf.NotAfter)
	require.True(t, cas[0].NotAfter.After(time.Now().Add(9*365*24*time.Hour)), "the CA expires %s", cas[0].NotAfter)

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, secret.Data["tls.crt"], 0o600))
	require.NoError(t, os.WriteFile(keyFile, secret.Data["tls.key"], 0o600))
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	srv, err := webhook.NewServer(ctx, webhook.Options{Configs: configs, CertFile: certFile, KeyFile: keyFile})
	require.NoError(t, err, "the webhook loads the Secret's key pair")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	// The API server calls https://<service>.<namespace>.svc:443 and
	// trusts only caBundle; here every name is dialled on the listener.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String())
		},
	}}
	url := fmt.Sprintf("https://%s:%d", c.dnsNames()[0], 443)
	require.Eventually(t, func() bool {
		resp, err := client.Get(url + webhook.ReadyzPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  admissionRequest(t, claimWith(opaqueConfig(ascendDriver, "AscendConfig", "envs: {HCCL_CONNECT_TIMEOUT: \"1200\"}"))),
	})
	require.NoError(t, err)
	resp, err := client.Post(url+webhook.ValidatePath, "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &review))
	require.NotNil(t, review.Response)
	require.False(t, review.Response.Allowed, "a misspelt field is denied")
	require.Contains(t, review.Response.Result.Message, `unknown field "envs"`)
}

func TestTheCertificateHelmMakesServesTheServiceNameAndVerifiesAgainstTheCABundle(t *testing.T) {
	forWebhookCases(t, helmTLS, func(t *testing.T, c webhookCase, r *rendering) {
		checkServingSecret(t, c, only[*corev1.Secret](t, r), r.webhookConfiguration(t))
		require.Empty(t, r.webhookConfiguration(t).Annotations, "no cainjector")
		require.Empty(t, objectsOf[*unstructured.Unstructured](r), "no cert-manager objects")
	})
}

// fakeAPIServer answers what `helm template --dry-run=server` asks a
// cluster: its version, the discovery documents of the chart's kinds, and
// GETs of the given Secrets (404 for any other object). It fails the test
// on anything but a GET: a dry run writes nothing. It returns a kubeconfig
// file and the paths requested.
func fakeAPIServer(t *testing.T, secrets ...*corev1.Secret) (kubeconfig string, requested func() []string) {
	t.Helper()
	type res struct {
		name, kind string
		namespaced bool
	}
	groups := map[string][]res{
		"v1":                              {{"secrets", "Secret", true}, {"serviceaccounts", "ServiceAccount", true}, {"services", "Service", true}},
		"apps/v1":                         {{"daemonsets", "DaemonSet", true}, {"deployments", "Deployment", true}},
		"rbac.authorization.k8s.io/v1":    {{"clusterroles", "ClusterRole", false}, {"clusterrolebindings", "ClusterRoleBinding", false}},
		"policy/v1":                       {{"poddisruptionbudgets", "PodDisruptionBudget", true}},
		"admissionregistration.k8s.io/v1": {{"validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false}, {"validatingadmissionpolicies", "ValidatingAdmissionPolicy", false}, {"validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false}},
		"resource.k8s.io/v1":              {{"deviceclasses", "DeviceClass", false}},
	}
	docs := map[string]any{
		"/version": map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.0"},
		"/api":     map[string]any{"kind": "APIVersions", "versions": []string{"v1"}, "serverAddressByClientCIDRs": []any{}},
	}
	var groupList []any
	for gv, resources := range groups {
		var list []any
		for _, r := range resources {
			list = append(list, map[string]any{"name": r.name, "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": []string{"get", "list", "create", "update", "patch", "delete"}})
		}
		path := "/apis/" + gv
		if gv == "v1" {
			path = "/api/v1"
		}
		docs[path] = map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}
		if group, version, ok := strings.Cut(gv, "/"); ok {
			groupList = append(groupList, map[string]any{"name": group, "versions": []any{map[string]string{"groupVersion": gv, "version": version}}, "preferredVersion": map[string]string{"groupVersion": gv, "version": version}})
		}
	}
	docs["/apis"] = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groupList}
	for _, s := range secrets {
		s = s.DeepCopy()
		s.APIVersion, s.Kind = "v1", "Secret"
		docs["/api/v1/namespaces/"+s.Namespace+"/secrets/"+s.Name] = s
	}
	var (
		log  []string
		logC = make(chan string, 1000)
	)
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logC <- r.Method + " " + r.URL.Path
		if r.Method != http.MethodGet {
			t.Errorf("a dry run sent %s %s", r.Method, r.URL)
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		doc, ok := docs[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": r.URL.Path + " not found"})
			return
		}
		_ = json.NewEncoder(w).Encode(doc)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "http://%s"}
users:
- name: fake
  user: {}
contexts:
- name: fake
  context: {cluster: fake, user: fake}
current-context: fake
`, ln.Addr())), 0o600))
	return kubeconfig, func() []string {
		for {
			select {
			case l := <-logC:
				log = append(log, l)
			default:
				return log
			}
		}
	}
}

func TestAnUpgradeKeepsTheWebhooksCertificateAndCA(t *testing.T) {
	c := webhookCases[0].withDefaults(t)
	// A Secret as an earlier release made it.
	earlier := only[*corev1.Secret](t, renderWebhook(t, webhookCases[0]))
	secretPath := "GET /api/v1/namespaces/" + c.namespace + "/secrets/" + c.secretName()

	upgrade := func(t *testing.T, existing ...*corev1.Secret) *rendering {
		t.Helper()
		kubeconfig, requested := fakeAPIServer(t, existing...)
		out, err := helmTemplate(t, "", "--dry-run=server", "--is-upgrade", "--disable-openapi-validation", "--kubeconfig", kubeconfig)
		require.NoError(t, err)
		require.Contains(t, requested(), secretPath, "the chart looks the Secret up")
		r, err := decodeRendering(out)
		require.NoError(t, err)
		return r
	}

	t.Run("the Secret of the earlier release is kept, and its CA stays in caBundle", func(t *testing.T) {
		r := upgrade(t, earlier)
		secret := only[*corev1.Secret](t, r)
		require.Equal(t, earlier.Data, secret.Data)
		checkServingSecret(t, c, secret, r.webhookConfiguration(t))
	})
	t.Run("a Secret without the CA is replaced by a new certificate", func(t *testing.T) {
		partial := earlier.DeepCopy()
		delete(partial.Data, "ca.crt")
		r := upgrade(t, partial)
		secret := only[*corev1.Secret](t, r)
		require.NotEqual(t, string(earlier.Data["tls.crt"]), string(secret.Data["tls.crt"]))
		checkServingSecret(t, c, secret, r.webhookConfiguration(t))
	})
	t.Run("without a Secret, a new certificate", func(t *testing.T) {
		r := upgrade(t)
		secret := only[*corev1.Secret](t, r)
		require.NotEqual(t, string(earlier.Data["ca.crt"]), string(secret.Data["ca.crt"]))
		checkServingSecret(t, c, secret, r.webhookConfiguration(t))
	})
}

func nestedString(t *testing.T, u *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	s, found, err := unstructured.NestedString(u.Object, fields...)
	require.NoError(t, err)
	require.True(t, found, "%s %s: %s", u.GetKind(), u.GetName(), strings.Join(fields, "."))
	return s
}

func TestCertManagerMakesTheCertificateAndInjectsItsCA(t *testing.T) {
	forWebhookCases(t, certManager, func(t *testing.T, c webhookCase, r *rendering) {
		require.Empty(t, objectsOf[*corev1.Secret](r), "cert-manager writes the Secret")
		vwc := r.webhookConfiguration(t)
		for _, w := range vwc.Webhooks {
			require.Empty(t, w.ClientConfig.CABundle, "%s: cainjector fills in caBundle", w.Name)
		}
		byName := map[string]*unstructured.Unstructured{}
		issuers := map[string]*unstructured.Unstructured{}
		for _, u := range r.certManagerObjects("Certificate") {
			require.Equal(t, c.namespace, u.GetNamespace(), u.GetName())
			byName[u.GetName()] = u
		}
		for _, u := range r.certManagerObjects("Issuer") {
			require.Equal(t, c.namespace, u.GetNamespace(), u.GetName())
			issuers[u.GetName()] = u
		}

		// cert-manager.io/inject-ca-from names the serving Certificate.
		ref := vwc.Annotations["cert-manager.io/inject-ca-from"]
		require.Equal(t, c.namespace+"/"+c.webhookName(), ref)
		serving := byName[c.webhookName()]
		require.NotNil(t, serving)
		require.Equal(t, c.secretName(), nestedString(t, serving, "spec", "secretName"))
		require.Equal(t, c.secretName(), r.deployment(t).Spec.Template.Spec.Volumes[0].Secret.SecretName, "the webhook serves the Certificate's Secret")
		dnsNames, _, err := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
		require.NoError(t, err)
		require.Equal(t, c.dnsNames(), dnsNames)
		require.Equal(t, "2160h", nestedString(t, serving, "spec", "duration"))
		require.Equal(t, "720h", nestedString(t, serving, "spec", "renewBefore"))
		require.Equal(t, "Always", nestedString(t, serving, "spec", "privateKey", "rotationPolicy"))
		issuerRef, _, err := unstructured.NestedMap(serving.Object, "spec", "issuerRef")
		require.NoError(t, err)

		if c.issuerRef != nil {
			require.Equal(t, c.issuerRef, issuerRef)
			require.Len(t, byName, 1, "only the serving Certificate")
			require.Empty(t, issuers)
			return
		}
		// The release's own CA: serving Certificate -> CA Issuer -> CA
		// Certificate -> self-signed Issuer.
		require.Len(t, byName, 2)
		require.Len(t, issuers, 2)
		require.Equal(t, "Issuer", issuerRef["kind"])
		caIssuer := issuers[issuerRef["name"].(string)]
		require.NotNil(t, caIssuer, "the serving Certificate's Issuer %v is rendered", issuerRef["name"])
		caSecret := nestedString(t, caIssuer, "spec", "ca", "secretName")
		var caCert *unstructured.Unstructured
		for _, u := range byName {
			if nestedString(t, u, "spec", "secretName") == caSecret {
				caCert = u
			}
		}
		require.NotNil(t, caCert, "a Certificate makes the CA Issuer's Secret %s", caSecret)
		isCA, _, err := unstructured.NestedBool(caCert.Object, "spec", "isCA")
		require.NoError(t, err)
		require.True(t, isCA)
		require.Equal(t, "43800h", nestedString(t, caCert, "spec", "duration"))
		require.Equal(t, "Issuer", nestedString(t, caCert, "spec", "issuerRef", "kind"))
		root := issuers[nestedString(t, caCert, "spec", "issuerRef", "name")]
		require.NotNil(t, root)
		selfSigned, found, err := unstructured.NestedMap(root.Object, "spec", "selfSigned")
		require.NoError(t, err)
		require.True(t, found)
		require.Empty(t, selfSigned)
	})
}

func TestTheWebhookDeploymentRunsTheServerFromTheAgentsImage(t *testing.T) {
	forWebhookCases(t, nil, func(t *testing.T, c webhookCase, r *rendering) {
		deploy := r.deployment(t)
		svc := r.service(t)
		pdb := r.podDisruptionBudget(t)
		ds := r.daemonSet(t)
		require.Equal(t, c.namespace, deploy.Namespace)
		require.Equal(t, ptr.To(c.replicas), deploy.Spec.Replicas)
		require.Equal(t, intstr.FromInt32(0), *deploy.Spec.Strategy.RollingUpdate.MaxUnavailable, "a new pod is ready before an old one stops")

		// One set of selector labels for Deployment, Service and PDB, and
		// none of the agent's pods match it (nor the other way round).
		pod := deploy.Spec.Template
		selector := deploy.Spec.Selector.MatchLabels
		require.Equal(t, selector, svc.Spec.Selector)
		require.Equal(t, selector, pdb.Spec.Selector.MatchLabels)
		require.Equal(t, ptr.To(intstr.FromInt32(1)), pdb.Spec.MaxUnavailable)
		require.Nil(t, pdb.Spec.MinAvailable)
		for k, v := range selector {
			require.Equal(t, v, pod.Labels[k], "pod label %s", k)
		}
		require.Equal(t, "webhook", pod.Labels["app.kubernetes.io/component"])
		require.NotEqual(t, "webhook", ds.Spec.Template.Labels["app.kubernetes.io/component"])
		require.Equal(t, c.podAnnotations, pod.Annotations)
		require.Len(t, pod.Spec.TopologySpreadConstraints, 1)
		require.Equal(t, selector, pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels)

		spec := pod.Spec
		require.Equal(t, ptr.To(false), spec.AutomountServiceAccountToken, "the webhook reads nothing from the API server")
		require.Empty(t, spec.ServiceAccountName)
		require.False(t, spec.HostNetwork)
		require.Equal(t, c.nodeSelector, spec.NodeSelector)
		require.Equal(t, c.tolerations, spec.Tolerations)
		require.Equal(t, &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			RunAsGroup:     ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, spec.SecurityContext)

		require.Len(t, spec.Containers, 1)
		require.Empty(t, spec.InitContainers)
		ctr := spec.Containers[0]
		require.Equal(t, agentContainer(t, ds).Image, ctr.Image, "the agent's image")
		require.Equal(t, []string{"/usr/bin/accel-dra-webhook"}, ctr.Command)
		require.Equal(t, []string{
			"--port=8443",
			"--tls-cert-file=/etc/accel-dra-webhook/tls/tls.crt",
			"--tls-private-key-file=/etc/accel-dra-webhook/tls/tls.key",
			"--v=" + c.verbosity,
			"--logging-format=" + c.logFormat,
		}, ctr.Args)
		require.Equal(t, []corev1.ContainerPort{{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}}, ctr.Ports)
		require.Equal(t, intstr.FromString("https"), svc.Spec.Ports[0].TargetPort)
		for probe, path := range map[*corev1.Probe]string{ctr.StartupProbe: webhook.ReadyzPath, ctr.ReadinessProbe: webhook.ReadyzPath, ctr.LivenessProbe: webhook.LivezPath} {
			require.NotNil(t, probe)
			require.Equal(t, &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}, probe.HTTPGet)
		}
		require.Equal(t, c.resources, ctr.Resources)
		require.Equal(t, &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}, ctr.SecurityContext)
		require.Equal(t, []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/accel-dra-webhook/tls", ReadOnly: true}}, ctr.VolumeMounts)
		require.Equal(t, []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: c.secretName()}}}}, spec.Volumes)
	})
}

// commandFlags are the long flags `go run ./cmd/<command> --help` lists.
func commandFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.Command(goTool, "run", "./cmd/"+command, "--help")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	require.NotEmpty(t, flags)
	return flags
}

func TestEveryFlagTheWebhookDeploymentPassesIsAFlagOfTheWebhook(t *testing.T) {
	flags := commandFlags(t, "accel-dra-webhook")
	forWebhookCases(t, nil, func(t *testing.T, c webhookCase, r *rendering) {
		for _, arg := range r.deployment(t).Spec.Template.Spec.Containers[0].Args {
			name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			require.True(t, flags[name], "accel-dra-webhook --help lists no flag %q (from %s)", name, arg)
		}
	})
}

// make image (hack/image) and make image-docker (the Dockerfile) build the
// same image: both must hold every command the chart runs.
func TestTheImageHoldsEveryCommandTheChartRuns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deployments", "container", "Dockerfile"))
	require.NoError(t, err)
	dockerfile := strings.ReplaceAll(string(data), "\\\n", " ")
	build := regexp.MustCompile(`(?m)^RUN .*go build .*-o /out/ (.*)$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, build, "the Dockerfile's go build into /out/")
	built := map[string]bool{}
	for _, pkg := range strings.Fields(build[1]) {
		built[strings.TrimPrefix(pkg, "./cmd/")] = true
	}
	copied := regexp.MustCompile(`(?m)^COPY --from=build (.*) /usr/bin/$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, copied, "the Dockerfile's COPY into /usr/bin/")
	inImage := map[string]bool{}
	for _, f := range strings.Fields(copied[1]) {
		name := strings.TrimPrefix(f, "/out/")
		require.True(t, built[name], "%s is copied but not built", name)
		inImage["/usr/bin/"+name] = true
	}
	entrypoint := regexp.MustCompile(`(?m)^ENTRYPOINT \["(.*)"\]$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, entrypoint, "the Dockerfile's ENTRYPOINT")

	// The Makefile's IMAGE_BINARIES, the first being the entrypoint.
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	require.NoError(t, err)
	binaries := regexp.MustCompile(`(?m)^IMAGE_BINARIES := (.*)$`).FindStringSubmatch(string(makefile))
	require.NotNil(t, binaries, "the Makefile's IMAGE_BINARIES")
	var made []string
	for _, b := range strings.Fields(binaries[1]) {
		made = append(made, "/usr/bin/"+b)
	}
	require.ElementsMatch(t, made, keys(inImage), "make image and the Dockerfile put the same binaries into /usr/bin")
	require.Equal(t, entrypoint[1], made[0], "make image and the Dockerfile have the same entrypoint")

	r := render(t, cases[0])
	commands := [][]string{agentContainer(t, r.daemonSet(t)).Command, r.deployment(t).Spec.Template.Spec.Containers[0].Command}
	for _, cmd := range commands {
		require.True(t, inImage[cmd[0]], "the image has no %s", cmd[0])
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// make image names the image the chart deploys by default.
func TestMakeImageBuildsTheImageTheChartDeploys(t *testing.T) {
	out, err := exec.Command("make", "--no-print-directory", "-s", "-C", repoRoot(t), "--eval", "print-image: ; @echo $(IMAGE)", "print-image").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, agentContainer(t, render(t, cases[0]).daemonSet(t)).Image, strings.TrimSpace(string(out)))
}

func TestTheNotesSayWhetherAndHowTheWebhookRuns(t *testing.T) {
	notes := func(t *testing.T, values string) string {
		t.Helper()
		out, err := helm(t, "install", "--dry-run=client", release, chartDir(t), "--namespace", namespace, "--values", valuesFile(t, values))
		require.NoError(t, err)
		_, n, ok := strings.Cut(out, "\nNOTES:\n")
		require.True(t, ok, out)
		return n
	}
	t.Run("on", func(t *testing.T) {
		n := notes(t, "")
		require.Contains(t, n, "deployment/accel-dra-webhook (2 replicas,\nfailurePolicy Ignore)")
		require.Contains(t, n, "made by Helm (Secret accel-dra-webhook-tls)")
		require.Contains(t, n, "kubectl get validatingwebhookconfiguration accel-dra-webhook")
		require.NotContains(t, n, "Warning")
	})
	t.Run("cert-manager", func(t *testing.T) {
		require.Contains(t, notes(t, "webhook: {certManager: {enabled: true}}"), "from cert-manager (Certificate accel-dra-webhook)")
	})
	t.Run("Fail with one replica warns", func(t *testing.T) {
		require.Contains(t, notes(t, "webhook: {failurePolicy: Fail, replicas: 1}"), "Warning: with failurePolicy Fail and a single replica")
	})
	t.Run("off", func(t *testing.T) {
		require.NotContains(t, notes(t, "webhook: {enabled: false}"), "webhook")
	})
}

const (
	ascendDriver    = "ascend.accel-dra.dev"
	cambriconDriver = "cambricon.accel-dra.dev"
)

// opaqueConfig is one spec...config entry (YAML, a list item at column 0)
// for driver with parameters of kind and the given fields (YAML mapping).
// For another driver's the parameters are its own.
func opaqueConfig(driver, kind, fields string, requests ...string) string {
	s := "- "
	if len(requests) > 0 {
		s += "requests: [" + strings.Join(requests, ", ") + "]\n  "
	}
	apiVersion := "accel-dra.dev/v1alpha1"
	if driver != ascendDriver && driver != cambriconDriver {
		apiVersion = "gpu.example.com/v1"
	}
	s += fmt.Sprintf("opaque:\n    driver: %s\n    parameters:\n      apiVersion: %s\n      kind: %s\n", driver, apiVersion, kind)
	for _, l := range strings.Split(fields, "\n") {
		if l != "" {
			s += "      " + l + "\n"
		}
	}
	return s
}

func indentYAML(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// claimWith is a ResourceClaim with a request "npus" and configs (list items).
func claimWith(configs ...string) string {
	s := `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train, namespace: default}
spec:
  devices:
    requests:
    - name: npus
      exactly: {deviceClassName: ascend.accel-dra.dev, count: 2}
`
	if len(configs) > 0 {
		s += "    config:\n" + indentYAML(strings.Join(configs, ""), "    ")
	}
	return s
}

func templateWith(configs ...string) string {
	s := `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: serve, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: mlus
        exactly: {deviceClassName: cambricon.accel-dra.dev}
`
	if len(configs) > 0 {
		s += "      config:\n" + indentYAML(strings.Join(configs, ""), "      ")
	}
	return s
}

// shareClaimOf is a claim or template (kind) of one request of class,
// exactly or as a firstAvailable subrequest (way), asking for capacity.
func shareClaimOf(kind, class, way, capacity string) string {
	request := fmt.Sprintf("deviceClassName: %s\ncapacity: {requests: {%s}}\n", class, capacity)
	if way == "firstAvailable" {
		request = "- name: one\n" + indentYAML(request, "  ")
	}
	devices := "devices:\n  requests:\n  - name: npu\n    " + way + ":\n" + indentYAML(request, "      ")
	if kind == "ResourceClaimTemplate" {
		return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: share, namespace: default}\nspec:\n  spec:\n" + indentYAML(devices, "    ")
	}
	return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: share, namespace: default}\nspec:\n" + indentYAML(devices, "  ")
}

func classWith(configs ...string) string {
	s := `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: ascend-hccl.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "ascend.accel-dra.dev"'}
`
	if len(configs) > 0 {
		s += "  config:\n" + indentYAML(strings.Join(configs, ""), "  ")
	}
	return s
}

// typedResourceObject decodes a resource.k8s.io/v1 object strictly.
func typedResourceObject(t *testing.T, obj string) runtime.Object {
	t.Helper()
	typed, _, err := strictDecoder.Decode([]byte(obj), nil, nil)
	require.NoError(t, err, obj)
	switch typed.(type) {
	case *resourcev1.ResourceClaim, *resourcev1.ResourceClaimTemplate, *resourcev1.DeviceClass:
	default:
		t.Fatalf("%T is not a kind the webhook validates", typed)
	}
	return typed
}

// ours says, from the Go types, whether obj has an opaque config for one
// of our drivers, or a claim's request (or subrequest) asks for
// accel-dra.dev/shareUnits, whose size the webhook checks: what the
// matchConditions must select.
func ours(obj runtime.Object) bool {
	var drivers []string
	var devices *resourcev1.DeviceClaim
	switch o := obj.(type) {
	case *resourcev1.ResourceClaim:
		devices = &o.Spec.Devices
	case *resourcev1.ResourceClaimTemplate:
		devices = &o.Spec.Spec.Devices
	case *resourcev1.DeviceClass:
		for _, c := range o.Spec.Config {
			if c.Opaque != nil {
				drivers = append(drivers, c.Opaque.Driver)
			}
		}
	}
	if devices != nil {
		for _, c := range devices.Config {
			if c.Opaque != nil {
				drivers = append(drivers, c.Opaque.Driver)
			}
		}
		for _, r := range devices.Requests {
			if r.Exactly != nil && asksForShareUnits(r.Exactly.Capacity) {
				return true
			}
			for _, sub := range r.FirstAvailable {
				if asksForShareUnits(sub.Capacity) {
					return true
				}
			}
		}
	}
	return slices.Contains(drivers, ascendDriver) || slices.Contains(drivers, cambriconDriver)
}

func asksForShareUnits(c *resourcev1.CapacityRequirements) bool {
	if c == nil {
		return false
	}
	_, ok := c.Requests[names.CapShareUnits]
	return ok
}

var resourceOf = map[string]string{"ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates", "DeviceClass": "deviceclasses"}

// admissionRequest is the API server's request for a create of obj (YAML).
func admissionRequest(t *testing.T, obj string) *admissionv1.AdmissionRequest {
	t.Helper()
	typed := typedResourceObject(t, obj)
	raw, err := yaml.YAMLToJSON([]byte(obj))
	require.NoError(t, err)
	accessor, err := meta.Accessor(typed)
	require.NoError(t, err)
	gvk := typed.GetObjectKind().GroupVersionKind()
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + accessor.GetName()),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resourceOf[gvk.Kind]},
		Name:      accessor.GetName(),
		Namespace: accessor.GetNamespace(),
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

// chartObject is a claim, template or DeviceClass users apply: from demo/
// or the chart's deviceclasses/.
type chartObject struct{ source, yaml string }

func demoAndChartObjects(t *testing.T) []chartObject {
	t.Helper()
	root := repoRoot(t)
	var files []string
	for _, pattern := range []string{"demo/*/*.yaml", "demo/*.yaml", "deployments/helm/accel-dra/deviceclasses/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		files = append(files, m...)
	}
	var out []chartObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---") {
			var head struct{ APIVersion, Kind string }
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.APIVersion != "resource.k8s.io/v1" || resourceOf[head.Kind] == "" {
				continue
			}
			out = append(out, chartObject{source: f, yaml: doc})
		}
	}
	require.NotEmpty(t, out, "no demo claims found")
	return out
}

// sentBy runs the matcher of vwc's webhook for obj's kind on a create of
// obj: whether the API server sends obj to the webhook.
func sentBy(t *testing.T, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, obj string) bool {
	t.Helper()
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	hookFor := map[string]string{"ResourceClaim": "resourceclaims.accel-dra.dev", "ResourceClaimTemplate": "resourceclaimtemplates.accel-dra.dev", "DeviceClass": "deviceclasses.accel-dra.dev"}
	typed := typedResourceObject(t, obj)
	gvk := typed.GetObjectKind().GroupVersionKind()
	var hook *admissionregistrationv1.ValidatingWebhook
	for i := range vwc.Webhooks {
		if vwc.Webhooks[i].Name == hookFor[gvk.Kind] {
			hook = vwc.Webhooks[i].DeepCopy()
		}
	}
	require.NotNil(t, hook, gvk.Kind)
	require.NotEmpty(t, hook.MatchConditions)
	fail := admissionregistrationv1.Fail
	// As the API server compiles a webhook's matchConditions
	// (k8s.io/apiserver/pkg/admission/plugin/webhook/accessors.go,
	// GetCompiledMatcher), in the environment it checks a new
	// configuration with.
	var expressions []plugincel.ExpressionAccessor
	for _, mc := range hook.MatchConditions {
		expressions = append(expressions, &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression})
	}
	matcher := matchconditions.NewMatcher(compiler.CompileCondition(expressions,
		plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}, environment.NewExpressions),
		&fail, "webhook", "validating", hook.Name)
	accessor, err := meta.Accessor(typed)
	require.NoError(t, err)
	attrs := admission.NewAttributesRecord(typed, nil, gvk, accessor.GetNamespace(), accessor.GetName(),
		gvk.GroupVersion().WithResource(resourceOf[gvk.Kind]), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	result := matcher.Match(context.Background(), &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(typed), VersionedKind: gvk}, nil, nil)
	require.NoError(t, result.Error, "%s on\n%s", hook.Name, obj)
	return result.Matches
}

// TestTheMatchConditionsSendExactlyTheObjectsWithOurConfigs evaluates the
// rendered matchConditions with the API server's own webhook matcher
// (k8s.io/apiserver), on objects decoded into their types, so a typo
// cannot silently turn the webhook off: with failurePolicy Ignore a CEL
// error skips the webhook, so the test evaluates with Fail to see errors.
// An object is sent exactly when it has an opaque config for one of our
// drivers or asks for accel-dra.dev/shareUnits (judged from the Go
// types), and every object the webhook would deny is sent.
func TestTheMatchConditionsSendExactlyTheObjectsWithOurConfigs(t *testing.T) {
	vwc := renderWebhook(t, webhookCases[0]).webhookConfiguration(t)
	sent := func(t *testing.T, obj string) bool { return sentBy(t, vwc, obj) }
	_, ctx := ktesting.NewTestContext(t)
	check := func(t *testing.T, obj string) (isSent, denied bool) {
		t.Helper()
		isSent = sent(t, obj)
		require.Equal(t, ours(typedResourceObject(t, obj)), isSent, "sent exactly with a config of ours or a share in units:\n%s", obj)
		denied = !webhook.Review(ctx, configs, admissionRequest(t, obj)).Allowed
		if denied {
			require.True(t, isSent, "the webhook denies this object, so it must be sent:\n%s", obj)
		}
		return isSent, denied
	}

	hccl := `env: {HCCL_CONNECT_TIMEOUT: "1200"}`
	typo := `envs: {HCCL_CONNECT_TIMEOUT: "1200"}`
	gpu := opaqueConfig("gpu.example.com", "GpuConfig", "sharing: whatever")
	tests := []struct {
		name         string
		object       string
		sent, denied bool
	}{
		{"a claim with an Ascend config", claimWith(opaqueConfig(ascendDriver, "AscendConfig", hccl)), true, false},
		{"a claim with a misspelt Ascend config", claimWith(opaqueConfig(ascendDriver, "AscendConfig", typo)), true, true},
		{"a claim with a Cambricon config after another driver's", claimWith(gpu, opaqueConfig(cambriconDriver, "CambriconConfig", "env: {CNCL_DEBUG: INFO}")), true, false},
		{"a claim with a config for a request it does not have", claimWith(opaqueConfig(ascendDriver, "AscendConfig", hccl, "nope")), true, true},
		{"a claim with only another driver's config", claimWith(gpu), false, false},
		{"a claim without configs", claimWith(), false, false},
		{"a template with a Cambricon config of the wrong kind", templateWith(opaqueConfig(cambriconDriver, "AscendConfig", "")), true, true},
		{"a template with an Ascend config", templateWith(opaqueConfig(ascendDriver, "AscendConfig", hccl)), true, false},
		{"a template with another driver's config", templateWith(gpu), false, false},
		{"a template without configs", templateWith(), false, false},
		{"a DeviceClass with an Ascend config", classWith(opaqueConfig(ascendDriver, "AscendConfig", hccl)), true, false},
		{"a DeviceClass with a misspelt Ascend config", classWith(opaqueConfig(ascendDriver, "AscendConfig", typo)), true, true},
		{"a DeviceClass with another driver's config", classWith(gpu), false, false},
		{"a DeviceClass without configs", classWith(), false, false},
		{"a claim for units no 910B3 template has", shareClaimOf("ResourceClaim", "ascend910b3.accel-dra.dev", "exactly", `accel-dra.dev/shareUnits: "3"`), true, true},
		{"a claim for a 910B3 template's units", shareClaimOf("ResourceClaim", "ascend910b3.accel-dra.dev", "exactly", `accel-dra.dev/shareUnits: "2"`), true, false},
		{"a claim for units of a generic class", shareClaimOf("ResourceClaim", "ascend.accel-dra.dev", "exactly", `accel-dra.dev/shareUnits: "3"`), true, false},
		{"a template whose subrequest asks for units no 310P3 template has", shareClaimOf("ResourceClaimTemplate", "ascend310p3.accel-dra.dev", "firstAvailable", `accel-dra.dev/shareUnits: "3"`), true, true},
		{"a claim for memory alone", shareClaimOf("ResourceClaim", "ascend910b3.accel-dra.dev", "exactly", `accel-dra.dev/memory: 24Gi`), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isSent, denied := check(t, tt.object)
			require.Equal(t, tt.sent, isSent, "sent")
			require.Equal(t, tt.denied, denied, "denied")
		})
	}
	t.Run("the demo's claims and the chart's DeviceClasses", func(t *testing.T) {
		for _, obj := range demoAndChartObjects(t) {
			t.Run(filepath.Base(obj.source), func(t *testing.T) {
				check(t, obj.yaml)
			})
		}
	})
}

// The Dockerfile's images are pinned by digest: every FROM names an image
// with @sha256:<digest>, directly or through an ARG whose default does.
func TestTheDockerfilesBaseImagesArePinnedByDigest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deployments", "container", "Dockerfile"))
	require.NoError(t, err)
	args := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG ([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(string(data), -1) {
		args[m[1]] = m[2]
	}
	pinned := regexp.MustCompile(`^[a-z0-9./-]+(:[A-Za-z0-9._-]+)?@sha256:[0-9a-f]{64}$`)
	froms := regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`).FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, froms)
	for _, m := range froms {
		ref := m[1]
		if name, ok := strings.CutPrefix(ref, "${"); ok {
			ref = args[strings.TrimSuffix(name, "}")]
		}
		require.Regexp(t, pinned, ref, "FROM %s is pinned by digest", m[1])
	}
}

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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	release   = "accel-dra"
	namespace = "accel-dra"
	// fullname is the chart's object name prefix for release accel-dra.
	fullname = "accel-dra"
)

// repoRoot is the repository, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

func chartDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "deployments", "helm", "accel-dra")
}

// helmBinDir holds the helm binary TestMain removes at the end.
var helmBinDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if helmBinDir != "" {
		_ = os.RemoveAll(helmBinDir)
	}
	os.Exit(code)
}

// helmBinary builds helm from the hack/tools module once, with the
// flags the Makefile's `go run` uses (so from the same build cache): the
// tests run helm a few hundred times, and a `go run` per call spent about
// a second each just checking that nothing changed.
var helmBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "accel-dra-chart-test-")
	if err != nil {
		return "", err
	}
	helmBinDir = dir
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "helm")
	out, err := exec.Command("go", "-C", filepath.Join(root, "hack", "tools"), "build", "-o", bin, "helm.sh/helm/v4/cmd/helm").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building helm from hack/tools: %w\n%s", err, out)
	}
	return bin, nil
})

// helm runs helm from the hack/tools module, as the Makefile does, with
// its state directories in a temporary directory.
func helm(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	bin, err := helmBinary()
	require.NoError(t, err, "the chart tests build helm with the go command")
	cmd := exec.Command(bin, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), nil
}

// helmTemplate renders the chart with values (a values.yaml document) and
// any further helm flags.
func helmTemplate(t *testing.T, values string, flags ...string) (string, error) {
	t.Helper()
	return helm(t, append([]string{"template", release, chartDir(t), "--namespace", namespace, "--values", valuesFile(t, values)}, flags...)...)
}

// valuesFile writes values to a file for --values, which splits its
// argument at commas: the file's path must not have any, and t.TempDir
// names it after the test.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	f, err := os.CreateTemp("", "accel-dra-values-*.yaml")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	_, err = f.WriteString(values)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

// document is one rendered manifest: its text (without helm's "# Source"
// line) and the object it strictly decodes into.
type document struct {
	source string
	raw    string
	object runtime.Object
}

// rendering is the chart rendered with one values case.
type rendering struct {
	docs []document
}

// strictDecoder decodes YAML or JSON into the typed objects of client-go's
// scheme (every built-in API, admissionregistration.k8s.io/v1 included),
// failing on unknown and duplicate fields.
var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// certManagerKinds are the cert-manager.io/v1 kinds the chart renders (the
// webhook's certificate with webhook.certManager.enabled). cert-manager's
// Go types are not a dependency of this module, so these are decoded as
// unstructured objects, still failing on duplicate fields; the webhook
// tests check their fields one by one.
var certManagerKinds = map[string]bool{"Issuer": true, "Certificate": true}

func decodeRendering(out string) (*rendering, error) {
	r := &rendering{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		source, raw := splitSource(string(chunk))
		if strings.TrimSpace(stripComments(raw)) == "" {
			continue
		}
		obj, err := decodeDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("decoding the document from %s: %w\n%s", source, err, raw)
		}
		r.docs = append(r.docs, document{source: source, raw: raw, object: obj})
	}
}

// decodeDocument decodes one manifest strictly: into its Go type, or for
// the cert-manager kinds into an unstructured object.
func decodeDocument(raw string) (runtime.Object, error) {
	var head struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal([]byte(raw), &head); err != nil {
		return nil, err
	}
	if head.APIVersion != "cert-manager.io/v1" {
		obj, _, err := strictDecoder.Decode([]byte(raw), nil, nil)
		return obj, err
	}
	if !certManagerKinds[head.Kind] {
		return nil, fmt.Errorf("cert-manager.io/v1 %s is not a kind the chart is known to render", head.Kind)
	}
	js, err := yaml.YAMLToJSONStrict([]byte(raw))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	return u, nil
}

// splitSource takes helm's "# Source: <template>" line off a document (and
// the separator before the first one).
func splitSource(doc string) (source, rest string) {
	doc = strings.TrimLeft(doc, "\n")
	doc = strings.TrimPrefix(doc, "---\n")
	first, rest, _ := strings.Cut(doc, "\n")
	if s, ok := strings.CutPrefix(first, "# Source: "); ok {
		return s, rest
	}
	return "", doc
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

var (
	renderMu sync.Mutex
	rendered = map[string]*rendering{}
)

// render renders and decodes c once per test binary.
func render(t *testing.T, c valuesCase) *rendering {
	t.Helper()
	return renderValues(t, c.name, c.values)
}

// renderValues renders and decodes values once per test binary, under a
// name unique among all cases.
func renderValues(t *testing.T, name, values string) *rendering {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if r, ok := rendered[name]; ok {
		return r
	}
	out, err := helmTemplate(t, values)
	require.NoError(t, err)
	r, err := decodeRendering(out)
	require.NoError(t, err)
	rendered[name] = r
	return r
}

func objectsOf[T runtime.Object](r *rendering) []T {
	var out []T
	for _, d := range r.docs {
		if o, ok := d.object.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

func only[T runtime.Object](t *testing.T, r *rendering) T {
	t.Helper()
	objs := objectsOf[T](r)
	require.Len(t, objs, 1, "exactly one %T", *new(T))
	return objs[0]
}

// daemonSet is the first node group's DaemonSet (the default values'
// Ascend group), for checks that hold for every group's.
func (r *rendering) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	all := objectsOf[*appsv1.DaemonSet](r)
	require.NotEmpty(t, all, "the chart renders a DaemonSet")
	return all[0]
}

// clusterRole is the node agent's ClusterRole.
func (r *rendering) clusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	var out []*rbacv1.ClusterRole
	for _, cr := range objectsOf[*rbacv1.ClusterRole](r) {
		if strings.HasSuffix(cr.Name, "-kubeletplugin") {
			out = append(out, cr)
		}
	}
	require.Len(t, out, 1, "exactly one ClusterRole of the agent")
	return out[0]
}

// viewerRoles are the rendered ClusterRoles other than the agent's.
func (r *rendering) viewerRoles() []*rbacv1.ClusterRole {
	var out []*rbacv1.ClusterRole
	for _, cr := range objectsOf[*rbacv1.ClusterRole](r) {
		if !strings.HasSuffix(cr.Name, "-kubeletplugin") {
			out = append(out, cr)
		}
	}
	return out
}

func (r *rendering) clusterRoleBinding(t *testing.T) *rbacv1.ClusterRoleBinding {
	return only[*rbacv1.ClusterRoleBinding](t, r)
}

func (r *rendering) serviceAccount(t *testing.T) *corev1.ServiceAccount {
	return only[*corev1.ServiceAccount](t, r)
}

// policy and policyBinding are the ResourceSlice policy of the agent;
// nodePolicy and nodePolicyBinding the Node policy of its fabric labels.
func (r *rendering) policy(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return named[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "-resourceslices")
}

func (r *rendering) policyBinding(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return named[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, r, "-resourceslices")
}

func (r *rendering) nodePolicy(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return named[*admissionregistrationv1.ValidatingAdmissionPolicy](t, r, "-nodes")
}

func (r *rendering) nodePolicyBinding(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return named[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, r, "-nodes")
}

// named is the one object of type T whose name ends in suffix.
func named[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, r *rendering, suffix string) T {
	t.Helper()
	var out []T
	for _, o := range objectsOf[T](r) {
		if strings.HasSuffix(o.GetName(), suffix) {
			out = append(out, o)
		}
	}
	require.Len(t, out, 1, "exactly one %T named *%s", *new(T), suffix)
	return out[0]
}

func (r *rendering) deployment(t *testing.T) *appsv1.Deployment {
	return only[*appsv1.Deployment](t, r)
}

func (r *rendering) service(t *testing.T) *corev1.Service {
	return only[*corev1.Service](t, r)
}

func (r *rendering) podDisruptionBudget(t *testing.T) *policyv1.PodDisruptionBudget {
	return only[*policyv1.PodDisruptionBudget](t, r)
}

func (r *rendering) webhookConfiguration(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return only[*admissionregistrationv1.ValidatingWebhookConfiguration](t, r)
}

// certManagerObjects are the rendered cert-manager objects of kind, in order.
func (r *rendering) certManagerObjects(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objectsOf[*unstructured.Unstructured](r) {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// deviceClasses maps the rendered DeviceClasses by name to their documents.
func (r *rendering) deviceClasses() map[string]document {
	out := map[string]document{}
	for _, d := range r.docs {
		if dc, ok := d.object.(*resourcev1.DeviceClass); ok {
			out[dc.Name] = d
		}
	}
	return out
}

// kinds lists the kinds of the rendered objects, sorted: the Go type of a
// typed object, "<apiVersion> <kind>" of an unstructured one. The order
// of the manifests is helm's (its install order by kind).
func (r *rendering) kinds() []string {
	var out []string
	for _, d := range r.docs {
		if u, ok := d.object.(*unstructured.Unstructured); ok {
			out = append(out, u.GetAPIVersion()+" "+u.GetKind())
			continue
		}
		out = append(out, fmt.Sprintf("%T", d.object))
	}
	sort.Strings(out)
	return out
}

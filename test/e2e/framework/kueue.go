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

package framework

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// KueueNamespace is the manager's own namespace (its default).
const KueueNamespace = "kueue-system"

// kueueMetricsCertDir is where Kueue's manager reads its metrics serving
// certificate when its internal certificate management is off; the path
// is fixed in cmd/kueue/main.go, so the harness writes it on the host.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

// kueueWebhookPaths keep, of the webhooks Kueue's manifests register, those
// of the integrations the e2e config enables (batch/job) and of Kueue's own
// objects: the others would send every Pod, Deployment, ... to handlers
// the manager does not serve with those integrations off.
var kueueWebhookPaths = []string{"-batch-v1-job", "-kueue-x-k8s-io-"}

// Kueue is a running Kueue manager (hack/e2e/build.sh builds v0.19.2).
type Kueue struct {
	c        *Cluster
	proc     *proc
	webhooks []*unstructured.Unstructured
}

// StartKueue runs Kueue's manager as a host process against the cluster,
// as Kueue's Deployment would run: the CRDs and webhook configurations of
// the same module version, the webhooks reached by URL on loopback with a
// certificate of the cluster's CA, and configFile (docs/queues.md's
// Configuration) completed with where this process listens. featureGates
// is the manager's --feature-gates (the guide's).
func (c *Cluster) StartKueue(ctx context.Context, configFile, featureGates string) (_ *Kueue, err error) {
	if err := c.InstallCRDs(ctx, "kueue-crds.yaml"); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", KueueNamespace, err)
	}

	dir, err := c.dir("kueue")
	if err != nil {
		return nil, err
	}
	certFile, keyFile, caPEM, err := c.ServingCert("kueue-webhook", net.ParseIP("127.0.0.1"))
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	if err := copyKeyPair(certFile, keyFile, certDir); err != nil {
		return nil, err
	}
	if err := c.writeKueueMetricsCert(certFile, keyFile); err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg, err := kueueConfig(configFile, certDir, webhookPort, healthPort)
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		return nil, fmt.Errorf("writing Kueue's configuration: %w", err)
	}
	admin, err := c.pki.client("kueue", "kueue", "system:masters")
	if err != nil {
		return nil, err
	}
	kc, err := c.kubeconfig("kueue", &admin, "")
	if err != nil {
		return nil, err
	}
	p, err := c.start("kueue", []string{"KUBECONFIG=" + kc}, c.bin("kueue"),
		"--config="+cfgFile,
		// The on-demand visibility API server (pending workloads for
		// kubectl kueue) wants its own certificate under /visibility and
		// an APIService; the tests read Workloads instead.
		"--feature-gates="+featureGates+",VisibilityOnDemand=false",
		"--zap-log-level=3",
	)
	if err != nil {
		return nil, err
	}
	k := &Kueue{c: c, proc: p}
	defer func() {
		if err != nil {
			k.Stop(context.Background())
		}
	}()
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	if err := waitHealthz(ctx, "Kueue's manager", readyz, p); err != nil {
		return nil, err
	}
	if err := k.registerWebhooks(ctx, fmt.Sprintf("https://127.0.0.1:%d", webhookPort), caPEM); err != nil {
		return nil, err
	}
	c.logf("Kueue's manager is up (log %s)", filepath.Join(c.State.ArtifactsDir, "kueue.log"))
	return k, nil
}

// Stop removes the webhook configurations first (with the manager gone
// they would refuse every Job) and then stops the manager. Kueue's CRDs
// and objects stay.
func (k *Kueue) Stop(ctx context.Context) {
	if err := k.c.Delete(ctx, k.webhooks...); err != nil {
		k.c.logf("Removing Kueue's webhook configurations: %v", err)
	}
	if err := k.proc.stop(10 * time.Second); err != nil {
		k.c.logf("Stopping Kueue's manager: %v", err)
	}
}

// Log is the tail of the manager's log, for failure messages.
func (k *Kueue) Log(lines int) string { return k.proc.logTail(lines) }

// kueueConfig completes the user's Configuration with what a host
// process needs: the webhook server on loopback with the harness's
// certificate, the probes on a free port, no metrics endpoint, no leader
// election (one manager) and no internal certificate management (it would
// want a Service and a Secret to rotate).
func kueueConfig(configFile, certDir string, webhookPort, healthPort int) ([]byte, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return nil, fmt.Errorf("reading Kueue's configuration: %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", configFile, err)
	}
	if cfg["kind"] != "Configuration" {
		return nil, fmt.Errorf("%s: kind %v, want a Kueue Configuration", configFile, cfg["kind"])
	}
	cfg["webhook"] = map[string]any{"host": "127.0.0.1", "port": webhookPort, "certDir": certDir}
	cfg["health"] = map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)}
	cfg["metrics"] = map[string]any{"bindAddress": "0"}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	cfg["internalCertManagement"] = map[string]any{"enable": false}
	cfg["namespace"] = KueueNamespace
	return yaml.Marshal(cfg)
}

// registerWebhooks creates Kueue's webhook configurations, pointed at the
// manager by URL.
func (k *Kueue) registerWebhooks(ctx context.Context, base string, caPEM []byte) error {
	objs, err := ReadObjects(k.c.bin("kueue-webhooks.yaml"))
	if err != nil {
		return fmt.Errorf("reading Kueue's webhook configurations: %w", err)
	}
	for _, obj := range objs {
		if obj.GetKind() != "MutatingWebhookConfiguration" && obj.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil {
			return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		var keep []any
		for _, h := range hooks {
			hook, _ := h.(map[string]any)
			path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			if !slices.ContainsFunc(kueueWebhookPaths, func(p string) bool { return strings.Contains(path, p) }) {
				continue
			}
			hook["clientConfig"] = map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
			keep = append(keep, hook)
		}
		obj.Object["webhooks"] = keep
		obj.SetName("kueue-" + obj.GetName())
		if _, err := k.c.Apply(ctx, FieldManager, obj); err != nil {
			return fmt.Errorf("registering Kueue's webhooks: %w", err)
		}
		k.webhooks = append(k.webhooks, obj)
	}
	if len(k.webhooks) != 2 {
		return fmt.Errorf("kueue-webhooks.yaml: want one mutating and one validating webhook configuration, found %d", len(k.webhooks))
	}
	return nil
}

// waitCRDsEstablished waits until the API server serves the CRDs' kinds.
func (c *Cluster) waitCRDsEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	return waitFor(ctx, "CRDs established", time.Minute, nil, func(ctx context.Context) (bool, error) {
		c.Mapper.Reset()
		for _, crd := range crds {
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			if _, err := c.Mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}); err != nil {
				return false, fmt.Errorf("%s.%s: %w", kind, group, err)
			}
		}
		return true, nil
	})
}

// writeKueueMetricsCert puts the serving certificate where the manager
// insists on reading it; a /etc/kueue the cluster made is removed at
// teardown.
func (c *Cluster) writeKueueMetricsCert(certFile, keyFile string) error {
	if _, err := os.Stat("/etc/kueue"); errors.Is(err, os.ErrNotExist) {
		c.mu.Lock()
		c.State.HostPaths = append(c.State.HostPaths, "/etc/kueue")
		c.mu.Unlock()
		if err := c.saveState(); err != nil {
			return err
		}
	}
	return copyKeyPair(certFile, keyFile, kueueMetricsCertDir)
}

// copyKeyPair copies a certificate and key to dir as tls.crt and tls.key,
// the names controller-runtime's servers read.
func copyKeyPair(certFile, keyFile, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for src, dst := range map[string]string{certFile: "tls.crt", keyFile: "tls.key"} {
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("reading %s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, dst), err)
		}
	}
	return nil
}

// InstallCRDs applies the CRDs of a file of the bin dir (e.g.
// volcano-crds.yaml) and waits until the API server serves their kinds.
func (c *Cluster) InstallCRDs(ctx context.Context, file string) error {
	crds, err := ReadObjects(c.bin(file))
	if err != nil {
		return fmt.Errorf("reading CRDs (hack/e2e/build.sh puts them in the cache): %w", err)
	}
	if _, err := c.Apply(ctx, FieldManager, crds...); err != nil {
		return fmt.Errorf("installing the CRDs of %s: %w", file, err)
	}
	return c.waitCRDsEstablished(ctx, crds)
}

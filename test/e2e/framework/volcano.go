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
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// VolcanoNamespace is where Volcano's Helm chart installs it; the guide's
// scheduler ConfigMap names it.
const VolcanoNamespace = "volcano-system"

// volcanoSchedulerConfKey is the key of the scheduler's ConfigMap that
// holds its configuration (the chart mounts it as a file).
const volcanoSchedulerConfKey = "volcano-scheduler.conf"

// Volcano is a running Volcano v1.14.1 (hack/e2e/build.sh): the scheduler
// and the controller-manager, as host processes, without the admission
// webhook (the tests' Volcano Jobs set what it would default).
type Volcano struct {
	c           *Cluster
	sched, ctrl *proc
	conf        string
	kubeconfig  string
	// hyperNodes: the controller-manager runs the HyperNode controller.
	hyperNodes bool
}

// volcanoControllerConfigMap is the controller-manager's ConfigMap as
// Volcano's chart names it (release "volcano"): the HyperNode controller
// reads its network topology discovery from key volcano-controller.conf
// (pkg/controllers/hypernode/config of volcano-sh/volcano).
const (
	volcanoControllerConfigMap = "volcano-controller-configmap"
	volcanoControllerConfKey   = "volcano-controller.conf"
)

// VolcanoOption changes how StartVolcano runs Volcano.
type VolcanoOption func(*volcanoOptions)

type volcanoOptions struct {
	controllerConf string
}

// WithHyperNodeDiscovery runs the controller-manager's HyperNode
// controller too, with conf (a volcano-controller.conf, e.g. the output of
// `accel-dra topology export --for volcano`) in its ConfigMap, so Volcano
// builds HyperNodes from the nodes' labels.
func WithHyperNodeDiscovery(conf string) VolcanoOption {
	return func(o *volcanoOptions) { o.controllerConf = conf }
}

// StartVolcano installs Volcano's CRDs of the same module version, applies
// the guide's scheduler ConfigMap (configMapFile) and runs the scheduler on
// its volcano-scheduler.conf with featureGates (the scheduler's
// --feature-gates, its embedded kube-scheduler code's DRA gates), and the
// controller-manager (Volcano Jobs, PodGroups, Queues; HyperNodes with
// WithHyperNodeDiscovery).
func (c *Cluster) StartVolcano(ctx context.Context, configMapFile, featureGates string, opts ...VolcanoOption) (_ *Volcano, err error) {
	var o volcanoOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := c.ensureBuilt(ctx, "volcano", "vc-scheduler"); err != nil {
		return nil, err
	}
	if err := c.InstallCRDs(ctx, "volcano-crds.yaml"); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: VolcanoNamespace}}
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", VolcanoNamespace, err)
	}
	cms, err := ReadObjects(configMapFile)
	if err != nil {
		return nil, fmt.Errorf("reading Volcano's scheduler configuration: %w", err)
	}
	if len(cms) != 1 || cms[0].GetKind() != "ConfigMap" {
		return nil, fmt.Errorf("%s: want one ConfigMap", configMapFile)
	}
	conf, ok, _ := unstructured.NestedString(cms[0].Object, "data", volcanoSchedulerConfKey)
	if !ok || conf == "" {
		return nil, fmt.Errorf("%s: ConfigMap %s has no data.%s", configMapFile, cms[0].GetName(), volcanoSchedulerConfKey)
	}
	if _, err := c.Apply(ctx, FieldManager, cms...); err != nil {
		return nil, fmt.Errorf("applying Volcano's scheduler ConfigMap: %w", err)
	}

	dir, err := c.dir("volcano")
	if err != nil {
		return nil, err
	}
	if o.controllerConf != "" {
		if err := c.writeVolcanoControllerConf(ctx, o.controllerConf); err != nil {
			return nil, err
		}
	}
	v := &Volcano{c: c, conf: filepath.Join(dir, volcanoSchedulerConfKey), hyperNodes: o.controllerConf != ""}
	if err := os.WriteFile(v.conf, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("writing Volcano's scheduler configuration: %w", err)
	}
	// Volcano's chart binds both components to wide ClusterRoles; the
	// harness gives them one admin identity.
	admin, err := c.pki.client("volcano", "volcano", "system:masters")
	if err != nil {
		return nil, err
	}
	if v.kubeconfig, err = c.kubeconfig("volcano", &admin, ""); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			v.Stop()
		}
	}()
	if err := v.startController(ctx); err != nil {
		return nil, err
	}
	if err := v.StartScheduler(ctx, featureGates); err != nil {
		return nil, err
	}
	return v, nil
}

// writeVolcanoControllerConf creates or replaces the controller-manager's
// ConfigMap with conf.
func (c *Cluster) writeVolcanoControllerConf(ctx context.Context, conf string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: volcanoControllerConfigMap, Namespace: VolcanoNamespace},
		Data:       map[string]string{volcanoControllerConfKey: conf},
	}
	_, err := c.Admin.CoreV1().ConfigMaps(VolcanoNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = c.Admin.CoreV1().ConfigMaps(VolcanoNamespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing Volcano's controller ConfigMap: %w", err)
	}
	return nil
}

func (v *Volcano) startController(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	// Volcano Jobs, their PodGroups, and the Queues' state. The default
	// (all) also runs the JobFlow controllers, whose CRDs the chart
	// installs from another directory: their informers never sync without
	// them, and no controller starts.
	controllers := "job-controller,pg-controller,queue-controller"
	if v.hyperNodes {
		controllers += ",hyperNode-controller"
	}
	p, err := v.c.start("vc-controller-manager", nil, v.c.bin("vc-controller-manager"),
		"--kubeconfig="+v.kubeconfig,
		"--leader-elect=false",
		"--controllers="+controllers,
		"--enable-healthz=true",
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", port),
		fmt.Sprintf("--listen-address=127.0.0.1:%d", metrics),
		"--v=3",
	)
	if err != nil {
		return err
	}
	v.ctrl = p
	return waitHealthz(ctx, "Volcano's controller-manager", fmt.Sprintf("http://127.0.0.1:%d/healthz", port), p)
}

// StartScheduler (re)starts the scheduler with featureGates; the tests
// restart it to show what a gate changes.
func (v *Volcano) StartScheduler(ctx context.Context, featureGates string) error {
	if v.sched != nil {
		if err := v.sched.stop(10 * time.Second); err != nil {
			return fmt.Errorf("stopping Volcano's scheduler: %w", err)
		}
		v.sched = nil
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	p, err := v.c.start("vc-scheduler", nil, v.c.bin("vc-scheduler"),
		"--kubeconfig="+v.kubeconfig,
		"--scheduler-conf="+v.conf,
		"--scheduler-name=volcano",
		"--leader-elect=false",
		"--feature-gates="+featureGates,
		"--enable-healthz=true",
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", port),
		fmt.Sprintf("--listen-address=127.0.0.1:%d", metrics),
		"--schedule-period=500ms",
		"--v=3",
	)
	if err != nil {
		return err
	}
	v.sched = p
	if err := waitHealthz(ctx, "Volcano's scheduler", fmt.Sprintf("http://127.0.0.1:%d/healthz", port), p); err != nil {
		return err
	}
	v.c.logf("Volcano's scheduler is up with --feature-gates=%s (log %s)", featureGates, filepath.Join(v.c.State.ArtifactsDir, "vc-scheduler.log"))
	return nil
}

// Stop stops both components. Volcano's CRDs and objects stay.
func (v *Volcano) Stop() {
	for _, p := range []*proc{v.sched, v.ctrl} {
		if p == nil {
			continue
		}
		if err := p.stop(10 * time.Second); err != nil {
			v.c.logf("Stopping %s: %v", p.Name, err)
		}
	}
}

// Running is nil while both components run, else which one exited and
// how, with its last log lines: a wait on Volcano's work says so.
func (v *Volcano) Running() error {
	for _, p := range []*proc{v.sched, v.ctrl} {
		if p == nil {
			continue
		}
		if err := p.exitErr(); err != nil {
			return err
		}
	}
	return nil
}

// Log is the tail of the scheduler's and the controller-manager's logs,
// for failure messages.
func (v *Volcano) Log(lines int) string {
	var out string
	for _, p := range []*proc{v.sched, v.ctrl} {
		if p != nil {
			out += "== " + p.Name + "\n" + p.logTail(lines) + "\n"
		}
	}
	return out
}

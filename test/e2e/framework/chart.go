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

// ChartPath is the Helm chart, relative to the repository.
const ChartPath = "deployments/helm/accel-dra"

// ChartObjects is a rendering of the chart.
type ChartObjects struct {
	// Objects in the order helm printed them.
	Objects []*unstructured.Unstructured
	// ServiceAccount is the node agent's ServiceAccount name.
	ServiceAccount string
}

// Kinds returns the objects of one kind.
func (co ChartObjects) Kinds(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range co.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// RenderChart runs `helm template` on the chart with the release name and
// namespace of the harness and the given --set values. helm is the one
// hack/e2e/build.sh built from hack/tools, else `go -C hack/tools run`.
func (c *Cluster) RenderChart(ctx context.Context, sets ...string) (ChartObjects, error) {
	return RenderChart(ctx, c.opts, sets...)
}

// RenderChart renders the chart without a cluster.
func RenderChart(ctx context.Context, opts Options, sets ...string) (ChartObjects, error) {
	chart := filepath.Join(opts.RepoRoot, ChartPath)
	if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
		return ChartObjects{}, fmt.Errorf("rendering the Helm chart: %w", err)
	}
	args := []string{"template", ReleaseName, chart, "--namespace", AgentNamespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	bin := filepath.Join(opts.BinDir, "helm")
	if _, err := os.Stat(bin); err != nil {
		bin = "go"
		args = append([]string{"-C", filepath.Join(opts.RepoRoot, "hack", "tools"), "run", "helm.sh/helm/v4/cmd/helm"}, args...)
	}
	out, err := runContext(ctx, 10*time.Minute, bin, args...)
	if err != nil {
		return ChartObjects{}, fmt.Errorf("rendering the Helm chart: %w", err)
	}
	objs, err := DecodeObjects("helm template "+ChartPath, []byte(out.stdout))
	if err != nil {
		return ChartObjects{}, err
	}
	co := ChartObjects{Objects: objs}
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			co.ServiceAccount = o.GetName()
		}
	}
	if co.ServiceAccount == "" {
		return ChartObjects{}, fmt.Errorf("helm template %s rendered no ServiceAccount", ChartPath)
	}
	return co, nil
}

// BaseChartValues are the values of the harness's install: the chart's
// admission webhook is off (the harness does not run it), everything else
// as in values.yaml.
var BaseChartValues = []string{"webhook.enabled=false"}

// installChart applies what the node agents need from the chart, as an
// operator installing it would, but not its DaemonSet: the harness runs
// the agents itself, one host process per node (the chart test applies
// the DaemonSet too).
func (c *Cluster) installChart(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
	}}}
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", AgentNamespace, err)
	}
	co, err := c.RenderChart(ctx, BaseChartValues...)
	if err != nil {
		return err
	}
	c.Chart = co
	var objs []*unstructured.Unstructured
	for _, o := range co.Objects {
		if o.GetKind() != "DaemonSet" {
			objs = append(objs, o)
		}
	}
	_, err = c.Apply(ctx, ChartFieldManager, objs...)
	return err
}

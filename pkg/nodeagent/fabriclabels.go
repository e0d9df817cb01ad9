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

package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Field managers of the agent's node label writes (server-side apply):
// one for its own accel-dra.dev/ labels, forced (the agent is their
// authority), one for the mirror label, not forced, so a value another
// writer set is never overwritten.
const (
	FabricFieldManager = "accel-dra-fabric"
	MirrorFieldManager = "accel-dra-fabric-mirror"
	// DefaultFabricInterval is how often the labels are checked against
	// their sources: the admin's labels and ConfigMap change seldom.
	DefaultFabricInterval = 5 * time.Minute
)

// FabricOptions say whether and from what the agent writes the fabric
// labels (pkg/fabric) on its own Node.
type FabricOptions struct {
	// Labels turns the node labels on (--fabric-labels).
	Labels bool
	// SuperPodScope, LeafLabel, SpineLabel and Mirror: see fabric.Sources.
	SuperPodScope, LeafLabel, SpineLabel string
	Mirror                               bool
	// LevelConfigMap is the admin's ConfigMap of node levels,
	// "namespace/name"; "" for none.
	LevelConfigMap string
	// Interval is how often the labels are checked (zero:
	// DefaultFabricInterval).
	Interval time.Duration
}

// check refuses options that cannot work, before anything is written.
func (f FabricOptions) check() error {
	if !f.Labels {
		return nil
	}
	if f.SuperPodScope != "" {
		if _, err := fabric.SuperPodValue(f.SuperPodScope, "0"); err != nil {
			return fmt.Errorf("--superpod-scope: %w", err)
		}
	}
	for flag, key := range map[string]string{"--fabric-leaf-label": f.LeafLabel, "--fabric-spine-label": f.SpineLabel} {
		if key == "" {
			continue
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return fmt.Errorf("%s %q: not a label key: %s", flag, key, strings.Join(errs, "; "))
		}
	}
	if f.LevelConfigMap != "" {
		if ns, name, ok := strings.Cut(f.LevelConfigMap, "/"); !ok || ns == "" || name == "" {
			return fmt.Errorf("--fabric-level-configmap %q: want namespace/name", f.LevelConfigMap)
		}
	}
	return nil
}

// labelNode keeps the node's fabric labels until ctx ends. The chips'
// super pod is read once, from the chips found at start: a chip's health
// changing (a degraded super pod link is a device taint) never moves the
// node's label, since label churn rebuilds the schedulers' topology.
func labelNode(ctx context.Context, o Options, reg vendors.Registry, inv inventory.Inventory) {
	logger := klog.FromContext(ctx)
	superPod, superPodErr := fabric.SuperPodOf(chipDevices(reg, inv))
	interval := o.Fabric.Interval
	if interval <= 0 {
		interval = DefaultFabricInterval
	}
	retry := time.Second
	for {
		wait := interval
		if err := applyFabricLabels(ctx, o, superPod, superPodErr); err != nil {
			logger.Error(err, "Cannot write the node's fabric labels; retrying", "node", o.Discovery.NodeName, "in", retry)
			wait, retry = retry, min(2*retry, interval)
		} else {
			retry = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// chipDevices are the devices the node's chips publish, each vendor's.
func chipDevices(reg vendors.Registry, inv inventory.Inventory) []resourceapi.Device {
	var out []resourceapi.Device
	for _, v := range inv.Vendors() {
		devices, _ := resourceslices.DevicesFor(reg, inv, v, resourceslices.Options{})
		out = append(out, devices...)
	}
	return out
}

// applyFabricLabels writes the labels the sources say now.
func applyFabricLabels(ctx context.Context, o Options, superPod string, superPodErr error) error {
	logger := klog.FromContext(ctx)
	name := o.Discovery.NodeName
	nodes := o.KubeClient.CoreV1().Nodes()
	node, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	sources := fabric.Sources{SuperPodScope: o.Fabric.SuperPodScope, LeafLabel: o.Fabric.LeafLabel, SpineLabel: o.Fabric.SpineLabel, Mirror: o.Fabric.Mirror}
	mapErr := error(nil)
	if o.Fabric.LevelConfigMap != "" {
		sources.Map, mapErr = readLevelMap(ctx, o.KubeClient, o.Fabric.LevelConfigMap)
	}
	want := fabric.Desired(name, node.Labels, superPod, superPodErr, sources)
	if want.Problems == nil {
		want.Problems = map[string]string{}
	}
	if mapErr != nil {
		// Levels the map would give stay as they are until it is fixed.
		logger.Error(mapErr, "Cannot read the fabric levels of the admin's ConfigMap; the node's leaf and spine labels stay as they are", "node", name)
		for _, l := range []string{fabric.LabelLeaf, fabric.LabelSpine} {
			if _, ok := want.Labels[l]; !ok {
				want.Problems[l] = mapErr.Error()
			}
		}
	}
	for label, problem := range want.Problems {
		logger.Error(nil, "Fabric label left as it is", "node", name, "label", label, "reason", problem)
		if have, ok := node.Labels[label]; ok && strings.HasPrefix(label, fabric.LabelPrefix) {
			want.Labels[label] = have
		}
	}
	if err := applyLabels(ctx, nodes, name, node.Labels, want.Labels); err != nil {
		return err
	}
	if want.Mirror != "" && node.Labels[fabric.MirrorSuperPod] != want.Mirror {
		_, err := nodes.Apply(ctx, corev1ac.Node(name).WithLabels(map[string]string{fabric.MirrorSuperPod: want.Mirror}),
			metav1.ApplyOptions{FieldManager: MirrorFieldManager})
		if apierrors.IsConflict(err) {
			logger.Error(err, "Not mirroring the super pod: another writer set the label meanwhile", "node", name, "label", fabric.MirrorSuperPod)
			return nil
		}
		if err != nil {
			return fmt.Errorf("writing label %s of node %s: %w", fabric.MirrorSuperPod, name, err)
		}
	}
	return nil
}

// applyLabels applies want as the agent's accel-dra.dev/ labels of the
// node, unless current already says exactly that. Server-side apply drops
// a label the agent wrote before and no longer wants, and leaves every
// other label (and another writer's) alone.
func applyLabels(ctx context.Context, nodes interface {
	Apply(context.Context, *corev1ac.NodeApplyConfiguration, metav1.ApplyOptions) (*corev1.Node, error)
}, name string, current, want map[string]string) error {
	same := true
	for _, l := range fabric.Levels {
		have, ok := current[l]
		w, wanted := want[l]
		if ok != wanted || have != w {
			same = false
		}
	}
	if same {
		return nil
	}
	klog.FromContext(ctx).Info("Writing the node's fabric labels", "node", name, "labels", want)
	if _, err := nodes.Apply(ctx, corev1ac.Node(name).WithLabels(want), metav1.ApplyOptions{FieldManager: FabricFieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing the fabric labels of node %s: %w", name, err)
	}
	return nil
}

// readLevelMap reads the admin's ConfigMap "namespace/name".
func readLevelMap(ctx context.Context, client kubernetes.Interface, ref string) (fabric.LevelMap, error) {
	ns, name, _ := strings.Cut(ref, "/")
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", ref, err)
	}
	return fabric.ParseLevelMap("ConfigMap "+ref, cm.Data)
}

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

package topology

import (
	"fmt"
	"slices"
	"strings"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/fabric"
)

// Engines export takes, as --for names them.
const (
	ForVolcano  = "volcano"
	ForKueue    = "kueue"
	ForPodGroup = "podgroup"
)

// Name is the Volcano topology type and the Kueue Topology of the fabric.
// Volcano refuses a topology type name over 20 characters
// (networkTopologyTypeLength in its label discoverer).
const Name = "accel-dra-fabric"

// CheckEngine refuses an engine Export does not know.
func CheckEngine(engine string) error {
	switch engine {
	case ForVolcano, ForKueue, ForPodGroup:
		return nil
	}
	return fmt.Errorf("--for %q: want %s, %s or %s", engine, ForVolcano, ForKueue, ForPodGroup)
}

// Export is the configuration of engine for f, as YAML with a comment
// saying where it goes.
func Export(f Fabric, engine string) (string, error) {
	var head string
	var v any
	switch engine {
	case ForVolcano:
		head, v = volcanoHead, volcano(f)
	case ForKueue:
		head, v = kueueHead, kueue(f)
	case ForPodGroup:
		head, v = fmt.Sprintf(podGroupHead, fabric.LevelName(f.Lowest())), podGroup(f)
	default:
		return "", CheckEngine(engine)
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding the %s configuration: %w", engine, err)
	}
	return head + string(data), nil
}

// Volcano's label discovery configuration, the part of its controller's
// config file (ConfigMap volcano-controller-configmap, key
// volcano-controller.conf) that makes HyperNodes from node labels: the
// legacy list form of networkTopologyTypes, levels highest first, the
// last the node itself (volcano-sh/volcano
// pkg/controllers/hypernode/discovery/label/label.go, NetworkTopologyType,
// parseCfg; docs/user-guide/how_to_use_hypernode_auto_discovery.md).
type volcanoConfig struct {
	NetworkTopologyDiscovery []volcanoSource `json:"networkTopologyDiscovery"`
}

type volcanoSource struct {
	Source  string              `json:"source"`
	Enabled bool                `json:"enabled"`
	Config  volcanoLabelsConfig `json:"config"`
}

type volcanoLabelsConfig struct {
	NetworkTopologyTypes map[string][]volcanoNodeLabel `json:"networkTopologyTypes"`
}

type volcanoNodeLabel struct {
	NodeLabel string `json:"nodeLabel"`
}

const volcanoHead = `# Volcano (v1.13 or newer) label discovery of the accel-dra fabric: one
# HyperNode per domain, tier 1 the smallest. Merge into the controller's
# config, ConfigMap volcano-controller-configmap, key volcano-controller.conf.
`

func volcano(f Fabric) volcanoConfig {
	var levels []volcanoNodeLabel
	for _, l := range slices.Concat(f.Levels, []string{fabric.LabelHostname}) {
		levels = append(levels, volcanoNodeLabel{NodeLabel: l})
	}
	return volcanoConfig{NetworkTopologyDiscovery: []volcanoSource{{Source: "label", Enabled: true,
		Config: volcanoLabelsConfig{NetworkTopologyTypes: map[string][]volcanoNodeLabel{Name: levels}}}}}
}

// kueueTopology is Kueue's Topology (kueue.x-k8s.io/v1beta2,
// kubernetes-sigs/kueue apis/kueue/v1beta2/topology_types.go): levels
// highest first, kubernetes.io/hostname only last.
type kueueTopology struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Levels []kueueLevel `json:"levels"`
	} `json:"spec"`
}

type kueueLevel struct {
	NodeLabel string `json:"nodeLabel"`
}

const kueueHead = `# Kueue's Topology of the accel-dra fabric, for topology-aware scheduling:
# name it in a ResourceFlavor's spec.topologyName.
`

func kueue(f Fabric) kueueTopology {
	var t kueueTopology
	t.APIVersion, t.Kind = "kueue.x-k8s.io/v1beta2", "Topology"
	t.Metadata.Name = Name
	for _, l := range slices.Concat(f.Levels, []string{fabric.LabelHostname}) {
		t.Spec.Levels = append(t.Spec.Levels, kueueLevel{NodeLabel: l})
	}
	return t
}

const podGroupHead = `# kube-scheduler's topology-aware workload scheduling (scheduling.k8s.io/v1beta1
# PodGroup, alpha feature gate TopologyAwareWorkloadScheduling): every pod
# of the group in one %s. Set it in the Workload's podGroupTemplates[] or
# the PodGroup's spec.
`

// podGroup is a PodGroup's schedulingConstraints keeping the group in one
// domain of the smallest level, in the upstream type.
func podGroup(f Fabric) map[string]schedulingv1beta1.PodGroupSchedulingConstraints {
	return map[string]schedulingv1beta1.PodGroupSchedulingConstraints{
		"schedulingConstraints": {Topology: []schedulingv1beta1.TopologyConstraint{{Key: f.Lowest()}}},
	}
}

// Summary says, per level, how many domains and nodes the fabric has, for
// people (the CLI prints it on stderr).
func Summary(f Fabric) string {
	var b strings.Builder
	for _, l := range f.Levels {
		nodes := 0
		for _, ns := range f.Domains[l] {
			nodes += len(ns)
		}
		fmt.Fprintf(&b, "%s: %d domains, %d nodes", l, len(f.Domains[l]), nodes)
		if n := len(f.Unlabelled[l]); n > 0 {
			fmt.Fprintf(&b, " (%d nodes without it)", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

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

package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// SimulatedClusterKind is the kind of a cluster file.
const SimulatedClusterKind = "SimulatedCluster"

// SimulatedCluster describes the nodes `accel-dra simulate` allocates on.
type SimulatedCluster struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Nodes      []SimulatedNode `json:"nodes"`
}

// SimulatedNode is one node, or with Count > 0 a group of identical nodes
// named <name>-0 … <name>-(count-1).
type SimulatedNode struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Count   int    `json:"count,omitempty"`
	// Labels are added to the Node objects (for DeviceClass or claim
	// selectors that look at nodes).
	Labels map[string]string `json:"labels,omitempty"`
	// ChipModes is how the node's chips are published, the node agent's
	// --chip-modes (e.g. "Partitioned", "npu-*=Partitioned,mlu-0=Shared");
	// empty: simulate's --chip-modes, by default every chip Whole. It is
	// checked when the cluster is built (pkg/simulate), which knows the
	// syntax.
	ChipModes string `json:"chipModes,omitempty"`
	// SuperPod is the super pod of the nodes' chips (Atlas A3 and later):
	// their accel-dra.dev/superPod, and the node label
	// accel-dra.dev/superpod the node agent writes (sp-<id>). Each node
	// of a super pod is its next server (serverIndex), in file order.
	SuperPod string `json:"superPod,omitempty"`
	// Leaf and Spine are the nodes' fabric levels, the node labels
	// accel-dra.dev/fabric-leaf and fabric-spine the admin gives them.
	Leaf  string `json:"leaf,omitempty"`
	Spine string `json:"spine,omitempty"`
}

// NodeNames expands Count into the node names, in order.
func (n SimulatedNode) NodeNames() []string {
	if n.Count == 0 {
		return []string{n.Name}
	}
	names := make([]string, n.Count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", n.Name, i)
	}
	return names
}

// ParseSimulatedCluster decodes a cluster file strictly (unknown fields are
// errors) and validates it. source names the file in errors.
func ParseSimulatedCluster(source string, data []byte) (*SimulatedCluster, error) {
	var c SimulatedCluster
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: decoding %s: %w", source, SimulatedClusterKind, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &c, nil
}

// MaxSimulatedNodes bounds a SimulatedCluster: ten times the 1000 nodes
// the benchmarks simulate (docs/benchmarks.md), far below what would
// exhaust memory.
const MaxSimulatedNodes = 10000

// Validate checks the fields; errors name the field path.
func (c *SimulatedCluster) Validate() error {
	if c.APIVersion != GroupVersion || c.Kind != SimulatedClusterKind {
		return fmt.Errorf("apiVersion/kind: got %q/%q, want %s/%s", c.APIVersion, c.Kind, GroupVersion, SimulatedClusterKind)
	}
	if len(c.Nodes) == 0 {
		return fmt.Errorf("nodes: at least one node is required")
	}
	seen := map[string]string{}
	total := 0
	for i, n := range c.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		if n.Profile == "" {
			return fmt.Errorf("%s.profile: required", field)
		}
		if n.Count < 0 {
			return fmt.Errorf("%s.count: must not be negative, got %d", field, n.Count)
		}
		// Checked before the names are made: an absurd count would
		// allocate them all.
		if n.Count > MaxSimulatedNodes {
			return fmt.Errorf("%s.count: %d is more than the %d nodes a simulated cluster may have", field, n.Count, MaxSimulatedNodes)
		}
		if total += max(n.Count, 1); total > MaxSimulatedNodes {
			return fmt.Errorf("%s.count: the cluster has %d nodes with this entry, more than the %d a simulated cluster may have", field, total, MaxSimulatedNodes)
		}
		for key, value := range map[string]string{"superPod": n.SuperPod, "leaf": n.Leaf, "spine": n.Spine} {
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
				return fmt.Errorf("%s.%s: %q is not a valid label value: %s", field, key, value, errs[0])
			}
		}
		for _, name := range n.NodeNames() {
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return fmt.Errorf("%s.name: node name %q is not valid: %s", field, name, errs[0])
			}
			if prev, ok := seen[name]; ok {
				return fmt.Errorf("%s.name: node %q is also defined by %s", field, name, prev)
			}
			seen[name] = field
		}
	}
	return nil
}

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

// Package topology turns the fabric labels of a cluster's nodes
// (pkg/fabric) into the configuration each placement engine reads:
// Volcano's label discovery of HyperNodes, Kueue's Topology, and a
// PodGroup's topology constraint for kube-scheduler. It reads node
// labels only, so every engine sees the same domains.
package topology

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/accel-dra/accel-dra/pkg/fabric"
)

// Fabric is the fabric the nodes' labels describe.
type Fabric struct {
	// Levels are the level labels in use, highest domain first (a subset
	// of fabric.Levels, in its order).
	Levels []string
	// Domains are, per level label, the nodes of each domain by value.
	Domains map[string]map[string][]string
	// Unlabelled are, per level label, the nodes without it: nodes
	// without a level are outside it (Kueue's TAS does not place pods
	// on them at that level; Volcano makes no HyperNode for them).
	Unlabelled map[string][]string
}

// Read finds the fabric of nodes. want, when not empty, are the level
// labels to use (highest first); else every level some node has. The
// domains must nest: every node of a domain is in one domain of each
// level above it, as Volcano's HyperNodes and Kueue's levels are a tree.
func Read(nodes []corev1.Node, want []string) (Fabric, error) {
	f := Fabric{Domains: map[string]map[string][]string{}, Unlabelled: map[string][]string{}}
	levels := want
	if len(levels) == 0 {
		levels = fabric.Levels
	}
	sorted := slices.Clone(nodes)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, l := range levels {
		domains := map[string][]string{}
		for _, n := range sorted {
			if v, ok := n.Labels[l]; ok {
				domains[v] = append(domains[v], n.Name)
			} else {
				f.Unlabelled[l] = append(f.Unlabelled[l], n.Name)
			}
		}
		if len(domains) == 0 && len(want) == 0 {
			delete(f.Unlabelled, l)
			continue
		}
		if len(domains) == 0 {
			return Fabric{}, fmt.Errorf("no node has the label %s (level %s)", l, fabric.LevelName(l))
		}
		f.Levels = append(f.Levels, l)
		f.Domains[l] = domains
	}
	if len(f.Levels) == 0 {
		return Fabric{}, fmt.Errorf("no node has a fabric label (%s): start the node agents with --fabric-labels (chart kubeletPlugin.fabric.nodeLabels) and give them the leaf and spine", strings.Join(fabric.Levels, ", "))
	}
	return f, f.checkNesting(sorted)
}

// checkNesting refuses a domain whose nodes are in two domains of a level
// above it, naming both nodes.
func (f Fabric) checkNesting(nodes []corev1.Node) error {
	var errs []error
	for i, upper := range f.Levels {
		for _, lower := range f.Levels[i+1:] {
			type first struct{ value, node string }
			parent := map[string]first{}
			for _, n := range nodes {
				v, ok := n.Labels[lower]
				if !ok {
					continue
				}
				up := n.Labels[upper]
				p, seen := parent[v]
				if !seen {
					parent[v] = first{up, n.Name}
					continue
				}
				if p.value != up {
					errs = append(errs, fmt.Errorf("%s=%s spans two domains of %s: %q (node %s) and %q (node %s); the levels must nest, or choose the levels with --levels",
						lower, v, upper, p.value, p.node, up, n.Name))
					parent[v] = first{up, n.Name}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Lowest is the smallest domain's level label: the one a gang is kept in.
func (f Fabric) Lowest() string { return f.Levels[len(f.Levels)-1] }

// ParseLevels reads --levels: short level names (spine, leaf, superpod),
// highest first, as fabric.LevelName gives them.
func ParseLevels(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		label := ""
		for _, l := range fabric.Levels {
			if fabric.LevelName(l) == n {
				label = l
			}
		}
		if label == "" {
			return nil, fmt.Errorf("--levels: unknown level %q, want spine, leaf or superpod", n)
		}
		if slices.Contains(out, label) {
			return nil, fmt.Errorf("--levels: level %s given twice", n)
		}
		out = append(out, label)
	}
	for i := 1; i < len(out); i++ {
		if slices.Index(fabric.Levels, out[i]) < slices.Index(fabric.Levels, out[i-1]) {
			return nil, fmt.Errorf("--levels: %s is not below %s; give the levels highest first (spine, leaf, superpod)", fabric.LevelName(out[i]), fabric.LevelName(out[i-1]))
		}
	}
	return out, nil
}

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

package fabric

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// LevelMapKey is the key of the admin's ConfigMap that maps nodes to
// their fabric levels:
//
//	nodes:
//	- name: node-1
//	  leaf: leaf-a
//	  spine: spine-1
const LevelMapKey = "fabric.yaml"

// NodeLevels are the leaf and spine the admin gives a node; "" where not
// given.
type NodeLevels struct {
	Leaf, Spine string
}

// LevelMap is the admin's map of node names to their levels.
type LevelMap map[string]NodeLevels

// ParseLevelMap reads the LevelMapKey document of the admin's ConfigMap
// (source names it in errors). A node named twice, a field given twice or
// unknown, a value that is not a valid label value, or a leaf under two
// spines make it an error naming the node and the field: the admin meant
// something the map does not say, and a guess would split or merge
// domains.
func ParseLevelMap(source string, data map[string]string) (LevelMap, error) {
	doc, ok := data[LevelMapKey]
	if !ok {
		return nil, fmt.Errorf("%s: no key %s", source, LevelMapKey)
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		return nil, fmt.Errorf("%s key %s: %w", source, LevelMapKey, err)
	}
	entries, err := nodeEntries(&root)
	if err != nil {
		return nil, fmt.Errorf("%s key %s: %w", source, LevelMapKey, err)
	}
	out := LevelMap{}
	first := map[string]int{}
	var errs []error
	for i, e := range entries {
		name, levels, err := parseEntry(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s key %s: nodes[%d]%s: %w", source, LevelMapKey, i, nameOf(name), err))
			continue
		}
		if j, dup := first[name]; dup {
			errs = append(errs, fmt.Errorf("%s key %s: nodes[%d]: node %s is named twice (also nodes[%d])", source, LevelMapKey, i, name, j))
			continue
		}
		first[name] = i
		out[name] = levels
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := checkTree(out); err != nil {
		return nil, fmt.Errorf("%s key %s: %w", source, LevelMapKey, err)
	}
	return out, nil
}

func nameOf(name string) string {
	if name == "" {
		return ""
	}
	return " (node " + name + ")"
}

// nodeEntries are the items of the document's nodes list.
func nodeEntries(root *yaml.Node) ([]*yaml.Node, error) {
	if root.Kind == 0 {
		return nil, nil
	}
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping with the key nodes", doc.Line)
	}
	var nodes *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k := doc.Content[i].Value; k != "nodes" {
			return nil, fmt.Errorf("line %d: unknown field %q, want nodes", doc.Content[i].Line, k)
		}
		nodes = doc.Content[i+1]
	}
	if nodes == nil {
		return nil, nil
	}
	if nodes.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: nodes: want a list", nodes.Line)
	}
	return nodes.Content, nil
}

// parseEntry reads one item of the nodes list: its name and levels.
func parseEntry(e *yaml.Node) (string, NodeLevels, error) {
	if e.Kind != yaml.MappingNode {
		return "", NodeLevels{}, fmt.Errorf("line %d: want a mapping with name, leaf and spine", e.Line)
	}
	fields := map[string]string{}
	var name string
	for i := 0; i+1 < len(e.Content); i += 2 {
		k, v := e.Content[i], e.Content[i+1]
		if k.Value == "name" {
			name = v.Value
		}
		if _, dup := fields[k.Value]; dup {
			return name, NodeLevels{}, fmt.Errorf("line %d: field %s is given twice", k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			return name, NodeLevels{}, fmt.Errorf("line %d: field %s: want a string", v.Line, k.Value)
		}
		fields[k.Value] = v.Value
	}
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch k {
		case "name":
		case "leaf", "spine":
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return name, NodeLevels{}, fmt.Errorf("field %s: %q is not a valid label value: %s", k, v, strings.Join(errs, "; "))
			}
		default:
			return name, NodeLevels{}, fmt.Errorf("unknown field %q, want name, leaf, spine", k)
		}
	}
	if name == "" {
		return "", NodeLevels{}, errors.New("field name is missing")
	}
	return name, NodeLevels{Leaf: fields["leaf"], Spine: fields["spine"]}, nil
}

// checkTree refuses a leaf under two spines: Volcano's HyperNodes and
// Kueue's levels are a tree, each domain in one parent.
func checkTree(m LevelMap) error {
	type seen struct{ spine, node string }
	parent := map[string]seen{}
	var errs []error
	for _, node := range sortedKeys(m) {
		l := m[node]
		if l.Leaf == "" || l.Spine == "" {
			continue
		}
		p, ok := parent[l.Leaf]
		if !ok {
			parent[l.Leaf] = seen{l.Spine, node}
			continue
		}
		if p.spine != l.Spine {
			errs = append(errs, fmt.Errorf("node %s: field spine: leaf %s is under spine %s here and under spine %s at node %s; a leaf is in one spine", node, l.Leaf, l.Spine, p.spine, p.node))
		}
	}
	return errors.Join(errs...)
}

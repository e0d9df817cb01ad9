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

// Package fabric is the fabric above the node as every scheduler reads
// it: the super pod, leaf and spine a node belongs to, as node labels
// (accel-dra.dev/superpod, fabric-leaf, fabric-spine) built from the
// chips' published device attributes (accel-dra.dev/superPod) and from
// what the admin says (node labels such as volcano.sh/tor, or a
// ConfigMap). It knows no vendor: it reads attributes by name.
package fabric

import (
	"github.com/accel-dra/accel-dra/pkg/names"
)

// Device attributes of the fabric (docs/architecture.md), published by a
// vendor only where the value is known.
const (
	AttrSuperPod      = names.AttrSuperPod
	AttrSuperDeviceID = names.AttrSuperDeviceID
	AttrServerIndex   = names.AttrServerIndex
	AttrModule        = names.AttrModule
)

// Node labels the agent writes on its own Node. Each value names one
// domain cluster-wide: Volcano's label discoverer makes one HyperNode per
// (label key, value) over every node (volcano-sh/volcano
// pkg/controllers/hypernode/discovery/label/label.go, generateHyperNodeInfo),
// so two domains with one value would become one HyperNode.
const (
	LabelSuperPod = names.Domain + "/superpod"
	LabelLeaf     = names.Domain + "/fabric-leaf"
	LabelSpine    = names.Domain + "/fabric-spine"
	// LabelHostname ends every level list: the node itself.
	LabelHostname = "kubernetes.io/hostname"
	// LabelPrefix is the only label prefix the agent may write (the
	// chart's ValidatingAdmissionPolicy enforces it).
	LabelPrefix = names.Domain + "/"
	// MirrorSuperPod is mind-cluster's super pod label, read by Huawei's
	// Volcano plugin; the agent mirrors the chips' super pod id into it
	// only when asked, and only where it is absent or already equal.
	MirrorSuperPod = "huawei.com/topotree.superpodid"
)

// Levels are the node labels of the fabric, highest domain first, as
// Volcano and Kueue list them; the node itself (LabelHostname) follows.
var Levels = []string{LabelSpine, LabelLeaf, LabelSuperPod}

// LevelName is the short name of a level label, as the admin's ConfigMap
// and the CLI say it.
func LevelName(label string) string {
	switch label {
	case LabelSpine:
		return "spine"
	case LabelLeaf:
		return "leaf"
	case LabelSuperPod:
		return "superpod"
	}
	return label
}

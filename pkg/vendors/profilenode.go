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

package vendors

import (
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// A profile node is a node without chips built from a hardware profile
// (demo/profiles, the node agent's --profile, `accel-dra simulate` and
// `discover --profile`): pkg/profilenode makes its chips and runs its
// partition tool through the vendors' hooks below.

// ProfileNode is how a hardware profile's chips of the vendor look on a
// profile node.
type ProfileNode struct {
	// SharedDeviceNodes are the device files every container of the vendor
	// gets, as the vendor's container runtime injects them.
	SharedDeviceNodes []string
	// BusOffset is added to a profile chip's PCI bus number, so two
	// vendors' chips never share a bus.
	BusOffset int
	// LinkType is the linkType a profile chip group of the vendor may
	// have besides pcie: its chips' high-speed interconnect ("hccs").
	LinkType inventory.LinkType
	// Chip completes a chip of a profile chip group: its device nodes and
	// Extra facts. The generic fields are set already.
	Chip func(c *inventory.Chip, g ProfileGroup)
	// DriverFiles are the files of a fake driver installation for chips
	// (pkg/devicefaker): the paths the CDI specs mount.
	DriverFiles func(chips []inventory.Chip) ([]File, error)
}

// ProfileGroup are the vendor-specific fields of a hardware profile's chip
// group (v1alpha1.ChipGroup), copied for the vendor's Chip hook so that a
// hook reads only the fields meant for vendors.
type ProfileGroup struct {
	// ChipName is the Ascend chip name as npu-smi prints it (910B3).
	ChipName string
	// MLULinkPorts is the number of MLU-Link ports of a Cambricon chip.
	MLULinkPorts int
}

// ProfileNodePartitions is a profile node's partition state as one
// vendor's Partitions.ProfileNodeCommand sees it during one command.
type ProfileNodePartitions interface {
	// Chips are the vendor's chips of the node.
	Chips() []inventory.Chip
	// Chip returns the vendor's chip with index.
	Chip(index int) (inventory.Chip, bool)
	// Load reads the partitions of the node.
	Load() (PartitionState, error)
	// Save writes the partitions of the node.
	Save(PartitionState) error
	// Mknod creates a partition's device node p, where the node has a
	// fake device root.
	Mknod(p string) error
	// Rmnod removes a partition's device node p again.
	Rmnod(p string) error
}

// PartitionState is the partitions of a profile node.
type PartitionState struct {
	// Partitions by chip key "<vendor>/<index>" (PartitionKey).
	Partitions map[string][]Instance `json:"partitions"`
}

// PartitionKey is a chip's key in PartitionState.Partitions.
func PartitionKey(c inventory.Chip) string { return fmt.Sprintf("%s/%d", c.Vendor, c.Index) }

// ToolError is what a failing vendor tool prints (npu-smi's status block).
func ToolError(cmd string, format string, args ...any) error {
	return fmt.Errorf("running %s: exit status 1: Status : Error, Message : %s", cmd, fmt.Sprintf(format, args...))
}

// ToolFlags turns "-t x -i 0" into a map; every flag takes a value except
// verbs (cnmon's --list), which map to "".
func ToolFlags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[a] = args[i+1]
			i++
			continue
		}
		out[a] = ""
	}
	return out
}

// WithoutInstance returns list without the instance with id, and that
// instance (nil if list has none).
func WithoutInstance(list []Instance, id int) ([]Instance, *Instance) {
	var removed *Instance
	out := make([]Instance, 0, len(list))
	for i := range list {
		if list[i].ID == id && removed == nil {
			removed = &list[i]
			continue
		}
		out = append(out, list[i])
	}
	return out, removed
}

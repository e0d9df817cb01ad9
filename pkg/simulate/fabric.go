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

package simulate

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// sdid is a chip's super device id in the layout the DCMI reference gives
// it (docs/hardware.md): server index in bits 22-31, chip 18-21, die
// 16-17, device 0-15; a simulated chip i is die i%2 of chip i/2.
func sdid(serverIndex int64, index int) int64 {
	return serverIndex<<22 | int64(index/2)<<18 | int64(index%2)<<16 | int64(index)
}

// stampFabric gives a simulated node the fabric its group says: the node
// labels its agent would write, and its chips their place in the super
// pod (server serverIndex of it), as the vendor's discovery would read
// them.
func stampFabric(n v1alpha1.SimulatedNode, node *v1.Node, inv *inventory.Inventory, serverIndex int64) {
	for label, value := range map[string]string{fabric.LabelLeaf: n.Leaf, fabric.LabelSpine: n.Spine} {
		if value != "" {
			node.Labels[label] = value
		}
	}
	if n.SuperPod == "" {
		return
	}
	if v, err := fabric.SuperPodValue("", n.SuperPod); err == nil {
		node.Labels[fabric.LabelSuperPod] = v
	}
	for i := range inv.Chips {
		c := &inv.Chips[i]
		c.SuperPod, c.ServerIndex, c.SuperDeviceID = n.SuperPod, ptr.To(serverIndex), ptr.To(sdid(serverIndex, c.Index))
	}
}

// stampSlices adds the chips' fabric attributes to their devices where
// the slices do not carry them already, so a simulated super pod is seen
// by claims (matchAttribute accel-dra.dev/superPod) and the views; a
// partition of a chip is in its chip's super pod.
func stampSlices(reg vendors.Registry, slices []*resourceapi.ResourceSlice, inv inventory.Inventory) {
	chips := map[string]inventory.Chip{}
	for _, c := range inv.Chips {
		if c.SuperPod != "" {
			chips[reg.ChipDeviceName(c)] = c
		}
	}
	if len(chips) == 0 {
		return
	}
	var superPod string
	for _, c := range chips {
		superPod = c.SuperPod
	}
	for _, s := range slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if d.Attributes == nil {
				continue
			}
			setAbsent(d.Attributes, fabric.AttrSuperPod, resourceapi.DeviceAttribute{StringValue: ptr.To(superPod)})
			c, ok := chips[d.Name]
			if !ok {
				continue
			}
			setAbsent(d.Attributes, fabric.AttrServerIndex, resourceapi.DeviceAttribute{IntValue: c.ServerIndex})
			setAbsent(d.Attributes, fabric.AttrSuperDeviceID, resourceapi.DeviceAttribute{IntValue: c.SuperDeviceID})
		}
	}
}

func setAbsent(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, key resourceapi.QualifiedName, v resourceapi.DeviceAttribute) {
	if _, ok := attrs[key]; !ok {
		attrs[key] = v
	}
}

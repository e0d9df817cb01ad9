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
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// stampFabric gives a simulated node the fabric its group says: the node
// labels its agent would write, and its chips their place in the super
// pod (server serverIndex of it), as the vendor's discovery would read
// them; pkg/resourceslices publishes those fields as the fabric
// attributes, on the chip's partitions too, as it does for the agent.
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
		c.SuperPod, c.ServerIndex, c.SuperDeviceID = n.SuperPod, ptr.To(serverIndex), ptr.To(fabric.SDID(serverIndex, c.Index))
	}
}

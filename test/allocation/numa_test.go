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

package allocation

import (
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
)

// dranetSlice is a node's slice of dranet (driver dra.net) with one NIC
// per entry: RDMA or not, on a NUMA node, with the standard numaNode
// attribute dranet publishes.
func dranetSlice(node string, nics map[string]struct {
	rdma bool
	numa int64
}) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-dra.net"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "dra.net", NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}},
	}
	for name, nic := range nics {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"dra.net/rdma":                    {BoolValue: ptr.To(nic.rdma)},
			"resource.kubernetes.io/numaNode": {IntValue: ptr.To(nic.numa)},
		}})
	}
	return s
}

func TestTheCookbookPlacesAChipOnTheNUMANodeOfAnRDMANic(t *testing.T) {
	// docs/claims.md: one matchAttribute on resource.kubernetes.io/numaNode
	// joins an accel-dra chip and a dranet NIC.
	cls := loadClasses(t)
	cls["dranet"] = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dranet"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "dra.net"`}}}}}
	chips := slicesFor(t, "a2-0", "atlas-800t-a2")
	numaOf := map[string]int64{}
	for _, s := range chips {
		for _, d := range s.Spec.Devices {
			numaOf[d.Name] = *d.Attributes[names.AttrNUMANode].IntValue
		}
	}
	for _, numa := range []int64{1, 3} {
		slices := append(chips[:len(chips):len(chips)], dranetSlice("a2-0", map[string]struct {
			rdma bool
			numa int64
		}{"eth0": {rdma: false, numa: 0}, "rdma0": {rdma: true, numa: numa}}))
		res := allocate(t, cls, slices, sets.New[structured.DeviceID](), "a2-0",
			loadTemplateClaimFile(t, "../../docs/examples/npu-with-rdma-nic.yaml"))
		require.Len(t, res, 2, "NIC on NUMA node %d", numa)
		got := map[string]string{}
		for _, r := range res {
			got[r.Request] = r.Device
		}
		require.Equal(t, "rdma0", got["nic"])
		require.Equal(t, numa, numaOf[got["npu"]], "chip %s is on the NIC's NUMA node", got["npu"])
	}
}

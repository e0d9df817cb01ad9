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

package scale

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

// Huawei's Ascend DRA driver's slices, from Ascend/mind-cluster @ 776a2db3
// (2026-08-21), component/ascend-dynamic-resource-allocation:
// internal/driver/driver.go buildDriverResources (one slice per node, pool
// the node's name, a device per NPU named by the generation, no
// capacity), internal/device/generation_910.go and generation_950.go
// DeviceAttributes (deviceType, the device manager's type string, and
// physicId, an int; generation_common.go names them), pkg/consts/consts.go
// (driver npu.huawei.com). The node is an Atlas 800T A2, 8 × 910B, whose
// type ascend-common's device manager reports as Ascend910B
// (devmanager/common/constants.go).
//
// One change: the 910 generation names its devices Ascend910-<physicId>
// (consts.Ascend910ReleasedName), which the API server rejects (a device
// name is a lowercase DNS label; the 20-node run of bench-scale was
// refused every such slice), so the devices take the 950 generation's
// form, npu-<physicId>. Left out: nothing else the slices carry; the
// driver's health, CDI and checkpoint paths are not slices.

// HuaweiDriver is the Ascend DRA driver's name.
const HuaweiDriver = "npu.huawei.com"

const (
	huaweiNPUsPerNode = 8
	huaweiDeviceType  = "Ascend910B"
)

// HuaweiResources is what the driver on node publishes.
func HuaweiResources(node string, _ int) resourceslice.DriverResources {
	devices := make([]resourceapi.Device, 0, huaweiNPUsPerNode)
	for phy := range huaweiNPUsPerNode {
		devices = append(devices, resourceapi.Device{
			Name: fmt.Sprintf("npu-%d", phy),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"deviceType": {StringValue: ptr.To(huaweiDeviceType)},
				"physicId":   {IntValue: ptr.To(int64(phy))},
			},
		})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: {Slices: []resourceslice.Slice{{Devices: devices}}}}}
}

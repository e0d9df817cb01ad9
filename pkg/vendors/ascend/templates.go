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

package ascend

import (
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

const mebibyte = int64(1) << 20

// vnpu is an Ascend template of HAMi's Ascend device config (MiB).
func vnpu(name string, cores, memoryMiB, aicpus int64) vendors.Template {
	return vendors.Template{Name: name, Type: PartitionType, Slug: strings.ReplaceAll(name, "_", "-"),
		Cores: cores, MemoryBytes: memoryMiB * mebibyte, AICPUs: aicpus}
}

// vnpuModels are the vNPU templates of docs/architecture.md's table, by
// the accel-dra.dev/model of the chip: AI cores, HBM (MiB) and AI CPUs per
// template as HAMi's Ascend device config and Huawei's documents give them
// (sources per model: docs/hardware.md, "vNPU templates"). vNPU ids of one
// chip lie in [phy_id*16+100, phy_id*16+115] (npu-smi create-vnpu -v), 16
// ids; the 310P range is 8 ids.
var vnpuModels = map[string]vendors.PartitionModel{
	"Ascend910A": {AICPUs: 15, MaxInstances: 16, Templates: []vendors.Template{
		vnpu("vir02", 2, 2184, 1), vnpu("vir04", 4, 4369, 1), vnpu("vir08", 8, 8738, 3), vnpu("vir16", 16, 17476, 7),
	}},
	// 910B2: the 24-core bin of DCMI's 910B template table accepts only
	// vir12_3c_32g and vir06_1c_16g (CANN driver source
	// dcmi/dcmi_interface/src/dcmi_virtual_intf.c:34-36, 160-201); HAMi's
	// vir03_1c_8g is refused there, so it is not offered.
	"Ascend910B2": {AICPUs: 6, MaxInstances: 16, Templates: []vendors.Template{
		vnpu("vir06_1c_16g", 6, 16384, 1), vnpu("vir12_3c_32g", 12, 32768, 3),
	}},
	// 910B3/910B4: 6 AI CPUs, Huawei's own figure (Ascend/mind-cluster
	// component/ascend-for-volcano/plugin/vnode.go:71-80, initTemplate:
	// ChipTypeB3 and ChipTypeB4 AICPU util.CpuNum6), not HAMi's 7.
	"Ascend910B3": {AICPUs: 6, MaxInstances: 16, Templates: []vendors.Template{
		vnpu("vir05_1c_16g", 5, 16384, 1), vnpu("vir10_3c_32g", 10, 32768, 3),
	}},
	"Ascend910B4": {AICPUs: 6, MaxInstances: 16, Templates: []vendors.Template{
		vnpu("vir05_1c_8g", 5, 8192, 1), vnpu("vir10_3c_16g", 10, 16384, 3),
	}},
	"Ascend310P3": {AICPUs: 7, MaxInstances: 8, Templates: []vendors.Template{
		vnpu("vir01", 1, 3072, 1), vnpu("vir02", 2, 6144, 2), vnpu("vir02_1c", 2, 6144, 1),
		vnpu("vir04", 4, 12288, 4), vnpu("vir04_3c", 4, 12288, 3), vnpu("vir04_3c_ndvpp", 4, 12288, 3),
		vnpu("vir04_4c_dvpp", 4, 12288, 4),
	}},
}

// PartitionType is the accel-dra.dev/type of a vNPU partition device.
const PartitionType = "vnpu"

// VNPUs are Ascend's partitions, the vNPUs of npu-smi and DCMI: they
// implement vendors.Partitions.
type VNPUs struct{}

var _ vendors.Partitions = VNPUs{}

// Partitions implements vendors.Vendor.
func (Ascend) Partitions() vendors.Partitions { return VNPUs{} }

// Model implements vendors.Partitions: the vNPU templates of the
// chip's model.
func (VNPUs) Model(c inventory.Chip) (vendors.PartitionModel, bool) {
	m, ok := vnpuModels[c.Model]
	return m, ok
}

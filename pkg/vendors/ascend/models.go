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
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/names"
)

// aiCoresPerChip is the number of AI cores of one chip (one /dev/davinciN)
// by the chip name `npu-smi info` prints, because that table does not print
// a core count. A chip name missing here gets 0 cores (unknown) and a
// warning rather than a guess. The A3 die prints "Ascend910" with 20 or 24
// AI cores, so its 20 is only a default and the backend asks npu-smi or
// DCMI for the real count (ambiguousCores). So do the Ascend 950PR and
// 950DT, 28, 32 or 36 AI cores by variant (Huawei's compiler's target
// table, Ascend/AscendNPU-IR bishengir/include/bishengir/Dialect/HACC/
// Targets/NPUTargetSpec.td:291-517: Ascend950PR_957x 28, _958x 32, _959x
// 36; Ascend950DT_957x 28, _958x 32, _959x/_95Ax 36; besides 4- and 8-core
// _950x/y/z parts): the default is 28, the fewest of those. Sources: docs/hardware.md#ai-cores-per-chip.
var aiCoresPerChip = map[string]int{
	"910A":        30,
	"910B1":       25,
	"910B2":       24,
	"910B3":       20,
	"910B4":       20,
	"910B4-1":     20,
	"310P3":       8,
	"Ascend910":   20,
	"Ascend950PR": 28,
	"Ascend950DT": 28,
}

// modelName is the accel-dra.dev/model of a chip name: Ascend910B3 for
// 910B3, as the Ascend tools spell a chip (npu-smi info -m "Ascend 910B3",
// docs/architecture.md models); names npu-smi already prints with the prefix (the A3
// "Ascend910") are kept.
func modelName(chipName string) string {
	if strings.HasPrefix(chipName, "Ascend") {
		return chipName
	}
	return "Ascend" + chipName
}

// ambiguousCores are the chip names whose AI core count the name does not
// tell (the A3 die, 20 or 24): discovery reads the count per chip.
var ambiguousCores = map[string]bool{"Ascend910": true, "Ascend950PR": true, "Ascend950DT": true}

// a3Variants are the 910_93 (A3) dies' variants, the npu_name DCMI gives
// and the "NPU Name" npu-smi prints for a die it names "Ascend910": the A3
// SoC versions of CANN's runtime (hicann/runtime
// src/runtime/core/inc/spec/base_info.hpp, RtPGVersion: Ascend910_9391,
// 9392, 9381, 9382, 9372, 9362), which is how CANN, torch_npu and
// aclrtGetSocName name the chip.
var a3Variants = []string{"9362", "9372", "9381", "9382", "9391", "9392"}

// chipModel is the accel-dra.dev/model of a chip: modelName of its name,
// except for a 910_93 die, which every tool names plain "Ascend910" next
// to the 910A and 910B: there the model is the SoC name CANN uses,
// "Ascend910_" and the die's variant (Ascend910_9392), where the variant
// is known.
func chipModel(name, npuName string) string {
	if name == die91093Name && npuName != "" {
		return name + "_" + npuName
	}
	return modelName(name)
}

// AttrModule is the shared attribute of a 910_93 die naming its module
// (its card, the NPU ID): the module's two dies are one scheduling unit by
// default, joined by SIO, and a claim keeps a pair together with
// matchAttribute on it (docs/claims.md).
const AttrModule = string(names.AttrModule)

// moduleOf is the AttrModule value of a die on card npu: node-unique.
func moduleOf(npu int) string { return fmt.Sprintf("module-%d", npu) }

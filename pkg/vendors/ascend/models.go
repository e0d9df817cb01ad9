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

import "strings"

// aiCoresPerChip is the number of AI cores of one chip (one /dev/davinciN)
// by the chip name `npu-smi info` prints, because that table does not print
// a core count. A chip name missing here gets 0 cores (unknown) and a
// warning rather than a guess. The A3 die prints "Ascend910" with 20 or 24
// AI cores, so its 20 is only a default and the backend asks npu-smi or
// DCMI for the real count (ambiguousCores). Sources:
// docs/hardware.md#ai-cores-per-chip.
var aiCoresPerChip = map[string]int{
	"910A":      30,
	"910B1":     25,
	"910B2":     24,
	"910B3":     20,
	"910B4":     20,
	"910B4-1":   20,
	"310P3":     8,
	"Ascend910": 20,
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
var ambiguousCores = map[string]bool{"Ascend910": true}

package ascend

import "strings"

// aiCoresPerChip is the number of AI cores of one chip (one /dev/davinciN)
// by the chip name `npu-smi info` prints, because that table does not print
// a core count. The numbers are the aiCore field of HAMi's Ascend device
// config (Project-HAMi/ascend-device-plugin, ascend-device-configmap.yaml:
// 910A 30, 910B2 24, 910B3 20, 910B4 20, 910B4-1 20, 310P3 8, and the A3 die
// "Ascend910" 20), which also sizes the vNPU templates of docs/architecture.md
// (910A vir02…vir16, 910B3 vir05_1c_16g / vir10_3c_32g, 310P3 vir01…vir04).
//
// The 910A figure is the SKU's enabled cores: the Ascend 910 die has 32, and
// some 910 SKUs enable all 32 (Ascend/ascend-device-plugin,
// pkg/common/constants.go: MaxAICoreNum = 32); `npu-smi info -t common`
// prints the enabled count as "Aicore Count : 30" on a 32 GB HBM 910 (the
// MindCluster FaultDiag guide's example). A chip name missing here gets 0
// cores (unknown) and a warning rather than a guess.
//
// 910B1 has 25 AI cores. The A3 die prints "Ascend910" whether it has 20
// or 24 AI cores (sources: docs/hardware.md): the table's 20 is only a
// default; the backend asks `npu-smi info
// -t common` ("Aicore Count") or DCMI (dcmi_chip_info.aicore_cnt) for the
// real count of such a chip (ambiguousCores).
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

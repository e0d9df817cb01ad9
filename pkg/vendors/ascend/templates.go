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
	"math"
	"slices"
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

var _ vendors.SizedPartitions = VNPUs{}

// ShareGrid implements vendors.SizedPartitions. DCMI makes a vNPU of a
// template only (dcmi_create_vdevice takes a template name:
// dcmi_virtual_intf.c:964-1010), so a share of a Shared chip can be
// enforced only where every size the allocator can admit is exactly one
// template's, charged what it takes. That holds where the model's
// templates, one per size (sharesTemplates), are each a whole number of
// one unit of cores and memory and any mix of them that fits the chip's
// units fits its AI CPUs too. The 910B2, 910B3 and 910B4 qualify with
// both templates (5 or 6 cores and 8 or 16 GiB a unit, four units a
// chip); the 310P3 with vir02_1c and vir04_3c (2 cores and 6 GiB a unit:
// eight vir01 would need 8 of its 7 AI CPUs); the 910A does not (its
// templates' HBM is no multiple of one size), nor a model without
// templates: their shares stay accounting only.
func (VNPUs) ShareGrid(c inventory.Chip) (vendors.ShareGrid, bool) {
	m, ok := vnpuModels[c.Model]
	if !ok || c.Cores <= 0 || c.MemoryBytes <= 0 {
		return vendors.ShareGrid{}, false
	}
	u, ok := unitGrid(m, int64(c.Cores), c.MemoryBytes)
	if !ok {
		return vendors.ShareGrid{}, false
	}
	whole := u.Whole()
	return vendors.ShareGrid{MemoryStep: u.MemoryBytes, MaxMemory: whole * u.MemoryBytes,
		CoresStep: u.Cores, MaxCores: whole * u.Cores, Units: &u}, true
}

// unitGrid finds the unit of model m on a chip of cores and memory: of
// the templates kept (sharesTemplates), those that take more than their
// units' part of the chip's AI CPUs, or the whole chip, are dropped and
// the unit found again, until every one takes at most its part (then no
// mix of templates that fits the units can run out of AI CPUs).
func unitGrid(m vendors.PartitionModel, cores, memory int64) (vendors.UnitGrid, bool) {
	kept := sharesTemplates(m.Templates)
	for len(kept) > 0 {
		var uc, um int64
		for _, t := range kept {
			uc, um = vendors.GCD(uc, t.Cores), vendors.GCD(um, t.MemoryBytes)
		}
		whole := min(cores/uc, memory/um)
		var next []vendors.Template
		for _, t := range kept {
			k := t.Cores / uc
			if t.MemoryBytes != k*um {
				return vendors.UnitGrid{}, false // cores and memory are not multiples of one unit
			}
			if k < whole && t.AICPUs*whole <= k*m.AICPUs {
				next = append(next, t)
			}
		}
		if len(next) < len(kept) {
			kept = next
			continue
		}
		if m.MaxInstances > 0 && whole/(kept[0].Cores/uc) > int64(m.MaxInstances) {
			return vendors.UnitGrid{}, false // more shares fit than the chip has vNPU ids
		}
		g := vendors.UnitGrid{Cores: uc, MemoryBytes: um, Templates: kept}
		for _, t := range kept {
			g.Sizes = append(g.Sizes, t.Cores/uc)
		}
		g.Sizes = append(g.Sizes, whole)
		return g, true
	}
	return vendors.UnitGrid{}, false
}

// sharesTemplates keeps one template per size (cores and memory), the one
// with the fewest AI CPUs, the first of the table on a tie (vir04_3c
// before vir04_3c_ndvpp): a share asks for a size, not a template, and
// fewer AI CPUs leave more shares room. Templates are smallest first.
func sharesTemplates(ts []vendors.Template) []vendors.Template {
	var out []vendors.Template
	for _, t := range ts {
		i := slices.IndexFunc(out, func(o vendors.Template) bool { return o.Cores == t.Cores && o.MemoryBytes == t.MemoryBytes })
		switch {
		case i < 0:
			out = append(out, t)
		case t.AICPUs < out[i].AICPUs:
			out[i] = t
		}
	}
	return out
}

// SizedTemplate implements vendors.SizedPartitions: the template of a
// share of memory and cores, which must be one size of the chip's grid.
func (v VNPUs) SizedTemplate(c inventory.Chip, memory, cores int64) (vendors.Template, error) {
	g, ok := v.ShareGrid(c)
	if !ok {
		return vendors.Template{}, fmt.Errorf("chip %d (%s) has no vNPU templates a share can be sized to", c.Index, c.Model)
	}
	u := g.Units
	units := cores / u.Cores
	if cores%u.Cores != 0 || memory != units*u.MemoryBytes {
		return vendors.Template{}, fmt.Errorf("a share of %d cores and %dMi on chip %d (%s) is not a whole number of its units (%d cores and %dMi); the sizes are %s",
			cores, memory>>20, c.Index, c.Model, u.Cores, u.MemoryBytes>>20, u.Describe())
	}
	t, err := u.Template(units)
	if err != nil {
		return vendors.Template{}, fmt.Errorf("a vNPU of chip %d (%s): %w", c.Index, c.Model, err)
	}
	return t, nil
}

var _ vendors.ModelShares = VNPUs{}

// ModelUnitGrid implements vendors.ModelShares: the grid of a chip of
// model with its AI cores (aiCoresPerChip), memory taken as ample, which
// it is on every chip of the models whose grid it is (the templates'
// units fill the cores first).
func (VNPUs) ModelUnitGrid(model string) (vendors.UnitGrid, bool) {
	m, ok := vnpuModels[model]
	cores := aiCoresPerChip[strings.TrimPrefix(model, "Ascend")]
	if !ok || cores <= 0 {
		return vendors.UnitGrid{}, false
	}
	return unitGrid(m, int64(cores), math.MaxInt64/2)
}

// Package partitions knows the partitions the vendors' drivers can cut a
// chip into, and makes and removes them with the vendors' tools.
//
// Two kinds, each the value of the shared accel-dra.dev/type attribute of
// the DRA device that stands for one partition:
//
//   - "vnpu": an Ascend virtual NPU (Ascend Virtualization Instance, AVI),
//     made from a fixed template (vir04, vir05_1c_16g, …) by
//     `npu-smi set -t create-vnpu`. The AI cores, AI CPUs and HBM of a vNPU
//     are carved out of the chip by the driver and firmware; a container
//     gets /dev/vdavinci<vnpu id> only, never the parent /dev/davinciN.
//   - "smlu": a Cambricon shared-MLU instance (sMLU), one of the driver's
//     default profiles 1/2 and 1/4 of the chip. The driver caps the
//     instance's device memory and its share of the MLU cores' time
//     (utilization quota); a container gets the chip's device nodes plus the
//     instance's capability node /dev/cambricon-caps/cap_devN_miK, without
//     which the driver refuses work on a chip in sMLU mode.
//
// Whole chips keep accel-dra.dev/type "chip". A chip that has partitions
// publishes a counter set (cores, memory and, for Ascend, aicpu) that its
// whole-chip device consumes completely and each partition device consumes
// in part, so the scheduler can never give out a whole chip together with
// one of its partitions, nor more partitions than fit (partitionable
// devices, beta and on by default in Kubernetes 1.37).
package partitions

import (
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// Partition kinds: values of accel-dra.dev/type besides names.TypeChip.
const (
	TypeVNPU = "vnpu"
	TypeSMLU = "smlu"
)

// Counter names of a chip's counter set (DNS labels, as the API requires).
const (
	CounterCores  = "cores"
	CounterMemory = "memory"
	CounterAICPU  = "aicpu"
)

// Template is one partition shape a chip supports.
type Template struct {
	// Name is the vendor's name of the shape: the npu-smi template
	// (vir04, vir05_1c_16g) or the sMLU profile ("50p.11654mb", the
	// driver's "<ipu quota %>p.<memory MiB>mb").
	Name string
	// Type is TypeVNPU or TypeSMLU.
	Type string
	// Slug names the partition devices: <chip>-<slug>-<k>, a DNS label.
	Slug string
	// Cores, MemoryBytes and AICPUs are what one partition takes from the
	// chip's counters; AICPUs is 0 where the chip has no aicpu counter.
	Cores       int64
	MemoryBytes int64
	AICPUs      int64
}

// Counters are the totals of a chip's counter set.
type Counters struct {
	Cores       int64
	MemoryBytes int64
	// AICPUs is 0 when the chip's AI CPUs are not counted.
	AICPUs int64
}

// Fits says how many partitions of t fit on an empty chip with counters c.
func (c Counters) Fits(t Template) int {
	n := -1
	limit := func(have, need int64) {
		if need <= 0 {
			return
		}
		if k := int(have / need); n < 0 || k < n {
			n = k
		}
	}
	limit(c.Cores, t.Cores)
	limit(c.MemoryBytes, t.MemoryBytes)
	if c.AICPUs > 0 {
		limit(c.AICPUs, t.AICPUs)
	}
	if n < 0 {
		return 0
	}
	return n
}

// Model is the partition facts of one chip model.
type Model struct {
	// AICPUs is the chip's AI CPU count where templates take AI CPUs
	// (Ascend); 0 leaves the aicpu counter out.
	AICPUs int64
	// MaxInstances bounds the partitions of one chip (the vNPU id range,
	// the sMLU default profiles); 0 means no bound beyond the counters.
	MaxInstances int
	// Templates are the shapes, smallest first.
	Templates []Template
}

const mib = int64(1) << 20

// vnpu is an Ascend template of HAMi's Ascend device config (MiB).
func vnpu(name string, cores, memoryMiB, aicpus int64) Template {
	return Template{Name: name, Type: TypeVNPU, Slug: strings.ReplaceAll(name, "_", "-"),
		Cores: cores, MemoryBytes: memoryMiB * mib, AICPUs: aicpus}
}

// ascendModels are the vNPU templates of docs/architecture.md's table, by the
// accel-dra.dev/model of the chip. AI cores, HBM and AI CPUs per template
// are the `templates` entries of HAMi's Ascend device config
// (Project-HAMi/ascend-device-plugin, ascend-device-configmap.yaml,
// "vnpus.configs"; memory in MiB), which agree with the Ascend documents:
//
//   - 310P3 (Atlas 300I Duo/300V): Huawei Cloud CCE "NPU virtualization
//     templates" (vir01 1 AI core 3 GiB 1 AI CPU, vir02 2/6 GiB/2,
//     vir04 4/12 GiB/4) and the Atlas 300V guide (hiascend 300V_0049:
//     templates vir01/vir02/vir04…, vnpu_id in [phy_id*16+100,
//     phy_id*16+107]); the chip has 7 AI CPUs, so at most 7 vNPUs ("1个昇腾AI
//     处理器最大支持切分7个虚拟化实例", MindX DL AVI guide cpaug_007), which
//     the aicpu counter enforces.
//   - 910A: vir02/vir04/vir08/vir16, "vir" + AI cores; a 30-core 910 holds
//     at most 15 instances, e.g. vir16+vir08+vir04+vir02 (cpaug_007). HAMi
//     sizes the HBM of each template in proportion to its cores (2184 MiB
//     per 2 cores of 32768 MiB / 30); the templates take no AI CPUs.
//   - 910B3 / 910B4: vir05_1c_16g, vir10_3c_32g / vir05_1c_8g,
//     vir10_3c_16g ("vir<cores>_<AI CPUs>c_<HBM>g"); npu-smi info -t
//     template-info on an Atlas 800T A2 prints vir10_3c_16g as 10 AI cores,
//     16 GB, 3 AI CPUs and vir05_1c_8g as 5, 8 GB, 1; the chip has 7 AI
//     CPUs (info-vnpu "AICPU 1/7" left after two vir10_3c_16g).
//
// vNPU ids of one chip lie in [phy_id*16+100, phy_id*16+115] (npu-smi
// create-vnpu -v), 16 ids; the 310P range is 8 ids.
var ascendModels = map[string]Model{
	"Ascend910A": {MaxInstances: 16, Templates: []Template{
		vnpu("vir02", 2, 2184, 0), vnpu("vir04", 4, 4369, 0), vnpu("vir08", 8, 8738, 0), vnpu("vir16", 16, 17476, 0),
	}},
	"Ascend910B3": {AICPUs: 7, MaxInstances: 16, Templates: []Template{
		vnpu("vir05_1c_16g", 5, 16384, 1), vnpu("vir10_3c_32g", 10, 32768, 3),
	}},
	"Ascend910B4": {AICPUs: 7, MaxInstances: 16, Templates: []Template{
		vnpu("vir05_1c_8g", 5, 8192, 1), vnpu("vir10_3c_16g", 10, 16384, 3),
	}},
	"Ascend310P3": {AICPUs: 7, MaxInstances: 8, Templates: []Template{
		vnpu("vir01", 1, 3072, 1), vnpu("vir02", 2, 6144, 2), vnpu("vir04", 4, 12288, 4),
	}},
}

// smluFractions are the default sMLU profiles the Cambricon driver creates
// on every chip that supports sMLU: the whole chip, 1/2 and 1/4 of its IPU
// (MLU core) utilization and memory (smlu/smlu_internal.h
// default_profile_spec = {1, 2, 4}; smlu/smlu_core.c
// smlu_default_profile_init names them "%llup.%llumb", IPU quota in
// percent and memory in MiB), in the MLU driver source published as
// github.com/jklincn/cambricon-mlu-driver. The whole-chip profile is the
// whole-chip device, so only 1/2 and 1/4 become partitions.
var smluFractions = []int64{2, 4}

// smluSupported says whether a Cambricon model supports sMLU: the driver
// enables it on MLU3xx and later (smlu/smlu_core.c cn_is_smlu_support:
// MLUID_MAJOR_ID(device_id) >= 3, and not while MIM is on), so MLU370 and
// MLU590 but not MLU270.
func smluSupported(model string) bool {
	return strings.HasPrefix(model, "MLU3") || strings.HasPrefix(model, "MLU5")
}

// ModelOf returns the partition facts of a chip, or false when its model
// cannot be partitioned (or its cores or memory are unknown).
func ModelOf(c inventory.Chip) (Model, bool) {
	if c.Cores <= 0 || c.MemoryBytes <= 0 {
		return Model{}, false
	}
	switch c.Vendor {
	case inventory.VendorHuawei:
		m, ok := ascendModels[c.Model]
		return m, ok
	case inventory.VendorCambricon:
		if !smluSupported(c.Model) {
			return Model{}, false
		}
		m := Model{MaxInstances: 4}
		for _, f := range smluFractions {
			pct := 100 / f
			m.Templates = append(m.Templates, Template{
				Name:        fmt.Sprintf("%dp.%dmb", pct, c.MemoryBytes/f/mib),
				Type:        TypeSMLU,
				Slug:        fmt.Sprintf("smlu-%dp", pct),
				Cores:       int64(c.Cores) / f,
				MemoryBytes: c.MemoryBytes / f,
			})
		}
		// Smallest first, like the Ascend tables.
		m.Templates[0], m.Templates[1] = m.Templates[1], m.Templates[0]
		return m, true
	}
	return Model{}, false
}

// CountersOf returns the counter set totals of a chip that has partitions.
func CountersOf(c inventory.Chip) Counters {
	m, _ := ModelOf(c)
	return Counters{Cores: int64(c.Cores), MemoryBytes: c.MemoryBytes, AICPUs: m.AICPUs}
}

// Slot is one partition device a chip publishes: the k-th partition of a
// template.
type Slot struct {
	Template Template
	// K numbers the slots of one template from 0.
	K int
}

// Slots lists the partition devices of a chip: for every template as many
// as fit on the empty chip (the counters keep their sum in bounds).
func Slots(c inventory.Chip) []Slot {
	m, ok := ModelOf(c)
	if !ok {
		return nil
	}
	counters := CountersOf(c)
	var out []Slot
	for _, t := range m.Templates {
		n := counters.Fits(t)
		if m.MaxInstances > 0 && n > m.MaxInstances {
			n = m.MaxInstances
		}
		for k := 0; k < n; k++ {
			out = append(out, Slot{Template: t, K: k})
		}
	}
	return out
}

// ChipDeviceName is the DRA device name of a whole chip: npu-N or mlu-N.
func ChipDeviceName(c inventory.Chip) string {
	return fmt.Sprintf("%s-%d", names.DevicePrefix(c.Vendor), c.Index)
}

// DeviceName is the DRA device name of a partition slot, a DNS label:
// npu-0-vir04-1, npu-3-vir05-1c-16g-0, mlu-2-smlu-25p-3.
func DeviceName(c inventory.Chip, s Slot) string {
	return fmt.Sprintf("%s-%s-%d", ChipDeviceName(c), s.Template.Slug, s.K)
}

// CounterSetName is the name of a chip's counter set: its device name.
func CounterSetName(c inventory.Chip) string { return ChipDeviceName(c) }

// TemplateByName finds a template of a chip by its vendor name.
func TemplateByName(c inventory.Chip, name string) (Template, bool) {
	m, ok := ModelOf(c)
	if !ok {
		return Template{}, false
	}
	for _, t := range m.Templates {
		if t.Name == name {
			return t, true
		}
	}
	return Template{}, false
}

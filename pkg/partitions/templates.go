// Package partitions knows the partitions the vendors' drivers can cut a
// chip into, and makes and removes them with the vendors' tools. The
// templates and tools are each vendor's (partitions.Vendor, implemented in
// pkg/vendors/<vendor>); this package holds the types, the slots a chip
// publishes, and the chip modes (policy.go).
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

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Partition kinds: values of accel-dra.dev/type besides names.TypeChip
// (the Ascend vNPU and the Cambricon sMLU; a vendor adds its own).
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

// ModelOf returns the partition facts of a chip, or false when its model
// cannot be partitioned (or its cores or memory are unknown, or its vendor
// has no partitions).
func ModelOf(c inventory.Chip) (Model, bool) {
	if c.Cores <= 0 || c.MemoryBytes <= 0 {
		return Model{}, false
	}
	v, ok := vendorOf(c.Vendor)
	if !ok {
		return Model{}, false
	}
	return v.PartitionModel(c)
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
	prefix := vendors.NamesOf(c.Vendor).DevicePrefix
	if prefix == "" {
		// Not a registered vendor: still a distinct, readable name.
		prefix = string(c.Vendor)
	}
	return fmt.Sprintf("%s-%d", prefix, c.Index)
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

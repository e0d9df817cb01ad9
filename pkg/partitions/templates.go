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

// Package partitions knows the partitions the vendors' drivers can cut a
// chip into, and makes and removes them with the vendors' tools. The
// templates and tools are each vendor's (vendors.Partitions, implemented in
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
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Counter names of a chip's counter set (DNS labels, as the API requires).
const (
	CounterCores  = "cores"
	CounterMemory = "memory"
	CounterAICPU  = "aicpu"
)

// ModelOf returns the partition facts of a chip of a vendor of reg
// (vendors.PartitionModelOf), or false when it has none.
func ModelOf(reg vendors.Registry, c inventory.Chip) (vendors.PartitionModel, bool) {
	v, _ := reg.Lookup(c.Vendor)
	return vendors.PartitionModelOf(v, c)
}

// CountersOf returns the counter set totals of a chip that has partitions.
func CountersOf(reg vendors.Registry, c inventory.Chip) vendors.Counters {
	m, _ := ModelOf(reg, c)
	return m.Counters(c)
}

// Slots lists the partition devices of a chip (vendors.PartitionModel.Slots),
// none when it has no partitions.
func Slots(reg vendors.Registry, c inventory.Chip) []vendors.Slot {
	m, ok := ModelOf(reg, c)
	if !ok {
		return nil
	}
	return m.Slots(c)
}

// TemplateByName finds a template of a chip by its vendor name.
func TemplateByName(reg vendors.Registry, c inventory.Chip, name string) (vendors.Template, bool) {
	m, ok := ModelOf(reg, c)
	if !ok {
		return vendors.Template{}, false
	}
	return m.Template(name)
}

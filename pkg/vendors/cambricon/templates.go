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

package cambricon

import (
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

const mebibyte = int64(1) << 20

// smluFractions are the default sMLU profiles the Cambricon driver creates
// on every chip that supports sMLU: the whole chip, 1/2 and 1/4 of its IPU
// (MLU core) utilization and memory, named "<quota>p.<MiB>mb"
// (docs/hardware.md#smlu-instances). The whole-chip profile is the
// whole-chip device, so only 1/2 and 1/4 become partitions.
var smluFractions = []int64{2, 4}

// smluSupported says whether a Cambricon model supports sMLU: the driver
// enables it on MLU3xx and later (smlu/smlu_core.c cn_is_smlu_support:
// MLUID_MAJOR_ID(device_id) >= 3, and not while MIM is on), so MLU370 and
// MLU590 but not MLU270.
func smluSupported(model string) bool {
	return strings.HasPrefix(model, "MLU3") || strings.HasPrefix(model, "MLU5")
}

// PartitionType is the accel-dra.dev/type of an sMLU partition device.
const PartitionType = "smlu"

// SMLUs are Cambricon's partitions, the sMLU instances of cnmon and
// CNDev: they implement vendors.Partitions.
type SMLUs struct{}

var _ vendors.Partitions = SMLUs{}

// Partitions implements vendors.Vendor.
func (Cambricon) Partitions() vendors.Partitions { return SMLUs{} }

// Model implements vendors.Partitions: the driver's default sMLU
// profiles, 1/2 and 1/4 of the chip, where the model supports sMLU.
func (SMLUs) Model(c inventory.Chip) (vendors.PartitionModel, bool) {
	if !smluSupported(c.Model) {
		return vendors.PartitionModel{}, false
	}
	m := vendors.PartitionModel{MaxInstances: 4}
	for _, f := range smluFractions {
		pct := 100 / f
		m.Templates = append(m.Templates, vendors.Template{
			Name:        fmt.Sprintf("%dp.%dmb", pct, c.MemoryBytes/f/mebibyte),
			Type:        PartitionType,
			Slug:        fmt.Sprintf("smlu-%dp", pct),
			Cores:       int64(c.Cores) / f,
			MemoryBytes: c.MemoryBytes / f,
		})
	}
	// Smallest first, like the Ascend tables.
	m.Templates[0], m.Templates[1] = m.Templates[1], m.Templates[0]
	return m, true
}

// SourceSizedSMLU is the Chip.Sources fact discovery sets where the
// node's libcndev has the dynamic sMLU calls (cndevCreateSMluProfileInfo
// and cndevDestroySMluProfileInfo): only there can prepare carve a share.
// cnmon has no public command for a new profile.
const SourceSizedSMLU = "sizedPartitions"

var _ vendors.SizedPartitions = SMLUs{}

// ShareGrid implements vendors.SizedPartitions: on a chip with sMLU whose
// libcndev makes profiles, a share takes memory in steps of 1% of the
// chip's, the unit Cambricon's device plugin carves dynamic sMLUs in
// (cambricon-k8s-device-plugin@3c9ed24 device-plugin/pkg/mlu/server.go
// lines 379-384: without --min-dsmlu-unit, memUnit is the chip's MiB /
// 100, and bindings.go line 98 asks for vmemory × memUnit MiB), and MLU
// cores in the smallest step whose quota is a whole percent: the driver
// counts the IPU quota in percent of the chip (jklincn/cambricon-mlu-driver
// smlu/smlu_core.c line 252, total 100), so 4 of an MLU370-X8 chip's 16
// cores are 25%. The sMLU mode being on is the policy's check
// (Chip.PartitionModeOff).
func (SMLUs) ShareGrid(c inventory.Chip) (vendors.ShareGrid, bool) {
	if !smluSupported(c.Model) || c.Sources[SourceSizedSMLU] == "" || c.Cores <= 0 {
		return vendors.ShareGrid{}, false
	}
	mem := c.MemoryBytes / mebibyte / 100 * mebibyte
	if mem <= 0 {
		return vendors.ShareGrid{}, false
	}
	cores := int64(c.Cores)
	step := cores / vendors.GCD(cores, 100)
	return vendors.ShareGrid{MemoryStep: mem, MaxMemory: 100 * mem, CoresStep: step, MaxCores: cores}, true
}

// SizedTemplate implements vendors.SizedPartitions: the sMLU profile of
// the share, named as the driver names profiles, "<quota>p.<MiB>mb"
// (smlu/smlu_core.c lines 1069-1071), the quota the share's cores in
// percent of the chip's.
func (s SMLUs) SizedTemplate(c inventory.Chip, memory, cores int64) (vendors.Template, error) {
	g, ok := s.ShareGrid(c)
	if !ok {
		return vendors.Template{}, fmt.Errorf("chip %d (%s) has no dynamic sMLU", c.Index, c.Model)
	}
	if err := g.Check(memory, cores); err != nil {
		return vendors.Template{}, fmt.Errorf("a dynamic sMLU of chip %d: %w", c.Index, err)
	}
	quota := cores * 100 / int64(c.Cores)
	return vendors.Template{Name: fmt.Sprintf("%dp.%dmb", quota, memory/mebibyte), Type: PartitionType,
		Slug: fmt.Sprintf("smlu-%dp-%dmb", quota, memory/mebibyte), Cores: cores, MemoryBytes: memory}, nil
}

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

package partitions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func chip(v inventory.Vendor, model string, index, cores int, memory int64) inventory.Chip {
	nodes := []string{fmt.Sprintf("/dev/davinci%d", index)}
	if v == cambricon.Vendor {
		nodes = []string{fmt.Sprintf("/dev/cambricon_dev%d", index), fmt.Sprintf("/dev/cambricon_ipcm%d", index)}
	}
	return inventory.Chip{Vendor: v, Model: model, Index: index, Cores: cores, MemoryBytes: memory,
		DeviceNodes: nodes, Extra: map[string]inventory.Value{"logicId": inventory.IntValue(int64(index))}}
}

const gib = int64(1) << 30

// registry is the vendors the binaries serve.
var registry = all.Registry()

func TestEveryModelPublishesAsManySlotsPerTemplateAsFitOnAnEmptyChip(t *testing.T) {
	tests := []struct {
		name string
		chip inventory.Chip
		want map[string]int // template -> slots
	}{
		{"910A: 30 AI cores take 15 vir02, 7 vir04, 3 vir08, 1 vir16",
			chip(ascend.Vendor, "Ascend910A", 0, 30, 32*gib), map[string]int{"vir02": 15, "vir04": 7, "vir08": 3, "vir16": 1}},
		{"910B3: 4 vir05_1c_16g or 2 vir10_3c_32g",
			chip(ascend.Vendor, "Ascend910B3", 0, 20, 64*gib), map[string]int{"vir05_1c_16g": 4, "vir10_3c_32g": 2}},
		{"910B4: 4 vir05_1c_8g or 2 vir10_3c_16g",
			chip(ascend.Vendor, "Ascend910B4", 0, 20, 32*gib), map[string]int{"vir05_1c_8g": 4, "vir10_3c_16g": 2}},
		{"310P3: 7 AI CPUs allow 7 vir01, 3 vir02 and 1 vir04; 8 AI cores 4 vir02_1c, 2 vir04_3c",
			chip(ascend.Vendor, "Ascend310P3", 0, 8, 24*gib), map[string]int{"vir01": 7, "vir02": 3, "vir02_1c": 4, "vir04": 1,
				"vir04_3c": 2, "vir04_3c_ndvpp": 2, "vir04_4c_dvpp": 1}},
		{"MLU370-X8: the driver's 1/4 and 1/2 sMLU profiles",
			chip(cambricon.Vendor, "MLU370-X8", 0, 16, 23308<<20), map[string]int{"25p.5827mb": 4, "50p.11654mb": 2}},
		{"MLU590: the same fractions of 96 GiB",
			chip(cambricon.Vendor, "MLU590", 0, 48, 96*gib), map[string]int{"25p.24576mb": 4, "50p.49152mb": 2}},
		{"MLU270: no sMLU before MLU3xx", chip(cambricon.Vendor, "MLU270-S4", 0, 16, 16*gib), map[string]int{}},
		{"910B2: 6 AI CPUs", chip(ascend.Vendor, "Ascend910B2", 0, 24, 64*gib), map[string]int{"vir06_1c_16g": 4, "vir12_3c_32g": 2}},
		{"an Ascend model without templates", chip(ascend.Vendor, "Ascend910B1", 0, 25, 64*gib), map[string]int{}},
		{"unknown cores: no partitions", chip(ascend.Vendor, "Ascend910B3", 0, 0, 64*gib), map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			names := map[string]bool{}
			for _, s := range partitions.Slots(registry, tt.chip) {
				got[s.Template.Name]++
				name := registry.PartitionDeviceName(tt.chip, s)
				require.False(t, names[name], "device name %s twice", name)
				names[name] = true
				require.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, name, "a DNS label")
				require.LessOrEqual(t, len(name), 63)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDeviceNamesReadAsChipTemplateAndNumber(t *testing.T) {
	c := chip(ascend.Vendor, "Ascend910B3", 3, 20, 64*gib)
	slots := partitions.Slots(registry, c)
	require.Equal(t, "npu-3-vir05-1c-16g-0", registry.PartitionDeviceName(c, slots[0]))
	require.Equal(t, "npu-3-vir10-3c-32g-1", registry.PartitionDeviceName(c, slots[len(slots)-1]))
	m := chip(cambricon.Vendor, "MLU370-X8", 7, 16, 23308<<20)
	require.Equal(t, "mlu-7-smlu-25p-0", registry.PartitionDeviceName(m, partitions.Slots(registry, m)[0]))
}

func TestPolicyGivesEachChipItsMode(t *testing.T) {
	npu0 := chip(ascend.Vendor, "Ascend910B3", 0, 20, 64*gib)
	npu1 := chip(ascend.Vendor, "Ascend910B3", 1, 20, 64*gib)
	mlu0 := chip(cambricon.Vendor, "MLU370-X8", 0, 16, 23308<<20)
	mlu270 := chip(cambricon.Vendor, "MLU270-S4", 1, 16, 16*gib)
	tests := []struct {
		spec string
		want [4]partitions.Mode // npu0, npu1, mlu0, mlu270
		err  string
	}{
		{"", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{" , ", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"npu-*=Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModePartitioned, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"mlu-0=Partitioned", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeWhole, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"Shared", [4]partitions.Mode{partitions.ModeShared, partitions.ModeShared, partitions.ModeShared, partitions.ModeShared}, ""},
		{"npu-1=Shared, mlu-*=Whole", [4]partitions.Mode{partitions.ModeWhole, partitions.ModeShared, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"Partitioned,npu-1=Shared", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModeShared, partitions.ModePartitioned, partitions.ModeWhole}, ""},
		{"Whole,npu-*=Shared,npu-0=Partitioned", [4]partitions.Mode{partitions.ModePartitioned, partitions.ModeShared, partitions.ModeWhole, partitions.ModeWhole}, ""},
		{"npu-0=Exclusive", [4]partitions.Mode{}, `chip modes entry 1 "npu-0=Exclusive": mode "Exclusive" is not one of Partitioned, Shared, Whole`},
		{"gpu-0=Shared", [4]partitions.Mode{}, `chip modes entry 1 "gpu-0=Shared": "gpu-0" is not a chip device name (npu-N, mlu-N, npu-* or mlu-*)`},
		{"npu-01=Shared", [4]partitions.Mode{}, `"npu-01" is not a chip device name`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, err := partitions.ParsePolicy(registry, tt.spec)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got := [4]partitions.Mode{p.ModeOf(npu0), p.ModeOf(npu1), p.ModeOf(mlu0), p.ModeOf(mlu270)}
			require.Equal(t, tt.want, got)
			again, err := partitions.ParsePolicy(registry, p.String())
			require.NoError(t, err)
			require.Equal(t, p, again, "String round-trips")
		})
	}
}

func TestChipsAreWholeUnlessThePolicyAsksForMore(t *testing.T) {
	npu := chip(ascend.Vendor, "Ascend910B3", 0, 20, 64*gib)
	mlu := chip(cambricon.Vendor, "MLU370-X8", 0, 16, 23308<<20)
	tests := []struct {
		name   string
		policy partitions.Policy
		want   partitions.Mode
	}{
		{"the zero policy publishes whole chips", partitions.Policy{}, partitions.ModeWhole},
		{"an empty default is Whole", partitions.Policy{Chips: map[string]partitions.Mode{"npu-1": partitions.ModeShared}, Registry: registry}, partitions.ModeWhole},
		{"a Partitioned default partitions", partitions.Policy{Default: partitions.ModePartitioned, Registry: registry}, partitions.ModePartitioned},
		{"no partition tool makes Partitioned chips Whole", partitions.Policy{Default: partitions.ModePartitioned, NoPartitions: true, Registry: registry}, partitions.ModeWhole},
		{"no partition tool leaves Shared chips shared", partitions.Policy{Default: partitions.ModeShared, NoPartitions: true, Registry: registry}, partitions.ModeShared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.policy.ModeOf(npu), "npu-0")
			require.Equal(t, tt.want, tt.policy.ModeOf(mlu), "mlu-0")
		})
	}
}

// A chip whose vendor partition mode is off (discovery detected it) is
// published Whole where Partitioned is asked for, and WhyWhole names the
// reason the agent logs; Shared chips are not partitions and stay Shared.
func TestAChipWhosePartitionModeIsOffIsWhole(t *testing.T) {
	off := chip(ascend.Vendor, "Ascend910B3", 0, 20, 64*gib)
	off.PartitionModeOff = "npu-smi info -t vnpu-mode: vnpu-mode is not docker"
	on := chip(cambricon.Vendor, "MLU370-X8", 0, 16, 23308<<20)
	noModel := chip(cambricon.Vendor, "MLU-unknown", 1, 4, 8<<30)
	tests := []struct {
		name    string
		policy  partitions.Policy
		chip    inventory.Chip
		want    partitions.Mode
		whyPart string
	}{
		{"mode off: Whole, with the detected reason", partitions.Policy{Default: partitions.ModePartitioned, Registry: registry}, off, partitions.ModeWhole, "vnpu-mode is not docker"},
		{"mode off does not stop sharing", partitions.Policy{Default: partitions.ModeShared, Registry: registry}, off, partitions.ModeShared, "vnpu-mode is not docker"},
		{"mode on: Partitioned", partitions.Policy{Default: partitions.ModePartitioned, Registry: registry}, on, partitions.ModePartitioned, ""},
		{"no templates: Whole, naming the model", partitions.Policy{Default: partitions.ModePartitioned, Registry: registry}, noModel, partitions.ModeWhole, "model MLU-unknown has no partition templates"},
		{"no tool: Whole", partitions.Policy{Default: partitions.ModePartitioned, NoPartitions: true, Registry: registry}, on, partitions.ModeWhole, "no partition tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.policy.ModeOf(tt.chip))
			require.Equal(t, tt.policy.Default, tt.policy.Requested(tt.chip))
			if tt.whyPart == "" {
				require.Empty(t, tt.policy.WhyWhole(tt.chip))
			} else {
				require.Contains(t, tt.policy.WhyWhole(tt.chip), tt.whyPart)
			}
		})
	}
}

// step is one command a tool is expected to run and the recording it gets.

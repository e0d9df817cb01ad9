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
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// ProfileNodeCommand implements vendors.Partitions: npu-smi's
// vNPU commands (info -m, info -t info-vnpu, set -t create-vnpu and
// destroy-vnpu) in the layouts of the recordings in testdata/vnpu.
func (VNPUs) ProfileNodeCommand(n vendors.ProfileNodePartitions, cmd string, args []string) ([]byte, error) {
	fl := vendors.ToolFlags(args)
	if len(args) == 2 && args[0] == "info" && args[1] == "-m" {
		return npuSmiMapping(n.Chips()), nil
	}
	if len(args) == 0 {
		return nil, vendors.ToolError(cmd, "unsupported command")
	}
	// Simulated chips: NPU ID = physical index, chip 0 (as on 8-card
	// training servers, testdata/vnpu/npu-smi_info_-m.txt).
	npu, err := strconv.Atoi(fl["-i"])
	if err != nil || fl["-c"] != "0" {
		return nil, vendors.ToolError(cmd, "invalid -i/-c")
	}
	c, ok := n.Chip(npu)
	if !ok {
		return nil, vendors.ToolError(cmd, "device %d does not exist", npu)
	}
	st, err := n.Load()
	if err != nil {
		return nil, err
	}
	switch {
	case args[0] == "info" && fl["-t"] == "info-vnpu":
		return vnpuInfo(c, st.Partitions[vendors.PartitionKey(c)]), nil
	case args[0] == "set" && fl["-t"] == "create-vnpu":
		m, _ := vendors.PartitionModelOf(Ascend{}, c)
		t, ok := m.Template(fl["-f"])
		if !ok || t.Type != PartitionType {
			return nil, vendors.ToolError(cmd, "the vnpu template %s is not supported", fl["-f"])
		}
		id, err := strconv.Atoi(fl["-v"])
		first, size := VNPUIDRange(c)
		if err != nil || id < first || id >= first+size {
			return nil, vendors.ToolError(cmd, "the vnpu id %s is out of range [%d, %d]", fl["-v"], first, first+size-1)
		}
		for _, list := range st.Partitions {
			for _, p := range list {
				if p.Type == PartitionType && p.ID == id {
					return nil, vendors.ToolError(cmd, "the vnpu id %d already exists", id)
				}
			}
		}
		if err := m.FitsNextTo(c, st.Partitions[vendors.PartitionKey(c)], t); err != nil {
			return nil, vendors.ToolError(cmd, "%v", err)
		}
		inst := vnpuInstance(c, id, t.Name)
		if err := n.Mknod(inst.DeviceNode); err != nil {
			return nil, err
		}
		st.Partitions[vendors.PartitionKey(c)] = append(st.Partitions[vendors.PartitionKey(c)], inst)
		if err := n.Save(st); err != nil {
			return nil, err
		}
		return []byte("\tStatus                         : OK\n\tMessage                        : Create vnpu success\n"), nil
	case args[0] == "set" && fl["-t"] == "destroy-vnpu":
		id, err := strconv.Atoi(fl["-v"])
		if err != nil {
			return nil, vendors.ToolError(cmd, "invalid vnpu id")
		}
		list, removed := vendors.WithoutInstance(st.Partitions[vendors.PartitionKey(c)], id)
		if removed == nil {
			return nil, vendors.ToolError(cmd, "the vnpu %d does not exist", id)
		}
		st.Partitions[vendors.PartitionKey(c)] = list
		if err := n.Save(st); err != nil {
			return nil, err
		}
		if err := n.Rmnod(removed.DeviceNode); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("\tStatus                         : OK\n\tMessage                        : Destroy vnpu %d success\n", id)), nil
	}
	return nil, vendors.ToolError(cmd, "unsupported command")
}

// npuSmiMapping is `npu-smi info -m` of the simulated chips.
func npuSmiMapping(chips []inventory.Chip) []byte {
	var b strings.Builder
	b.WriteString("\tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name                     \n")
	for _, c := range chips {
		logic := int64(c.Index)
		if v, ok := c.Extra[ExtraLogicID]; ok && v.Int != nil {
			logic = *v.Int
		}
		name := c.Model
		if v, ok := c.Extra[ExtraChipName]; ok && v.String != nil {
			name = "Ascend " + *v.String
		}
		fmt.Fprintf(&b, "\t%-30d %-30d %-30d %s\n", c.Index, 0, logic, name)
	}
	return []byte(b.String())
}

// vnpuInfo is `npu-smi info -t info-vnpu` of chip c with the vNPUs in list.
func vnpuInfo(c inventory.Chip, list []vendors.Instance) []byte {
	m, _ := vendors.PartitionModelOf(Ascend{}, c)
	used, total := m.Usage(list), m.Counters(c)
	rule := "+-------------------------------------------------------------------------------+\n"
	var b strings.Builder
	b.WriteString(rule)
	b.WriteString("| NPU resource static info as follow:                                           |\n")
	b.WriteString("| Format:Free/Total                   NA: Currently, query is not supported.    |\n")
	b.WriteString("| AICORE    Memory    AICPU    VPC    VENC    VDEC    JPEGD    JPEGE    PNGD    |\n")
	b.WriteString("|            GB                                                                 |\n")
	b.WriteString("|===============================================================================|\n")
	cell := func(free, tot int64) string {
		if tot == 0 {
			return "NA/NA"
		}
		return fmt.Sprintf("%d/%d", free, tot)
	}
	fmt.Fprintf(&b, "| %-9s %-9s %-8s %-6s %-7s %-7s %-8s %-8s %-8s|\n",
		cell(total.Cores-used.Cores, total.Cores), cell((total.MemoryBytes-used.MemoryBytes)>>30, total.MemoryBytes>>30),
		cell(total.AICPUs-used.AICPUs, total.AICPUs), "NA/NA", "NA/NA", "NA/NA", "NA/NA", "NA/NA", "NA/NA")
	b.WriteString(rule)
	fmt.Fprintf(&b, "| Total number of vnpu: %-2d                                                      |\n", len(list))
	b.WriteString(rule)
	b.WriteString("|  Vnpu ID  |  Vgroup ID     |  Container ID  |  Status  |  Template Name       |\n")
	b.WriteString(rule)
	for i, p := range list {
		fmt.Fprintf(&b, "|  %-8d |  %-13d |  %-13s |  %-7d |  %-19s |\n", p.ID, i, "000000000000", 0, p.Template)
		b.WriteString(rule)
	}
	return []byte(b.String())
}

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

// Physical ids from `npu-smi info -t phyid-remap -p <phy>`. Outside the
// 910_93, neither `npu-smi info` (its "Device" column is the logic id) nor
// `npu-smi info -m` prints a chip's physical id, which names its device
// file /dev/davinci<phy>. The remap query goes the other way: given a
// physical id it prints
//
//	Chip Physical ID              :2
//	Chip Logic ID                 :0
//	NPU ID                        :2
//	Chip ID                       :0
//
// (npu_chip_info.c:920-938, show_ascend_chip_phyid_remap_info, driver
// source GitHub verylucky01/driver e29d066,
// src/custom/dev_prod/user/npucli/src; NPU_SMI_V2 builds print "Chip
// Phy-ID", "NPU ID", "Slot ID", "Chip ID", lines 940-954). So the backend
// asks it once per device file.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// PhyIDRemap is what `npu-smi info -t phyid-remap -p <phy>` prints.
type PhyIDRemap struct {
	PhysicalID, NPU, Chip int
	// LogicID is -1 where the tool does not print it (NPU_SMI_V2).
	LogicID int
}

// ParsePhyIDRemap parses the output of `npu-smi info -t phyid-remap -p N`.
func ParsePhyIDRemap(source string, data []byte) (PhyIDRemap, error) {
	r := PhyIDRemap{PhysicalID: -1, NPU: -1, Chip: -1, LogicID: -1}
	fields := map[string]*int{
		"Chip Physical ID": &r.PhysicalID, "Chip Phy-ID": &r.PhysicalID,
		"Chip Logic ID": &r.LogicID, "NPU ID": &r.NPU, "Chip ID": &r.Chip,
	}
	for l := range keyValueLines(data, ":") {
		dst, ok := fields[l.Key]
		if !ok || !l.HasSep {
			continue // "Slot ID", and whatever later releases add
		}
		n, err := strconv.Atoi(l.Value)
		if err != nil || n < 0 {
			return PhyIDRemap{}, &discovery.ParseError{Source: source, Line: l.No, Text: l.Text,
				Msg: fmt.Sprintf("%s %q is not a non-negative integer", l.Key, l.Value)}
		}
		*dst = n
	}
	for _, need := range []struct {
		key string
		v   int
	}{{"Chip Physical ID", r.PhysicalID}, {"NPU ID", r.NPU}, {"Chip ID", r.Chip}} {
		if need.v < 0 {
			return PhyIDRemap{}, &discovery.ParseError{Source: source, Msg: "no " + need.key + " line"}
		}
	}
	return r, nil
}

// physicalIDs fills in the physical id of every mapping that has none,
// asking npu-smi for the chip behind each device file. Where the tool
// cannot answer (a release without the query), the logic id keeps
// standing in for the physical id, with a log line.
func (b *Backend) physicalIDs(ctx context.Context, devs []int, infos []ChipInfo, mappings []ChipMapping) error {
	for _, c := range infos {
		if c.PhysicalID >= 0 {
			return nil // the table prints them
		}
	}
	for _, m := range mappings {
		if m.PhysicalID >= 0 {
			return nil
		}
	}
	key := fmt.Sprint(devs)
	b.mu.Lock()
	byChip, cached := b.phyIDs, b.phyIDsFor == key
	b.mu.Unlock()
	if !cached {
		var err error
		if byChip, err = b.remap(ctx, devs); err != nil {
			return err
		}
		b.mu.Lock()
		b.phyIDs, b.phyIDsFor = byChip, key
		b.mu.Unlock()
	}
	for i, m := range mappings {
		if phy, ok := byChip[[2]int{m.NPU, m.Chip}]; ok {
			mappings[i].PhysicalID = phy
		}
	}
	return nil
}

// remap asks npu-smi which chip is behind each device file; nil when it
// cannot tell.
func (b *Backend) remap(ctx context.Context, devs []int) (map[[2]int]int, error) {
	byChip := map[[2]int]int{}
	for _, n := range devs {
		r, err := discovery.Query(ctx, b.runner, fmt.Sprintf("reading the chip behind %s", devPath(n)), ParsePhyIDRemap,
			b.npuSmi, "info", "-t", "phyid-remap", "-p", strconv.Itoa(n))
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			b.logOnce(ctx, "phyid-remap", "npu-smi cannot map device files to chips, taking logic ids for physical ids", "err", err)
			return nil, nil
		}
		if r.PhysicalID != n {
			b.logOnce(ctx, "phyid-remap", "npu-smi answers for another physical id than asked, taking logic ids for physical ids",
				"asked", n, "answered", r.PhysicalID)
			return nil, nil
		}
		byChip[[2]int{r.NPU, r.Chip}] = n
	}
	return byChip, nil
}

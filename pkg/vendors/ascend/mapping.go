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

// Parser for `npu-smi info -m`, the mapping of every chip of every NPU to its
// logic id:
//
//	NPU ID     Chip ID     Chip Logic ID     Chip Name
//	0          0           0                 Ascend 910B3
//	0          1           -                 Mcu
//
// Rows whose logic id is "-" are management chips (Mcu) that are no compute
// device and have no /dev/davinciN; they are skipped. Newer npu-smi versions
// add a "Chip Phy-ID" column before the name on A3 servers. The recordings
// of each layout: testdata/README.md.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// ChipMapping is one compute-chip row of `npu-smi info -m`.
type ChipMapping struct {
	NPU  int
	Chip int
	// LogicID is the chip's logic id: what the Ascend runtime calls device
	// N, and what ASCEND_RT_VISIBLE_DEVICES counts.
	LogicID int
	// PhysicalID is the "Chip Phy-ID" column; -1 when npu-smi has none.
	PhysicalID int
	// Name is the chip name as -m prints it, e.g. "Ascend 910B3".
	Name string
	// Line and Text locate the row, for messages.
	Line int
	Text string
	// RowError says why the row did not parse, where its NPU and chip ids
	// still did: that chip is left out, the others are read.
	RowError string
}

var (
	mappingHeader      = []string{"NPU", "ID", "Chip", "ID", "Chip", "Logic", "ID", "Chip", "Name"}
	mappingHeaderPhyID = []string{"NPU", "ID", "Chip", "ID", "Chip", "Logic", "ID", "Chip", "Phy-ID", "Chip", "Name"}
)

// ParseMapping parses the output of `npu-smi info -m`. source is the command
// line, used in errors.
// long: a single-pass parser of npu-smi's table, its state local to it;
// vendor-internal parsing, reworked separately (issue 42).
func ParseMapping(source string, data []byte) ([]ChipMapping, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		rows       []ChipMapping
		haveHeader bool
		hasPhyID   bool
		seenChip   = map[[2]int]int{}
		seenLogic  = map[int]int{}
	)
	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			continue
		}
		fields := strings.Fields(trimmed)
		if !haveHeader {
			switch {
			case slices.Equal(fields, mappingHeader):
			case slices.Equal(fields, mappingHeaderPhyID):
				hasPhyID = true
			default:
				return nil, perr(lineNo, trimmed, `expected the header "NPU ID  Chip ID  Chip Logic ID  [Chip Phy-ID]  Chip Name"`)
			}
			haveHeader = true
			continue
		}
		minFields := 4
		if hasPhyID {
			minFields = 5
		}
		if len(fields) < minFields {
			return nil, perr(lineNo, trimmed, "row has %d columns, expected %d", len(fields), minFields)
		}
		npu, err := strconv.Atoi(fields[0])
		if err != nil || npu < 0 {
			return nil, perr(lineNo, trimmed, "NPU ID %q is not a non-negative integer", fields[0])
		}
		chip, err := strconv.Atoi(fields[1])
		if err != nil || chip < 0 {
			return nil, perr(lineNo, trimmed, "NPU %d: chip id %q is not a non-negative integer", npu, fields[1])
		}
		key := [2]int{npu, chip}
		if first, dup := seenChip[key]; dup {
			return nil, perr(lineNo, trimmed, "NPU %d chip %d is listed twice (first on line %d)", npu, chip, first)
		}
		seenChip[key] = lineNo
		m := ChipMapping{NPU: npu, Chip: chip, LogicID: -1, PhysicalID: -1, Line: lineNo, Text: trimmed}
		m.Name = strings.Join(fields[minFields-1:], " ")
		if fields[2] == "-" {
			continue // a management chip (Mcu): no compute device, no device file
		}
		// A row whose NPU and chip ids parse but whose ids after them do
		// not costs that chip, not the node (see combine).
		if m.LogicID, err = strconv.Atoi(fields[2]); err != nil || m.LogicID < 0 {
			m.LogicID = -1
			m.RowError = perr(lineNo, trimmed, "NPU %d chip %d: logic id %q is neither a non-negative integer nor \"-\"", npu, chip, fields[2]).Error()
			rows = append(rows, m)
			continue
		}
		if first, dup := seenLogic[m.LogicID]; dup {
			return nil, perr(lineNo, trimmed, "logic id %d is given twice (first on line %d)", m.LogicID, first)
		}
		seenLogic[m.LogicID] = lineNo
		if hasPhyID {
			if m.PhysicalID, err = strconv.Atoi(fields[3]); err != nil || m.PhysicalID < 0 {
				m.PhysicalID = -1
				m.RowError = perr(lineNo, trimmed, "NPU %d chip %d: Phy-ID %q is not a non-negative integer", npu, chip, fields[3]).Error()
			}
		}
		rows = append(rows, m)
	}
	if !haveHeader {
		return nil, &discovery.ParseError{Source: source, Msg: "no chip mapping in the output"}
	}
	if len(rows) == 0 {
		return nil, &discovery.ParseError{Source: source, Msg: "the mapping lists no compute chip (only management chips or none)"}
	}
	return rows, nil
}

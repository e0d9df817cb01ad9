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

// Parser for `npu-smi info -t topo`, the connection matrix between the chips
// of a node: a header row "NPU0 NPU1 … CPU Affinity", one row per chip with
// one code per column (X, SYS, PHB, PIX, PXB, HCCS, SIO, HCCS_SW, NA) and
// the chip's CPU affinity, then a legend.
//
// The rows and columns are cards, not chips: npu-smi fills the list from
// dcmi_get_card_num_list, the card list (npu_info.c:1739-1753,
// topo_get_device_list; dcmi_basic_info_intf.c:1826), and prints
// "NPU%-8d" of each card id (npu_info_print_ext.c:175-183, 258-262), the
// NPU ID column of `npu-smi info`. Only the 910_93 lists its chips, by
// physical id, as "Phy-ID%-5d" (npu_info.c:1697-1736,
// topo_get_910_93_device_list). All of these are the driver source at
// GitHub verylucky01/driver commit e29d066,
// src/custom/dev_prod/user/npucli/src and .../user/dcmi/dcmi_interface/src.
// So two Atlas 300I Duo cards print NPU1 and NPU2, each the row of both its
// chips. The tool grows (NIC rows and columns, new
// codes), so what the parser does not know is skipped and listed in
// Topology.Skipped, never a failed discovery; only a broken chip matrix is
// an error. Codes and sources: docs/hardware.md#npu-smi-topology.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// Topology is the parsed `npu-smi info -t topo` matrix.
type Topology struct {
	// Supported is false when npu-smi answers that the device does not
	// support the query; then nothing is known about links.
	Supported bool
	// ByPhysicalID tells that the labels are Phy-ID<k> (physical ids of
	// the 910_93's chips); otherwise they are NPU<k> (card ids), or logic
	// ids when ByLogicID.
	ByPhysicalID bool
	// ByLogicID tells that the ids are logic ids: set where the matrix is
	// read through DCMI chip by chip, never by the npu-smi parser.
	ByLogicID bool
	// IDs are the card (or chip) ids of the columns, sorted.
	IDs []int
	// Codes[a][b] is the connection code between cards (or chips) a and b
	// (X on the diagonal).
	Codes map[int]map[int]string
	// CPUAffinity is the CPU list printed at the end of a chip's row.
	CPUAffinity map[int]string
	// Source names what read the matrix, for inventory.Chip.Sources.
	Source string
	// Skipped lists what the parser left out (a NIC column or row, an
	// unknown code), one entry each, for the backend to log.
	Skipped []string
	// UBFabric says that UB links join chips as HCCS does: on a 950 node,
	// whose chips talk over the unified bus ("connection over UB", the 950
	// DCMI reference's dcmiv2_get_topo_info_by_device_id; the Atlas 850's
	// mesh, the driver's topo/atlas_850_1.json), not on an A2 or A3 node,
	// where UB is no chip-to-chip HCCS link.
	UBFabric bool
}

var (
	topoLabel = regexp.MustCompile(`^(NPU|Phy-ID)(\d+)$`)
	cpuList   = regexp.MustCompile(`^\d[\d,-]*$`)
	topoCodes = map[string]bool{
		"X": true, "HCCS": true, "HCCS_SW": true, "SIO": true,
		"PIX": true, "PXB": true, "PHB": true, "SYS": true, "NA": true, "UB": true,
	}
)

// label is how the matrix names id.
func (t Topology) label(id int) string {
	switch {
	case t.ByPhysicalID:
		return fmt.Sprintf("Phy-ID%d", id)
	case t.ByLogicID:
		return fmt.Sprintf("logic id %d", id)
	}
	return fmt.Sprintf("NPU%d", id)
}

// HCCS tells whether chips a and b talk over HCCS without PCIe: directly
// (HCCS), through an HCCS switch (HCCS_SW), as the two dies of one card
// (SIO, whose dies share the card's HCCS ports), or, on a 950 node
// (UBFabric), over the unified bus, its chip-to-chip fabric in HCCS's
// place (the contract's linkType for Ascend's fabric stays hccs).
func (t Topology) HCCS(a, b int) bool {
	switch t.Codes[a][b] {
	case "HCCS", "HCCS_SW", "SIO":
		return true
	case "UB":
		return t.UBFabric
	}
	return false
}

// ParseTopo parses the output of `npu-smi info -t topo`. source is the
// command line, used in errors and in Skipped.
// long: a single-pass parser of npu-smi's matrix, its state local to it;
// vendor-internal parsing, reworked separately (issue 42).
func ParseTopo(source string, data []byte) (Topology, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	t := Topology{Supported: true, Codes: map[int]map[int]string{}, CPUAffinity: map[int]string{}}
	skip := func(line int, format string, args ...any) {
		t.Skipped = append(t.Skipped, fmt.Sprintf("%s line %d: ", source, line)+fmt.Sprintf(format, args...))
	}
	column := map[int]bool{}
	// columns are the header's matrix columns in order: a chip id, or -1
	// for a column naming no chip (NIC0…).
	var columns []int
	prefix := ""
	haveHeader := false

	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			continue
		}
		if !haveHeader && strings.Contains(strings.ToLower(trimmed), "does not support querying topo") {
			return Topology{}, nil
		}
		if strings.HasPrefix(trimmed, "Legend") {
			break
		}
		fields := strings.Fields(trimmed)
		if !haveHeader {
			for _, f := range fields {
				if f == "CPU" || strings.Contains(f, "Affinity") {
					break // "CPU Affinity" and any later column titles
				}
				m := topoLabel.FindStringSubmatch(f)
				if m == nil {
					if len(t.IDs) == 0 {
						break // no matrix header at all
					}
					skip(lineNo, "column %s names no NPU, skipped", f)
					columns = append(columns, -1)
					continue
				}
				if prefix == "" {
					prefix = m[1]
				} else if m[1] != prefix {
					return Topology{}, perr(lineNo, trimmed, "header mixes %s and %s labels", prefix, m[1])
				}
				n, err := strconv.Atoi(m[2])
				if err != nil {
					return Topology{}, perr(lineNo, trimmed, "label %q has no usable number", f)
				}
				if column[n] {
					return Topology{}, perr(lineNo, trimmed, "%s appears twice in the header", f)
				}
				column[n] = true
				t.IDs = append(t.IDs, n)
				columns = append(columns, n)
			}
			if len(t.IDs) == 0 {
				return Topology{}, perr(lineNo, trimmed, `expected a header row "NPU0 NPU1 … CPU Affinity"`)
			}
			t.ByPhysicalID = prefix == "Phy-ID"
			haveHeader = true
			continue
		}
		m := topoLabel.FindStringSubmatch(fields[0])
		if m == nil || m[1] != prefix {
			skip(lineNo, "row %s names no %s<N>, skipped", fields[0], prefix)
			continue
		}
		row, err := strconv.Atoi(m[2])
		if err != nil || !column[row] {
			skip(lineNo, "row %s has no column in the header, skipped", fields[0])
			continue
		}
		if t.Codes[row] != nil {
			return Topology{}, perr(lineNo, trimmed, "row %s appears twice", fields[0])
		}
		if len(fields)-1 < len(columns) {
			return Topology{}, perr(lineNo, trimmed, "row %s has %d entries, the header has %d columns", fields[0], len(fields)-1, len(columns))
		}
		codes := map[int]string{}
		for j, col := range columns {
			code := fields[1+j]
			if cpuList.MatchString(code) {
				// A CPU list where a code belongs: the row is cut short.
				return Topology{}, perr(lineNo, trimmed, "row %s has %d entries before its CPU list, the header has %d columns", fields[0], j, len(columns))
			}
			if col < 0 {
				continue // a NIC column
			}
			if (col == row) != (code == "X") {
				return Topology{}, perr(lineNo, trimmed, "%s%d→%s%d: %q on the wrong side of the diagonal", prefix, row, prefix, col, code)
			}
			if !topoCodes[code] {
				skip(lineNo, "%s%d→%s%d: unknown connection code %q, read as no link", prefix, row, prefix, col, code)
				code = "NA"
			}
			codes[col] = code
		}
		affinity := fields[1+len(columns):]
		// A code where the CPU list belongs means a row wider than the
		// header; NA is let through, as it may also stand for "no affinity".
		if len(affinity) > 0 && topoCodes[affinity[0]] && affinity[0] != "NA" {
			return Topology{}, perr(lineNo, trimmed, "row %s has %d entries, the header has %d columns", fields[0], len(fields)-1, len(columns))
		}
		t.Codes[row] = codes
		t.CPUAffinity[row] = strings.Join(affinity, " ")
	}
	if !haveHeader {
		return Topology{}, &discovery.ParseError{Source: source, Msg: "no connection matrix in the output"}
	}
	var missing []string
	for _, id := range t.IDs {
		if t.Codes[id] == nil {
			missing = append(missing, fmt.Sprintf("%s%d", prefix, id))
		}
	}
	if len(missing) > 0 {
		return Topology{}, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("no row for %s (truncated output?)", strings.Join(missing, ", "))}
	}
	sort.Ints(t.IDs)
	return t, nil
}

// The 910A's links are a fact of the model, not a reading: the Atlas 800
// training server (9000 on ARM, 9010 on x86) joins its eight 910A in two
// HCCS rings, NPUs 0-3 and 4-7, as Huawei's Volcano plugin hard-codes
// them (Ascend/mind-cluster component/ascend-for-volcano/internal/npu/
// ascend910/ascend910old/module910x8/type.go: npuNumPerHccs 4,
// nodeNPUNumber 8, left and right rings). Neither tool can read them from
// a container: DCMI's topology call answers -8255 on anything but 910B and
// 910_93 (CANN driver source, dcmi/dcmi_interface/src/dcmi_npu_link_intf.c:582-586),
// and npu-smi refuses `info -t topo` for them on x86
// (npucli/src/npu_info.c:1685-1691) and on ARM shows HCCS only across NUMA
// nodes in SMP mode.
//
// The rings are the Atlas 800's, a server of eight 910A (module910x8,
// type.go:38-39: npuNumPerHccs 4, nodeNPUNumber 8), not every node whose
// chips are 910A: an Atlas 300T training card is one PCIe 910A, a node of
// such cards has no HCCS between them, and is read as PCIe-only.
const (
	ringChipName = "910A"
	ringNodeSize = 8
	ringSize     = 4
	ringSource   = "Ascend 910A model: HCCS rings of NPUs 0-3 and 4-7 (Huawei's Volcano plugin, module910x8)"
)

// ringModel tells whether the node is an Atlas 800 910A server, eight
// 910A, whose link groups are the model's rings.
func ringModel(names []string) bool {
	for _, n := range names {
		if n != ringChipName {
			return false
		}
	}
	return len(names) == ringNodeSize
}

// ringGroups returns "hccs-K" for every chip in a ring with another chip
// of the node, by physical id.
func ringGroups(chips []found) map[int]string {
	indices := make([]int, 0, len(chips))
	for _, c := range chips {
		indices = append(indices, c.index)
	}
	return discovery.LinkGroups(indices, func(a, b int) bool { return a/ringSize == b/ringSize }, "hccs")
}

func chipNames(infos []ChipInfo) []string {
	out := make([]string, len(infos))
	for i, c := range infos {
		out[i] = c.Name
	}
	return out
}

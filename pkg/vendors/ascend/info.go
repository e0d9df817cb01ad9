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

// Parser for the main table of `npu-smi info`. After a title row
// ("| npu-smi 24.1.0   Version: 24.1.0 |") and two header rows the table
// has, per chip, a pair of rows between "+---" / "+===" separators:
//
//	| NPU   Name        | Health   | Power(W)   Temp(C)   Hugepages-Usage(page) |
//	| Chip [Phy-ID]     | Bus-Id   | AICore(%)  Memory-Usage(MB)  HBM-Usage(MB) |
//
// and then, after another header, the process table, which is not read.
// It accepts the layouts of Atlas training servers (a second header row
// "Chip | Bus-Id | …"), npu-smi 25.x ("Chip  Phy-ID", two-die NPUs) and
// Atlas inference cards ("Chip  Device", no HBM column; SoC boards print
// Bus-Id "NA"), each from a published recording that testdata/README.md
// cites. "Device" is the chip's logic id (npu-smi prints
// dcmi_get_device_logic_id there: npu_info_print.c:272-283, header line
// 368, driver source GitHub verylucky01/driver e29d066,
// src/custom/dev_prod/user/npucli/src); only the 910_93's "Chip Phy-ID"
// (line 602) is a physical id. Health is OK, Warning, Alarm, Critical or UNKNOWN (the same
// README cites Huawei's field table).

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
)

// ChipInfo is what the `npu-smi info` table says about one chip.
type ChipInfo struct {
	// NPU is the NPU ID (npu-smi's card id, the -i of other npu-smi
	// commands); Chip is the chip id on that NPU (the -c).
	NPU  int
	Chip int
	// PhysicalID is the "Phy-ID" column, -1 when the table has none.
	PhysicalID int
	// LogicID is the "Device" column, -1 when the table has none.
	LogicID int
	// Name is the chip name as printed, e.g. 910B3, 310P3.
	Name string
	// NPUName is the variant of a 910_93 die whose Name is the plain
	// "Ascend910": DCMI's npu_name, npu-smi's "NPU Name" ("9392"); empty
	// where it is not known (chipModel).
	NPUName string
	// Health is OK, Warning, Alarm, Critical or UNKNOWN.
	Health string
	// BusID is the normalized PCI address (0000:c1:00.0); empty where
	// npu-smi prints NA (SoC boards without PCIe).
	BusID string
	// MemoryMB is the HBM total where the table has an HBM column and it is
	// not zero, else the Memory-Usage total; HBM tells which.
	MemoryMB int64
	HBM      bool
	// AICores is the chip's AI core count where the source says it
	// (DCMI's aicore_cnt); 0 from npu-smi's table, which never does.
	AICores int
	// Line is the 1-based line of the chip's NPU row, for messages.
	Line int
	// RowError says why the chip's row did not parse, where its NPU and
	// chip id did: the chip is published unhealthy
	// (inventory.ReasonLibraryError) with only what its NPU row says, the
	// other chips as they are.
	RowError string
	// NoNPURow says npu-smi printed the chip's chip row without its NPU
	// row. It does so for a chip whose DCMI health is none of the five it
	// can name: DCMI answers 0xFFFFFFFF ("device does not exist") with
	// rc 0, npu_common_get_health_state_str refuses it and the printer
	// returns before the NPU row (npucli/src/npu_common.c:1544-1552,
	// npu_info_print.c:230-238 and 405-415). Such a row says its chip id,
	// the second id of the layout, the bus id and memory, not its name or
	// health; NPU is the card of the row before it where it is a card's
	// later chip (after a "+---" separator), else -1. Discovery takes the
	// rest from `npu-smi info -m`, which lists the chip
	// (npu_info_print.c:773-785), and publishes it unhealthy.
	NoNPURow bool
}

// Health values npu-smi prints, spelled as npu-smi spells them.
const (
	HealthOK       = "OK"
	HealthWarning  = "Warning"
	HealthAlarm    = "Alarm"
	HealthCritical = "Critical"
	HealthUnknown  = "UNKNOWN"
)

var healthValues = map[string]string{
	"ok": HealthOK, "warning": HealthWarning, "alarm": HealthAlarm,
	"critical": HealthCritical, "unknown": HealthUnknown,
}

// maxMemoryMB is the largest memory total that still fits in bytes in an
// int64, as the chip's capacity is published.
const maxMemoryMB = math.MaxInt64 >> 20

// usagePair matches "3318 / 65536", "26838/ 32768" and garbled pairs
// alike; the numbers are checked after matching.
var usagePair = regexp.MustCompile(`(\S+?)\s*/\s*(\S+)`)

type infoState int

const (
	wantHeader infoState = iota
	wantChipHeader
	wantNPURow
	wantChipRow
	wantSeparator
)

// infoLayout is what the header rows say about the columns.
type infoLayout struct {
	// idColumn is "Phy-ID" or "Device" when the chip rows carry a second id.
	idColumn string
	hasHBM   bool
}

// ParseInfo parses the output of `npu-smi info`. source is the command line,
// used in errors. Every chip must have its NPU row and its chip row; the
// process table after the chip table is not read.
func ParseInfo(source string, data []byte) ([]ChipInfo, error) {
	return parseInfo(source, data, nil)
}

// parseInfo is ParseInfo; row, when set, is also given each chip with the
// cells of its two rows.
// long: a single-pass parser of npu-smi's table, its state local to it;
// vendor-internal parsing, reworked separately (issue 42).
func parseInfo(source string, data []byte, row func(c ChipInfo, l infoLayout, npuCells, chipCells []string)) ([]ChipInfo, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		chips   []ChipInfo
		layout  infoLayout
		state   = wantHeader
		pending ChipInfo
		npuRow  []string
		seen    = map[[2]int]bool{}
		// inCard says the last separator was "+---", which npu-smi prints
		// between the chips of one card ("+===" ends a card).
		inCard bool
	)

lines:
	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			continue
		}
		if state == wantHeader {
			if cells, ok := tableCells(trimmed); ok && isInfoHeader(cells) {
				state = wantChipHeader
			}
			continue // title row, banner lines, driver log noise
		}
		if strings.HasPrefix(trimmed, "+") {
			switch state {
			case wantChipHeader:
				return nil, perr(lineNo, trimmed, `expected the second header row "Chip | Bus-Id | AICore(%%) …"`)
			case wantChipRow:
				return nil, perr(pending.Line, fmt.Sprintf("NPU %d", pending.NPU), "NPU %d has no chip row under it", pending.NPU)
			}
			inCard = strings.HasPrefix(trimmed, "+-") && state == wantSeparator
			state = wantNPURow
			continue
		}
		cells, ok := tableCells(trimmed)
		if !ok {
			return nil, perr(lineNo, trimmed, `expected a table row "| … |" or a separator "+---"`)
		}
		if len(cells) >= 2 && cells[1] == "Process id" {
			if state == wantChipRow {
				return nil, perr(pending.Line, fmt.Sprintf("NPU %d", pending.NPU), "NPU %d has no chip row under it", pending.NPU)
			}
			break lines // the process table
		}
		switch state {
		case wantChipHeader:
			l, err := parseChipHeader(cells)
			if err != nil {
				return nil, perr(lineNo, trimmed, "%v", err)
			}
			layout, state = l, wantSeparator
		case wantNPURow:
			if isChipRow(cells, layout) {
				c := ChipInfo{NPU: -1, PhysicalID: -1, LogicID: -1}
				if inCard {
					c.NPU = pending.NPU
				}
				if parsed, err := parseChipRow(cells, layout, c); err == nil {
					c = parsed
				} else {
					c.Chip, _ = rowChipID(cells)
				}
				c.Health, c.NoNPURow, c.Line = HealthUnknown, true, lineNo
				if c.NPU >= 0 {
					key := [2]int{c.NPU, c.Chip}
					if seen[key] {
						return nil, perr(lineNo, trimmed, "NPU %d chip %d is listed twice", c.NPU, c.Chip)
					}
					seen[key] = true
				}
				chips = append(chips, c)
				// A later chip of this card inherits its NPU, unknown or not.
				pending, state = c, wantSeparator
				continue
			}
			c, err := parseNPURow(cells)
			if err != nil {
				// An NPU row that still says which card and chip name
				// (its health or power column is what does not parse)
				// costs its chips, not the node.
				var ok bool
				if c, ok = npuRowID(cells); !ok {
					return nil, perr(lineNo, trimmed, "%v", err)
				}
				c.RowError = perr(lineNo, trimmed, "%v", err).Error()
			}
			c.Line = lineNo
			pending, npuRow, state = c, cells, wantChipRow
		case wantChipRow:
			c, err := parseChipRow(cells, layout, pending)
			if err == nil && pending.RowError != "" {
				c.RowError = pending.RowError
			}
			if err != nil {
				// One chip's bad row costs that chip, not the node, where
				// the row still says which chip it is.
				chip, ok := rowChipID(cells)
				if !ok {
					return nil, perr(lineNo, trimmed, "%v", err)
				}
				c = pending
				c.Chip, c.RowError = chip, perr(lineNo, trimmed, "%v", err).Error()
			}
			key := [2]int{c.NPU, c.Chip}
			if seen[key] {
				return nil, perr(lineNo, trimmed, "NPU %d chip %d is listed twice", c.NPU, c.Chip)
			}
			seen[key] = true
			chips = append(chips, c)
			if row != nil && c.RowError == "" {
				row(c, layout, npuRow, cells)
			}
			state = wantSeparator
		case wantSeparator:
			return nil, perr(lineNo, trimmed, "expected a separator line before the next NPU row")
		}
	}

	switch {
	case state == wantHeader:
		return nil, &discovery.ParseError{Source: source, Msg: `no NPU table in the output (no "| NPU Name | Health | …" header row)`}
	case state == wantChipRow:
		return nil, perr(pending.Line, fmt.Sprintf("NPU %d", pending.NPU), "NPU %d has no chip row under it (truncated output?)", pending.NPU)
	case len(chips) == 0:
		return nil, &discovery.ParseError{Source: source, Msg: "the NPU table lists no chip"}
	}
	return chips, nil
}

// isChipRow says a row where an NPU row should be is a chip row: its first
// cell is the chip id (and the layout's second id), numbers only, where an
// NPU row has "<NPU ID> <Name>", and its second cell is no health word.
func isChipRow(cells []string, l infoLayout) bool {
	if len(cells) != 3 {
		return false
	}
	if _, health := healthValues[strings.ToLower(cells[1])]; health {
		return false
	}
	ids := strings.Fields(cells[0])
	want := 1
	if l.idColumn != "" {
		want = 2
	}
	if len(ids) != want {
		return false
	}
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err != nil || n < 0 {
			return false
		}
	}
	return true
}

// npuRowID is what an NPU row that does not parse still says: its NPU id
// and chip name, from its first cell "<NPU ID> <Name>".
func npuRowID(cells []string) (ChipInfo, bool) {
	if len(cells) == 0 {
		return ChipInfo{}, false
	}
	f := strings.Fields(cells[0])
	if len(f) != 2 {
		return ChipInfo{}, false
	}
	npu, err := strconv.Atoi(f[0])
	if err != nil || npu < 0 {
		return ChipInfo{}, false
	}
	// Its health is what did not parse, or was never read: unknown.
	return ChipInfo{NPU: npu, Name: f[1], Health: HealthUnknown, PhysicalID: -1, LogicID: -1}, true
}

// rowChipID is the chip id a chip row starts with.
func rowChipID(cells []string) (int, bool) {
	if len(cells) == 0 {
		return 0, false
	}
	ids := strings.Fields(cells[0])
	if len(ids) == 0 {
		return 0, false
	}
	chip, err := strconv.Atoi(ids[0])
	return chip, err == nil && chip >= 0
}

// tableCells splits "| a | b | c |" into trimmed cells. A row whose closing
// bar is missing still splits, so its cell count shows what is wrong.
func tableCells(line string) ([]string, bool) {
	if !strings.HasPrefix(line, "|") {
		return nil, false
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(inner, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

func isInfoHeader(cells []string) bool {
	if len(cells) != 3 {
		return false
	}
	f := strings.Fields(cells[0])
	return len(f) == 2 && f[0] == "NPU" && f[1] == "Name" && cells[1] == "Health"
}

func parseChipHeader(cells []string) (infoLayout, error) {
	var l infoLayout
	if len(cells) != 3 {
		return l, fmt.Errorf("second header row has %d columns, expected 3", len(cells))
	}
	first := strings.Fields(cells[0])
	switch {
	case len(first) == 1 && first[0] == "Chip":
	case len(first) == 2 && first[0] == "Chip" && (first[1] == "Phy-ID" || first[1] == "Device"):
		l.idColumn = first[1]
	default:
		return l, fmt.Errorf(`second header row starts with %q, expected "Chip", "Chip Phy-ID" or "Chip Device"`, cells[0])
	}
	if cells[1] != "Bus-Id" {
		return l, fmt.Errorf(`second header column is %q, expected "Bus-Id"`, cells[1])
	}
	usage := strings.Fields(cells[2])
	switch {
	case len(usage) == 2 && usage[0] == "AICore(%)" && usage[1] == "Memory-Usage(MB)":
	case len(usage) == 3 && usage[0] == "AICore(%)" && usage[1] == "Memory-Usage(MB)" && usage[2] == "HBM-Usage(MB)":
		l.hasHBM = true
	default:
		return l, fmt.Errorf(`usage columns are %q, expected "AICore(%%) Memory-Usage(MB)" and optionally "HBM-Usage(MB)"`, cells[2])
	}
	return l, nil
}

func parseNPURow(cells []string) (ChipInfo, error) {
	if len(cells) != 3 {
		return ChipInfo{}, fmt.Errorf("NPU row has %d columns, expected 3 (NPU Name | Health | Power Temp Hugepages)", len(cells))
	}
	f := strings.Fields(cells[0])
	if len(f) != 2 {
		return ChipInfo{}, fmt.Errorf(`NPU row starts with %q, expected "<NPU ID> <Name>"`, cells[0])
	}
	npu, err := strconv.Atoi(f[0])
	if err != nil || npu < 0 {
		return ChipInfo{}, fmt.Errorf("NPU ID %q is not a non-negative integer", f[0])
	}
	health, ok := healthValues[strings.ToLower(cells[1])]
	if !ok {
		return ChipInfo{}, fmt.Errorf("NPU %d: health %q is none of OK, Warning, Alarm, Critical, UNKNOWN", npu, cells[1])
	}
	if cells[2] == "" {
		return ChipInfo{}, fmt.Errorf("NPU %d: the Power/Temp/Hugepages column is empty", npu)
	}
	return ChipInfo{NPU: npu, Name: f[1], Health: health, PhysicalID: -1, LogicID: -1}, nil
}

func parseChipRow(cells []string, l infoLayout, c ChipInfo) (ChipInfo, error) {
	if len(cells) != 3 {
		return ChipInfo{}, fmt.Errorf("NPU %d: chip row has %d columns, expected 3 (Chip | Bus-Id | AICore Memory)", c.NPU, len(cells))
	}
	ids := strings.Fields(cells[0])
	want := 1
	if l.idColumn != "" {
		want = 2
	}
	if len(ids) != want {
		if want == 2 {
			return ChipInfo{}, fmt.Errorf("NPU %d: chip row starts with %q, expected \"<Chip> <%s>\"", c.NPU, cells[0], l.idColumn)
		}
		return ChipInfo{}, fmt.Errorf(`NPU %d: chip row starts with %q, expected "<Chip>"`, c.NPU, cells[0])
	}
	chip, err := strconv.Atoi(ids[0])
	if err != nil || chip < 0 {
		return ChipInfo{}, fmt.Errorf("NPU %d: chip id %q is not a non-negative integer", c.NPU, ids[0])
	}
	c.Chip = chip
	if want == 2 {
		phy, err := strconv.Atoi(ids[1])
		if err != nil || phy < 0 {
			return ChipInfo{}, fmt.Errorf("NPU %d chip %d: %s %q is not a non-negative integer", c.NPU, chip, l.idColumn, ids[1])
		}
		if l.idColumn == "Device" {
			c.LogicID = phy
		} else {
			c.PhysicalID = phy
		}
	}
	if !strings.EqualFold(cells[1], "NA") {
		bus, err := pci.NormalizeBusID(cells[1])
		if err != nil {
			return ChipInfo{}, fmt.Errorf("NPU %d chip %d: %w", c.NPU, chip, err)
		}
		c.BusID = bus
	}
	mem, hbm, err := parseUsage(cells[2], l.hasHBM)
	if err != nil {
		return ChipInfo{}, fmt.Errorf("NPU %d chip %d: %w", c.NPU, chip, err)
	}
	c.MemoryMB, c.HBM = mem, false
	if l.hasHBM && hbm > 0 {
		c.MemoryMB, c.HBM = hbm, true
	}
	return c, nil
}

// parseUsage reads "AICore  used / total  [used / total]" and returns the
// Memory-Usage and HBM-Usage totals in MB.
func parseUsage(cell string, hasHBM bool) (memTotal, hbmTotal int64, err error) {
	f := strings.Fields(cell)
	if len(f) == 0 {
		return 0, 0, fmt.Errorf("the AICore/memory column is empty")
	}
	rest := strings.TrimSpace(cell[strings.Index(cell, f[0])+len(f[0]):])
	names := []string{"Memory-Usage(MB)"}
	if hasHBM {
		names = append(names, "HBM-Usage(MB)")
	}
	matches := usagePair.FindAllStringSubmatchIndex(rest, -1)
	gapsClean := true
	end := 0
	for _, m := range matches {
		if strings.TrimSpace(rest[end:m[0]]) != "" {
			gapsClean = false
		}
		end = m[1]
	}
	if strings.TrimSpace(rest[end:]) != "" {
		gapsClean = false
	}
	if len(matches) != len(names) || !gapsClean {
		return 0, 0, fmt.Errorf("usage %q is not AICore(%%) followed by %s as \"<used> / <total>\"", cell, strings.Join(names, " and "))
	}
	totals := make([]int64, len(names))
	for i, m := range matches {
		pair := rest[m[0]:m[1]]
		for _, part := range []string{rest[m[2]:m[3]], rest[m[4]:m[5]]} {
			n, perr := strconv.ParseInt(part, 10, 64)
			if perr != nil || n < 0 {
				return 0, 0, fmt.Errorf("%s %q: %q is not a non-negative number of MB", names[i], pair, part)
			}
			if n > maxMemoryMB {
				return 0, 0, fmt.Errorf("%s %q: %d MB is more than any chip has", names[i], pair, n)
			}
			totals[i] = n // the second (total) wins
		}
	}
	memTotal = totals[0]
	if hasHBM {
		hbmTotal = totals[1]
	}
	return memTotal, hbmTotal, nil
}

// ParseAICoreCount reads "Aicore Count : N" from `npu-smi info -t common
// -i <NPU> -c <Chip>` (the MindCluster FaultDiag guide's example prints
// "Aicore Count : 30" for a 910). Only chips whose name does not tell their
// core count (the A3 die, ambiguousCores) are asked.
func ParseAICoreCount(source string, data []byte) (int, error) {
	for l := range keyValueLines(data, ":") {
		if !l.HasSep || !strings.EqualFold(l.Key, "Aicore Count") {
			continue
		}
		n, err := strconv.Atoi(l.Value)
		if err != nil || n <= 0 {
			return 0, &discovery.ParseError{Source: source, Line: l.No, Text: l.Text, Msg: "the AI core count is not a positive number"}
		}
		return n, nil
	}
	return 0, &discovery.ParseError{Source: source, Msg: `no "Aicore Count" line in the output`}
}

// ParseNPUName reads "NPU Name : <name>" from `npu-smi info -t board -i
// <NPU> -c <Chip>`, which npu-smi prints for 910_93 and 950 chips only
// (npucli/src/npu_info_print.c:1004-1008, "\t%-30s : %s\n"): the die's
// variant, "9392" of an Ascend910_9392.
func ParseNPUName(source string, data []byte) (string, error) {
	for l := range keyValueLines(data, ":") {
		if !l.HasSep || !strings.EqualFold(l.Key, "NPU Name") {
			continue
		}
		if !npuNamePattern.MatchString(l.Value) {
			return "", &discovery.ParseError{Source: source, Line: l.No, Text: l.Text, Msg: "the NPU name is not a word of letters and digits"}
		}
		return l.Value, nil
	}
	return "", &discovery.ParseError{Source: source, Msg: `no "NPU Name" line in the output`}
}

// npuNamePattern is an NPU name: "9392", "PR", at most 31 characters (the
// driver's MAX_CHIP_NAME_LEN is 32 with its NUL).
var npuNamePattern = regexp.MustCompile(`^[A-Za-z0-9]{1,31}$`)

// Healthy tells whether the chip's health is OK.
func (c ChipInfo) Healthy() bool { return c.Health == HealthOK }

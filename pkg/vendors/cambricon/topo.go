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

// Parser for `cnmon topo -m`, the connection matrix between the MLU cards of
// a node: a header row "MLU0 MLU1 … CPU Affinity", one row per card with one
// code per column (X, SGL, MUL, H_B, CPU, SYS, MLK#, MLK[S], ITN) and the
// card's CPU affinity, then a legend. The tool grows (NIC rows and columns,
// new codes), so a column or row not labelled MLU<N> and an unknown code are
// skipped and named in Topology.Skipped (the backend logs them), never a
// failed discovery; only output that contradicts itself (a row twice, X off
// the diagonal, a truncated matrix) is an error. Codes and sources:
// docs/hardware.md#cnmon-topology.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// Topology is the parsed `cnmon topo -m` matrix.
type Topology struct {
	// Cards are the card numbers in column order.
	Cards []int
	// Codes[a][b] is the connection code between cards a and b (X on the
	// diagonal).
	Codes map[int]map[int]string
	// CPUAffinity is the CPU list printed at the end of a card's row.
	CPUAffinity map[int]string
	// Skipped names what the parser did not use: columns and rows that
	// are not MLU<N> (NICs) and codes it does not know, one entry each.
	Skipped []string
}

var (
	mluLabel = regexp.MustCompile(`^MLU(\d+)$`)
	topoCode = regexp.MustCompile(`^(X|SGL|MUL|H_B|CPU|SYS|ITN|MLK\[S\]|MLK\d+)$`)
)

// maxLinks bounds the bonded MLU-Link count of one pair (an MLU590 has 7
// ports in all), so MLULinkPorts cannot overflow on garbled output.
const maxLinks = 64

// linkCountOK tells whether an MLK<n> code's count is at most maxLinks;
// other codes pass.
func linkCountOK(code string) bool {
	digits, ok := strings.CutPrefix(code, "MLK")
	if !ok || digits == "[S]" {
		return true
	}
	n, err := strconv.Atoi(digits)
	return err == nil && n <= maxLinks
}

// MLULink tells whether cards a and b share an MLU-Link (MLK# or MLK[S])
// and over how many bonded links (0 when cnmon does not say, MLK[S]).
func (t Topology) MLULink(a, b int) (linked bool, links int) {
	code := t.Codes[a][b]
	switch {
	case code == "MLK[S]":
		return true, 0
	case strings.HasPrefix(code, "MLK"):
		n, _ := strconv.Atoi(strings.TrimPrefix(code, "MLK")) // validated by ParseTopo
		return n > 0, n
	}
	return false, 0
}

// MLULinkPorts is the number of MLU-Link ports of card a that connect to
// other cards of the node: the sum of the bonded links in its row.
func (t Topology) MLULinkPorts(a int) int {
	total := 0
	for _, b := range t.Cards {
		if b == a {
			continue
		}
		_, n := t.MLULink(a, b)
		total += n
	}
	return total
}

// ParseTopo parses the output of `cnmon topo -m`. source is the command
// line, used in errors.
// long: a single-pass parser of cnmon's matrix, its state local to it;
// vendor-internal parsing, reworked separately (issue 42).
func ParseTopo(source string, data []byte) (Topology, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	t := Topology{Codes: map[int]map[int]string{}, CPUAffinity: map[int]string{}}
	// columns holds one entry per header label: the card number, or -1
	// for a column that is not an MLU (a NIC).
	var columns []int
	column := map[int]bool{}
	haveHeader := false

	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "=") {
			continue
		}
		if strings.HasPrefix(trimmed, "Legend") {
			break
		}
		fields := strings.Fields(trimmed)
		if !haveHeader {
			for k, f := range fields {
				if f == "CPU" && k+1 < len(fields) && fields[k+1] == "Affinity" {
					break // the CPU Affinity (and any later) column titles
				}
				m := mluLabel.FindStringSubmatch(f)
				if m == nil {
					columns = append(columns, -1)
					t.Skipped = append(t.Skipped, "column "+f)
					continue
				}
				n, err := strconv.Atoi(m[1])
				if err != nil {
					return Topology{}, perr(lineNo, trimmed, "label %q has no usable number", f)
				}
				if column[n] {
					return Topology{}, perr(lineNo, trimmed, "MLU%d appears twice in the header", n)
				}
				column[n] = true
				columns = append(columns, n)
				t.Cards = append(t.Cards, n)
			}
			if len(t.Cards) == 0 {
				return Topology{}, perr(lineNo, trimmed, `expected a header row "MLU0 MLU1 …"`)
			}
			haveHeader = true
			continue
		}
		m := mluLabel.FindStringSubmatch(fields[0])
		if m == nil {
			t.Skipped = append(t.Skipped, "row "+fields[0])
			continue
		}
		row, err := strconv.Atoi(m[1])
		if err != nil || !column[row] {
			return Topology{}, perr(lineNo, trimmed, "row %s has no column in the header", fields[0])
		}
		if t.Codes[row] != nil {
			return Topology{}, perr(lineNo, trimmed, "row MLU%d appears twice", row)
		}
		if len(fields)-1 < len(columns) {
			return Topology{}, perr(lineNo, trimmed, "row MLU%d has %d entries, the header has %d columns", row, len(fields)-1, len(columns))
		}
		codes := map[int]string{}
		for j, col := range columns {
			if col < 0 {
				continue // a NIC column
			}
			code := fields[1+j]
			if (col == row) != (code == "X") {
				return Topology{}, perr(lineNo, trimmed, "MLU%d→MLU%d: %q on the wrong side of the diagonal", row, col, code)
			}
			if !topoCode.MatchString(code) || !linkCountOK(code) {
				// An unknown code says nothing we can use: no MLU-Link.
				t.Skipped = append(t.Skipped, fmt.Sprintf("code %q of MLU%d→MLU%d", code, row, col))
				code = unknownCode
			}
			codes[col] = code
		}
		t.Codes[row] = codes
		t.CPUAffinity[row] = strings.Join(fields[1+len(columns):], " ")
	}
	if !haveHeader {
		return Topology{}, &discovery.ParseError{Source: source, Msg: "no connection matrix in the output"}
	}
	var missing []string
	for _, c := range t.Cards {
		if t.Codes[c] == nil {
			missing = append(missing, fmt.Sprintf("MLU%d", c))
		}
	}
	if len(missing) > 0 {
		return Topology{}, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("no row for %s (truncated output?)", strings.Join(missing, ", "))}
	}
	sort.Ints(t.Cards)
	return t, nil
}

// unknownCode stands in Topology.Codes for a code the parser skipped.
const unknownCode = "?"

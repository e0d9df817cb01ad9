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

// Parser for `npu-smi info -t health -i <NPU> -c <Chip>`, the health of one
// chip with the error codes behind it: indented "Key : Value" lines,
//
//	Health Status                  : Alarm
//	Error Code                     : A4025021 8C03A000 8C084E00
//	Error Information              : ascend_monitor adda heart beat lost error
//
//	                               : node type=process-manager, sensor type=General Software, event state=…
//
// Error Code lists the codes separated by blanks, "NA" when there is none;
// Error Information has one entry per code, each after it on a line with
// an empty key. Sources and recordings: testdata/README.md.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// ChipHealth is what `npu-smi info -t health` says about one chip.
type ChipHealth struct {
	// Health is OK, Warning, Alarm, Critical or UNKNOWN, spelled as the
	// Health column of `npu-smi info` spells it: dcmi_get_device_health's
	// 0-4 (npucli/src/npu_common.c line 1548 in the CANN driver source,
	// verylucky01/driver@e29d066). The reason a level becomes
	// (inventory.ReasonToolHealth) decides its taint: Warning is graded a
	// warning (inventory.Warning, a taint with effect None: Huawei's
	// device plugin keeps serving sub-health NPUs, mind-cluster
	// component/ascend-device-plugin/pkg/device/ascendcommon.go isHealthy),
	// Alarm, Critical and UNKNOWN block.
	Health string
	// Codes are the error codes as 0x and upper-case hex digits
	// (0x80E18005); none when npu-smi prints NA.
	Codes []string
	// Info are the Error Information entries in the order printed, which
	// is the order of the codes; none when npu-smi prints NA.
	Info []string
}

// Keys of the health output.
const (
	keyHealthStatus = "Health Status"
	keyErrorCode    = "Error Code"
	keyErrorInfo    = "Error Information"
)

// ParseHealth parses the output of `npu-smi info -t health -i <NPU> -c
// <Chip>`. source is the command line, used in errors. The Health Status
// and Error Code lines must be there; other keys are not read.
func ParseHealth(source string, data []byte) (ChipHealth, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		h    ChipHealth
		seen = map[string]int{} // key → line
		last string             // the key an empty-key line continues
	)
	for l := range keyValueLines(data, ":") {
		if !l.HasSep {
			return ChipHealth{}, perr(l.No, l.Text, `expected "Key : Value"`)
		}
		key, value := l.Key, l.Value
		if key == "" {
			if last != keyErrorInfo {
				return ChipHealth{}, perr(l.No, l.Text, "a continuation line (no key) outside Error Information")
			}
			if value != "" && !isNA(value) {
				h.Info = append(h.Info, value)
			}
			continue
		}
		last = key
		switch key {
		case keyHealthStatus, keyErrorCode, keyErrorInfo:
		default:
			continue // NPU ID, Chip ID and the like
		}
		if first, dup := seen[key]; dup {
			return ChipHealth{}, perr(l.No, l.Text, "%s is given twice (first on line %d)", key, first)
		}
		seen[key] = l.No
		switch key {
		case keyHealthStatus:
			health, known := healthValues[strings.ToLower(value)]
			if !known {
				return ChipHealth{}, perr(l.No, l.Text, "health %q is none of OK, Warning, Alarm, Critical, UNKNOWN", value)
			}
			h.Health = health
		case keyErrorCode:
			codes, err := parseErrorCodes(value)
			if err != nil {
				return ChipHealth{}, perr(l.No, l.Text, "%v", err)
			}
			h.Codes = codes
		case keyErrorInfo:
			if value != "" && !isNA(value) {
				h.Info = append(h.Info, value)
			}
		}
	}
	for _, key := range []string{keyHealthStatus, keyErrorCode} {
		if seen[key] == 0 {
			return ChipHealth{}, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("no %q line in the output (truncated output?)", key)}
		}
	}
	return h, nil
}

// parseErrorCodes reads the Error Code value: NA, or hex codes of up to
// 32 bits separated by blanks, with or without 0x.
func parseErrorCodes(value string) ([]string, error) {
	if isNA(value) {
		return nil, nil
	}
	fields := strings.Fields(value)
	if len(fields) == 0 {
		return nil, fmt.Errorf("the error code is empty, expected NA or hex codes")
	}
	codes := make([]string, 0, len(fields))
	for _, f := range fields {
		digits := f
		if len(digits) > 2 && (digits[:2] == "0x" || digits[:2] == "0X") {
			digits = digits[2:]
		}
		// Base 16 takes neither a sign nor a prefix nor underscores.
		if _, err := strconv.ParseUint(digits, 16, 32); err != nil {
			return nil, fmt.Errorf("error code %q is not a 32-bit hex code", f)
		}
		codes = append(codes, "0x"+strings.ToUpper(digits))
	}
	return codes, nil
}

func isNA(s string) bool { return strings.EqualFold(s, "NA") }

// Describe renders the error codes for a health message: ", error code
// 0x80E18005: …", ", error codes 0x…, 0x…: …; …", or ", no error code".
// The codes come before the descriptions, so a message cut short (the
// kubelet keeps 1024 characters) still names every code.
func (h ChipHealth) Describe() string {
	var b strings.Builder
	switch len(h.Codes) {
	case 0:
		b.WriteString(", no error code")
	case 1:
		b.WriteString(", error code " + h.Codes[0])
	default:
		b.WriteString(", error codes " + strings.Join(h.Codes, ", "))
	}
	if len(h.Info) > 0 {
		b.WriteString(": " + strings.Join(h.Info, "; "))
	}
	return b.String()
}

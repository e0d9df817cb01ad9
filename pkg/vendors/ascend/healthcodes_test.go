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
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// The Error Information entries of the alarming chip's recording.
const (
	infoHeartbeatLost  = "ascend_monitor adda heart beat lost error"
	infoProcessFailed  = "node type=process-manager, sensor type=General Software, event state=The process start failed or exit abnormally"
	infoHeartbeatAdda  = "node type=adda, sensor type=Heartbeat Sensor, event state=Heartbeat Lost."
	alarmCodesDescribe = ", error codes 0xA4025021, 0x8C03A000, 0x8C084E00: " + infoHeartbeatLost + "; " + infoProcessFailed + "; " + infoHeartbeatAdda
)

// readHealthFixture returns a health output kept under testdata/health.
func readHealthFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/health/" + name + ".txt")
	require.NoError(t, err)
	return string(b)
}

func TestParseHealthReadsTheHealthAndErrorCodesOfAChip(t *testing.T) {
	alarm := readRecording(t, "atlas-800t-a2", healthArgs(1, 0)...)
	for _, tc := range []struct {
		name string
		text string
		want ChipHealth
	}{
		{name: "a healthy chip prints NA twice", text: readHealthFixture(t, "ok"), want: ChipHealth{Health: HealthOK}},
		{
			name: "a warning with one code and its description",
			text: readHealthFixture(t, "warning-one-code"),
			want: ChipHealth{Health: HealthWarning, Codes: []string{"0x8C084E00"}, Info: []string{infoHeartbeatAdda}},
		},
		{
			name: "an alarm with three codes, the later descriptions on lines without a key",
			text: alarm,
			want: ChipHealth{Health: HealthAlarm, Codes: []string{"0xA4025021", "0x8C03A000", "0x8C084E00"},
				Info: []string{infoHeartbeatLost, infoProcessFailed, infoHeartbeatAdda}},
		},
		{
			name: "codes with 0x or in lower case, other keys and CRLF line ends",
			text: strings.ReplaceAll("\tNPU ID : 3\n\tChip ID : 0\n\tHealth Status : critical\n\tError Code : 0x80e18005 80E1800A\n\tError Information : NA\n", "\n", "\r\n"),
			want: ChipHealth{Health: HealthCritical, Codes: []string{"0x80E18005", "0x80E1800A"}},
		},
		{
			name: "a description holding a colon keeps it",
			text: "Health Status : Alarm\nError Code : 80E18005\nError Information : event state=HBMC: Ca Parity\n",
			want: ChipHealth{Health: HealthAlarm, Codes: []string{"0x80E18005"}, Info: []string{"event state=HBMC: Ca Parity"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHealth(cmdHealth(1, 0), []byte(tc.text))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseHealthRejectsWhatIsNotAHealthOutput(t *testing.T) {
	alarm := readRecording(t, "atlas-800t-a2", healthArgs(1, 0)...)
	firstLine, _, _ := strings.Cut(alarm, "\n")
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "npu-smi's usage text for a card id it does not know", text: readHealthFixture(t, "invalid-card-id"),
			line: 1, msg: `expected "Key : Value": "Invalid card id."`},
		{name: "empty output", text: "", msg: `no "Health Status" line in the output (truncated output?)`},
		{name: "output cut after the health line", text: firstLine + "\n", msg: `no "Error Code" line in the output (truncated output?)`},
		{name: "an unknown health value", text: discoverytest.ReplaceOnce(t, alarm, ": Alarm", ": Broken"),
			line: 1, msg: `health "Broken" is none of OK, Warning, Alarm, Critical, UNKNOWN`},
		{name: "a code that is not hex", text: discoverytest.ReplaceOnce(t, alarm, "8C03A000", "8C03A00G"),
			line: 2, msg: `error code "8C03A00G" is not a 32-bit hex code`},
		{name: "a code wider than 32 bits", text: discoverytest.ReplaceOnce(t, alarm, "8C03A000", "18C03A000"),
			line: 2, msg: `error code "18C03A000" is not a 32-bit hex code`},
		{name: "an empty error code", text: discoverytest.ReplaceOnce(t, alarm, ": A4025021 8C03A000 8C084E00", ":"),
			line: 2, msg: "the error code is empty, expected NA or hex codes"},
		{name: "the health given twice", text: alarm + "\tHealth Status                  : OK\n",
			line: 9, msg: "Health Status is given twice (first on line 1)"},
		{name: "a line without key before any description", text: "\t  : stray\n" + alarm,
			line: 1, msg: "a continuation line (no key) outside Error Information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHealth(cmdHealth(1, 0), []byte(tc.text))
			discoverytest.RequireParseError(t, err, cmdHealth(1, 0), tc.line, tc.msg)
		})
	}
}

func TestDescribeNamesEveryCodeBeforeTheDescriptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    ChipHealth
		want string
	}{
		{name: "no code", h: ChipHealth{Health: HealthWarning}, want: ", no error code"},
		{name: "a code without description", h: ChipHealth{Codes: []string{"0x80E18005"}}, want: ", error code 0x80E18005"},
		{name: "a code and its description", h: ChipHealth{Codes: []string{"0x8C084E00"}, Info: []string{infoHeartbeatAdda}},
			want: ", error code 0x8C084E00: " + infoHeartbeatAdda},
		{name: "three codes and theirs", h: ChipHealth{Codes: []string{"0xA4025021", "0x8C03A000", "0x8C084E00"},
			Info: []string{infoHeartbeatLost, infoProcessFailed, infoHeartbeatAdda}}, want: alarmCodesDescribe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.h.Describe())
		})
	}
}

// Ascend's Warning is the one health level graded a warning (a taint with
// effect None); Alarm, Critical and UNKNOWN block, OK is no fault.
func TestOnlyAscendsWarningLevelIsGradedAWarning(t *testing.T) {
	for health, warning := range map[string]bool{HealthWarning: true, HealthAlarm: false, HealthCritical: false, HealthUnknown: false} {
		require.Equal(t, warning, inventory.Warning(inventory.ReasonToolHealth(health)), health)
	}
}

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
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func TestParseInfoReadsEveryCardOfACNMONv4Listing(t *testing.T) {
	cards, err := ParseInfo("cnmon info", []byte(readRecording(t, "mlu270", "info")))
	require.NoError(t, err)
	require.Equal(t, []CardInfo{
		{Card: 0, ProductName: "MLU270-S4", SerialNumber: "270011900000", Firmware: "v1.1.4", DriverVersion: "4.20.18", MemoryBytes: 16384 << 20, PCIBusID: "0000:04:00.0", Line: 1},
		{Card: 1, ProductName: "MLU270-S4", SerialNumber: "270011900001", Firmware: "v1.1.4", DriverVersion: "4.20.18", MemoryBytes: 16384 << 20, PCIBusID: "0000:05:00.0", Line: 21},
		{Card: 2, ProductName: "MLU270-S4", SerialNumber: "270011900002", Firmware: "v1.1.4", DriverVersion: "4.20.18", MemoryBytes: 16384 << 20, PCIBusID: "0000:83:00.0", Line: 41},
	}, cards)
}

func TestParseInfoReadsHealthAndSectionsOfACNMONv5Listing(t *testing.T) {
	cards, err := ParseInfo("cnmon info", []byte(readRecording(t, "mlu370-x8", "info")))
	require.NoError(t, err)
	require.Len(t, cards, 8)
	c := cards[7]
	require.Equal(t, CardInfo{
		Card: 7, ProductName: "MLU370-X8", UUID: "54010007-2311-0000-0000-000000000000",
		Firmware: "v1.1.6", DriverVersion: "5.10.26", MemoryBytes: 23308 << 20, PCIBusID: "0000:b2:00.0",
		DeviceHealth: "Good", DriverState: "Running", Line: c.Line,
	}, c)
}

func TestParseInfoAcceptsTheLayoutVariantsCnmonPrints(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
	}{
		{
			name: "a bare PCI section line without a colon and tab indentation",
			text: "Card 0\n\tProduct Name : MLU370-X4\n\tUUID : u\n\tDriver : v5.10.22\n\tPhysical Memory Usage :\n\t\tTotal : 23308 MiB\n\tPCI\n\t\tDomain ID : 0x0000\n\t\tBus num : 1a\n\t\tDevice : 00\n\t\tFunction : 0\n",
		},
		{
			name: "a card header with a colon, CRLF line ends and placeholder serial",
			text: "Card 0:\r\n    Product Name : MLU370-X4\r\n    Serial Number : N/A\r\n    UUID : u\r\n    Driver : v5.10.22\r\n    Physical Memory Usage :\r\n        Total : 23308 MiB\r\n    PCI :\r\n        Domain ID : 0000\r\n        Bus num : 1A\r\n        Device : 00\r\n        Function : 0\r\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cards, err := ParseInfo("cnmon info", []byte(tc.text))
			require.NoError(t, err)
			require.Len(t, cards, 1)
			require.Equal(t, "0000:1a:00.0", cards[0].PCIBusID)
			require.Equal(t, "u", cards[0].UUID)
			require.Empty(t, cards[0].SerialNumber)
		})
	}
}

// goodCard is a complete card block; the malformed cases below break one
// line of it (line numbers are 1-based).
var goodCard = []string{
	"Card 0", // 1
	"    Product Name                   : MLU370-X8",          // 2
	"    UUID                           : 54010000-2311-0000", // 3
	"    Driver                         : v5.10.26",           // 4
	"    Physical Memory Usage          :",                    // 5
	"        Total                      : 23308 MiB",          // 6
	"    PCI                            :",                    // 7
	"        Domain ID                  : 0000",               // 8
	"        Bus num                    : 1A",                 // 9
	"        Device                     : 00",                 // 10
	"        Function                   : 0",                  // 11
}

func TestParseInfoRejectsGarbledOutputNamingCommandAndLine(t *testing.T) {
	edit := func(line int, text string) string {
		lines := append([]string(nil), goodCard...)
		lines[line-1] = text
		return strings.Join(lines, "\n")
	}
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a card number that is not a number", text: edit(1, "Card zero"), line: 1, msg: `card number "zero" is not a non-negative integer`},
		{name: "a memory size that is not a number", text: edit(6, "        Total : 23,308 MiB"), line: 6, msg: `"23,308" is not a non-negative integer`},
		{name: "a memory size in an unknown unit", text: edit(6, "        Total : 23308 pages"), line: 6, msg: `unknown unit "pages"`},
		{name: "a memory size without unit", text: edit(6, "        Total : 23308"), line: 6, msg: `is not "<number> <unit>"`},
		{name: "a bus number that is not hex", text: edit(9, "        Bus num : 1G"), line: 9, msg: `PCI bus number "1G" is not a hex number up to 0xff`},
		{name: "a device number beyond 0x1f", text: edit(10, "        Device : 20"), line: 10, msg: `PCI device number "20" is not a hex number up to 0x1f`},
		{name: "a function number beyond 7", text: edit(11, "        Function : 8"), line: 11, msg: `PCI function number "8" is not a hex number up to 0x7`},
		{name: "a driver version that is not a version", text: edit(4, "    Driver : unknown"), line: 4, msg: `driver version "unknown" is not a version`},
		{name: "a line that is neither key-value nor section", text: edit(3, "    ### 54010000 ###"), line: 3, msg: `expected "Key : Value" or a section name`},
		{name: "a value without key", text: edit(3, "    : 54010000"), line: 3, msg: "line has a value but no key"},
		{name: "details before the first card", text: "    Product Name : MLU370-X8\n" + strings.Join(goodCard, "\n"), line: 1, msg: `card detail before the first "Card N" line`},
		{name: "an unindented line that is no card header", text: edit(5, "Physical Memory Usage :"), line: 5, msg: `expected a "Card N" line`},
		{name: "a card listed twice", text: strings.Join(goodCard, "\n") + "\n" + strings.Join(goodCard, "\n"), line: 12, msg: "card 0 is listed twice"},
		{name: "output truncated inside the PCI section", text: strings.Join(goodCard[:9], "\n"), line: 1, msg: "card 0 has no PCI (Domain ID, Bus num, Device, Function) (truncated output?)"},
		{name: "output truncated after the card header", text: "Card 0\n", line: 1, msg: "card 0 has no Product Name, Driver, Physical Memory Usage/Total, PCI (Domain ID, Bus num, Device, Function), UUID or Serial Number"},
		{name: "a card without UUID or serial number", text: edit(3, "    UUID : N/A"), line: 1, msg: "card 0 has no UUID or Serial Number"},
		{name: "empty output", text: "\n", line: 0, msg: `no "Card N" block in the output`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseInfo("cnmon info", []byte(tc.text))
			discoverytest.RequireParseError(t, err, "cnmon info", tc.line, tc.msg)
		})
	}
}

// ParseInfoCards reads the cards it can and returns the others as bad,
// so one garbled block leaves the rest of the listing usable.
func TestParseInfoCardsReturnsTheCardsItCanReadAndTheBadOnes(t *testing.T) {
	card := func(n int) []string {
		lines := append([]string(nil), goodCard...)
		lines[0] = fmt.Sprintf("Card %d", n)
		return lines
	}
	for _, tc := range []struct {
		name string
		text []string
		good []int
		bad  map[int]string
		err  string
	}{
		{name: "a garbled value in the middle card", text: slices.Concat(card(0), slices.Replace(card(1), 5, 6, "        Total : lots MiB"), card(2)),
			good: []int{0, 2}, bad: map[int]string{1: `line 17: memory size "lots MiB"`}},
		{name: "the last card cut short", text: slices.Concat(card(0), card(1)[:4]),
			good: []int{0}, bad: map[int]string{1: "card 1 has no Physical Memory Usage/Total"}},
		{name: "a line that is no key-value in the first card", text: slices.Concat(slices.Replace(card(0), 2, 3, "    ### garbage ###"), card(1)),
			good: []int{1}, bad: map[int]string{0: `expected "Key : Value" or a section name`}},
		{name: "every card bad", text: card(0)[:4], err: "card 0 has no Physical Memory Usage/Total"},
		{name: "a garbled card header", text: slices.Concat(card(0), []string{"Card one"}), err: `card number "one" is not a non-negative integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listing, err := ParseInfoCards("cnmon info", []byte(strings.Join(tc.text, "\n")))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var good []int
			for _, c := range listing.Cards {
				good = append(good, c.Card)
			}
			require.Equal(t, tc.good, good)
			require.Len(t, listing.Bad, len(tc.bad))
			for _, b := range listing.Bad {
				require.ErrorContains(t, b.Err, tc.bad[b.Card], "card %d", b.Card)
			}
			_, err = ParseInfo("cnmon info", []byte(strings.Join(tc.text, "\n")))
			require.Error(t, err, "ParseInfo stays strict")
		})
	}
}

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

// Parser for `cnmon info`, which prints one block per MLU chip ("Card N",
// one card per /dev/cambricon_devN, so an MLU370-X8 board shows as two
// cards) with indented "Key : Value" lines; a key with an empty value opens
// a section whose entries are indented deeper.
//
// The layouts accepted (CNMON v4 and v5, a bare "PCI" section line) are
// those of the public recordings testdata/README.md cites.

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// CardInfo is what `cnmon info` says about one chip ("Card N").
type CardInfo struct {
	// Card is cnmon's card number, the N of /dev/cambricon_devN.
	Card int
	// ProductName is the model as cnmon prints it, e.g. MLU370-X8, MLU590-M9.
	ProductName string
	// UUID is cnmon's UUID line (CNMON v5); empty on tools that do not print it.
	UUID string
	// SerialNumber is the "Serial Number" line where printed.
	SerialNumber string
	Firmware     string
	// DriverVersion is the "Driver" line as semver (v5.10.26 → 5.10.26).
	DriverVersion string
	// MemoryBytes is "Physical Memory Usage / Total".
	MemoryBytes int64
	// PCIBusID is built from the PCI section, normalized (0000:1a:00.0).
	PCIBusID string
	// DeviceHealth and DriverState are "Health State / Device" and
	// "Health State / Driver" (e.g. Good, Running); empty when cnmon prints
	// no Health State section (CNMON v4).
	DeviceHealth string
	DriverState  string
	// HealthDetail says what is behind a DeviceHealth other than Good
	// where the reader tells (CNDev's incidents); empty from cnmon.
	HealthDetail string
	// Cores is the MLU core count and CoresFrom what told it (libcndev,
	// or the model table where cnmon does not print it); set by
	// discovery, not by ParseInfo.
	Cores     int
	CoresFrom string
	// Line is the line of the "Card N" header, for messages.
	Line int
}

var (
	cardHeader  = regexp.MustCompile(`^Card\s+(\S+?):?$`)
	bareSection = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 ()/_-]*$`)
)

type cardBuilder struct {
	info                     CardInfo
	domain, bus, dev, fn     uint64
	hasDom, hasBus, hasDev   bool
	hasFn, hasMem, hasDriver bool
}

// ParseInfo parses the output of `cnmon info` (all cards). source is the
// command line, used in errors. Every card must name its product, driver,
// memory, PCI address and a UUID or serial number; a card without them is
// reported as truncated output.
func ParseInfo(source string, data []byte) ([]CardInfo, error) {
	cards, bad, err := parseInfo(source, data, nil)
	if err == nil && len(bad) > 0 {
		err = bad[0].Err
	}
	return cards, err
}

// BadCard is a card whose block of `cnmon info` cannot be read, and why.
type BadCard struct {
	Card int
	Err  error
}

// InfoListing is `cnmon info` read card by card: the cards it could read
// and those whose block it could not.
type InfoListing struct {
	Cards []CardInfo
	Bad   []BadCard
}

// ParseInfoCards is ParseInfo for discovery: a card whose block cannot be
// read (a garbled value, a missing field) is returned in Bad and the other
// cards still are, so one bad row never hides the node's other chips.
// Output whose card blocks cannot be told apart (no "Card N" header
// first, a garbled header, a card listed twice) or that lists no card it
// can read is still an error.
func ParseInfoCards(source string, data []byte) (InfoListing, error) {
	cards, bad, err := parseInfo(source, data, nil)
	if err == nil && len(cards) == 0 && len(bad) > 0 {
		err = bad[0].Err
	}
	if err != nil {
		return InfoListing{}, err
	}
	return InfoListing{Cards: cards, Bad: bad}, nil
}

// parseInfo parses `cnmon info`: the cards it read, those whose block it
// could not (the rest of a bad block is skipped), and an error for output
// it cannot split into cards. onValue, when set, is also given every value
// line of a card by its section path ("Power/Usage").
// long: a single-pass parser of cnmon's blocks, its state local to it;
// vendor-internal parsing, reworked separately (issue 42).
func parseInfo(source string, data []byte, onValue func(card int, path, value string)) ([]CardInfo, []BadCard, error) {
	var (
		cards []CardInfo
		bad   []BadCard
		cur   *cardBuilder
		// skipping: the current card's block had an error; its
		// remaining lines are skipped up to the next "Card N" line.
		skipping bool
		stack    []section
		seen     = map[int]bool{}
	)
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	finish := func() {
		if cur == nil || skipping {
			return
		}
		c, err := cur.build(source)
		if err != nil {
			bad = append(bad, BadCard{Card: cur.info.Card, Err: err})
			return
		}
		cards = append(cards, c)
	}
	badLine := func(err error) {
		bad = append(bad, BadCard{Card: cur.info.Card, Err: err})
		skipping = true
	}

	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		text := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "=") {
			continue // blank line or the "=====CNMON vX=====" banner
		}
		indent := len(text) - len(strings.TrimLeft(text, " \t"))
		if indent == 0 {
			m := cardHeader.FindStringSubmatch(trimmed)
			if m == nil {
				return nil, nil, perr(lineNo, trimmed, `expected a "Card N" line`)
			}
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 0 {
				return nil, nil, perr(lineNo, trimmed, "card number %q is not a non-negative integer", m[1])
			}
			if seen[n] {
				return nil, nil, perr(lineNo, trimmed, "card %d is listed twice", n)
			}
			seen[n] = true
			finish()
			cur, skipping = &cardBuilder{info: CardInfo{Card: n, Line: lineNo}}, false
			stack = stack[:0]
			continue
		}
		if cur == nil {
			return nil, nil, perr(lineNo, trimmed, `card detail before the first "Card N" line`)
		}
		if skipping {
			continue
		}
		key, value, hasColon := strings.Cut(trimmed, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !hasColon && !bareSection.MatchString(trimmed) {
			badLine(perr(lineNo, trimmed, `expected "Key : Value" or a section name`))
			continue
		}
		if key == "" {
			badLine(perr(lineNo, trimmed, "line has a value but no key"))
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		if value == "" {
			stack = append(stack, section{indent: indent, name: key})
			continue
		}
		path := key
		if len(stack) > 0 {
			names := make([]string, 0, len(stack)+1)
			for _, s := range stack {
				names = append(names, s.name)
			}
			path = strings.Join(append(names, key), "/")
		}
		if onValue != nil {
			onValue(cur.info.Card, path, value)
		}
		if err := cur.set(path, value, func(format string, args ...any) error {
			return perr(lineNo, trimmed, format, args...)
		}); err != nil {
			badLine(err)
		}
	}
	finish()
	if len(cards) == 0 && len(bad) == 0 {
		return nil, nil, &discovery.ParseError{Source: source, Msg: `no "Card N" block in the output`}
	}
	return cards, bad, nil
}

type section struct {
	indent int
	name   string
}

func (b *cardBuilder) set(path, value string, fail func(string, ...any) error) error {
	hex := func(max uint64, what string) (uint64, error) {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(value), "0x"), 16, 32)
		if err != nil || v > max {
			return 0, fail("PCI %s %q is not a hex number up to %#x", what, value, max)
		}
		return v, nil
	}
	var err error
	switch path {
	case "Product Name":
		b.info.ProductName = value
	case "UUID":
		b.info.UUID = usable(value)
	case "Serial Number", "SN":
		b.info.SerialNumber = usable(value)
	case "Firmware":
		b.info.Firmware = value
	case "Driver":
		v, verr := discovery.SemverFromVendor(value)
		if verr != nil {
			return fail("%v", verr)
		}
		b.info.DriverVersion, b.hasDriver = v, true
	case "Health State/Device":
		b.info.DeviceHealth = value
	case "Health State/Driver":
		b.info.DriverState = value
	case "Physical Memory Usage/Total":
		n, merr := parseSize(value)
		if merr != nil {
			return fail("%v", merr)
		}
		b.info.MemoryBytes, b.hasMem = n, true
	case "PCI/Domain ID":
		b.domain, err = hex(0xffff, "domain")
		b.hasDom = err == nil
	case "PCI/Bus num":
		b.bus, err = hex(0xff, "bus number")
		b.hasBus = err == nil
	case "PCI/Device":
		b.dev, err = hex(0x1f, "device number")
		b.hasDev = err == nil
	case "PCI/Function":
		b.fn, err = hex(0x7, "function number")
		b.hasFn = err == nil
	}
	return err
}

func (b *cardBuilder) build(source string) (CardInfo, error) {
	c := b.info
	var missing []string
	if c.ProductName == "" {
		missing = append(missing, "Product Name")
	}
	if !b.hasDriver {
		missing = append(missing, "Driver")
	}
	if !b.hasMem {
		missing = append(missing, "Physical Memory Usage/Total")
	}
	if !b.hasDom || !b.hasBus || !b.hasDev || !b.hasFn {
		missing = append(missing, "PCI (Domain ID, Bus num, Device, Function)")
	}
	if c.UUID == "" && c.SerialNumber == "" {
		missing = append(missing, "UUID or Serial Number")
	}
	if len(missing) > 0 {
		return CardInfo{}, &discovery.ParseError{
			Source: source, Line: c.Line, Text: fmt.Sprintf("Card %d", c.Card),
			Msg: fmt.Sprintf("card %d has no %s (truncated output?)", c.Card, strings.Join(missing, ", ")),
		}
	}
	c.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.%x", b.domain, b.bus, b.dev, b.fn)
	return c, nil
}

// usable drops the placeholders cnmon prints for unknown values.
func usable(s string) string {
	switch strings.ToLower(s) {
	case "n/a", "na", "unknown", "none":
		return ""
	}
	return s
}

var sizeUnits = map[string]int64{
	"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
	"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, // cnmon prints MiB; accept the loose spellings too
}

// parseSize reads "23308 MiB".
func parseSize(s string) (int64, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("memory size %q is not \"<number> <unit>\"", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory size %q: %q is not a non-negative integer", s, f[0])
	}
	unit, ok := sizeUnits[f[1]]
	if !ok {
		return 0, fmt.Errorf("memory size %q: unknown unit %q", s, f[1])
	}
	// The capacity is published in bytes: refuse what overflows them.
	if n > math.MaxInt64/unit {
		return 0, fmt.Errorf("memory size %q is more than any chip has", s)
	}
	return n * unit, nil
}

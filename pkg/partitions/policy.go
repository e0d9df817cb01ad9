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

package partitions

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Mode is how a node publishes one chip. It is a node setting (the node
// agent's chip modes), not a claim's: what a chip offers must be in its
// ResourceSlice before any claim is scheduled.
//
// Whole is the default: partitions multiply the devices the scheduler
// evaluates per claim (docs/benchmarks.md) and, in Kubernetes 1.37, their
// shared counters keep admin-access claims off a chip in use
// (kubernetes/kubernetes#140729), so a node offers partitions or shares
// only where its admin asks for them.
type Mode string

const (
	// ModePartitioned publishes the whole chip and, where the model has
	// templates, one device per partition that could be made on it; the
	// chip's counter set keeps them exclusive of each other.
	ModePartitioned Mode = "Partitioned"
	// ModeShared publishes the chip as one device with
	// allowMultipleAllocations: several claims each get a share of its
	// memory and cores (consumable capacity). A claim that asks for no
	// capacity gets all of the memory, that is the whole chip. No
	// partitions.
	ModeShared Mode = "Shared"
	// ModeWhole publishes only the whole chip, as before partitions. The
	// default.
	ModeWhole Mode = "Whole"
)

// Modes lists the valid modes, for messages.
var Modes = []Mode{ModePartitioned, ModeShared, ModeWhole}

// Policy says how each chip of a node is published.
type Policy struct {
	// Default is the mode of chips not in Chips; empty means Whole.
	Default Mode
	// Chips maps DRA device names of whole chips (npu-0, mlu-3) to a mode;
	// the keys npu-* and mlu-* set the mode of a vendor's other chips.
	Chips map[string]Mode
	// NoPartitions publishes chips that would be Partitioned as Whole: set
	// when the node has no partition tool.
	NoPartitions bool
	// Registry has the vendors whose chips the policy names and knows the
	// partitions of (ParsePolicy sets them).
	Registry vendors.Registry
}

// ModeOf returns the mode chip c is published in: Whole unless the policy
// says otherwise. A chip whose model has no partitions, or whose vendor's
// partition mode is off (inventory.Chip.PartitionModeOff), is published
// Whole where Partitioned was asked for (WhyWhole says why).
func (p Policy) ModeOf(c inventory.Chip) Mode {
	m := p.Requested(c)
	if m == ModePartitioned && p.WhyWhole(c) != "" {
		return ModeWhole
	}
	return m
}

// Requested returns the mode the policy asks for chip c, before what the
// chip can do is taken into account.
func (p Policy) Requested(c inventory.Chip) Mode {
	name := p.Registry.ChipDeviceName(c)
	m, ok := p.Chips[name]
	if !ok {
		prefix, _, _ := strings.Cut(name, "-")
		m, ok = p.Chips[prefix+"-*"]
	}
	if !ok {
		m = p.Default
	}
	if m == "" {
		m = ModeWhole
	}
	return m
}

// WhyWhole says why chip c cannot be published Partitioned, or "" if it
// can: the node has no partition tool, the model has no partitions, or
// the vendor's partition mode is off.
func (p Policy) WhyWhole(c inventory.Chip) string {
	switch _, ok := ModelOf(p.Registry, c); {
	case p.NoPartitions:
		return "the node has no partition tool (recorded tool output)"
	case !ok:
		return fmt.Sprintf("model %s has no partition templates", c.Model)
	case c.PartitionModeOff != "":
		return c.PartitionModeOff
	}
	return ""
}

// AttrShareEnforcement is the attribute of a Shared chip that says who
// enforces its shares (DESIGN.md): EnforcementHardware where each share
// becomes a partition the vendor's driver makes at prepare,
// EnforcementNone where the shares are accounting only.
const AttrShareEnforcement resourceapi.QualifiedName = names.Domain + "/shareEnforcement"

// Values of AttrShareEnforcement.
const (
	EnforcementHardware = "hardware"
	EnforcementNone     = "none"
)

// ShareGrid returns the grid of a chip published Shared whose shares the
// vendor's driver carves into partitions at prepare
// (vendors.SizedPartitions), or false where its shares stay accounting
// only: a chip not Shared, a node without a partition tool, a model or
// library that cannot carve, or a chip whose partition mode is off.
func (p Policy) ShareGrid(c inventory.Chip) (vendors.ShareGrid, vendors.SizedPartitions, bool) {
	if p.ModeOf(c) != ModeShared || p.NoPartitions || c.PartitionModeOff != "" {
		return vendors.ShareGrid{}, nil, false
	}
	v, _ := p.Registry.Lookup(c.Vendor)
	return vendors.ShareGridOf(v, c)
}

// Enforcement is chip c's AttrShareEnforcement value, "" where it is not
// Shared.
func (p Policy) Enforcement(c inventory.Chip) string {
	if p.ModeOf(c) != ModeShared {
		return ""
	}
	if _, _, ok := p.ShareGrid(c); ok {
		return EnforcementHardware
	}
	return EnforcementNone
}

// MakesPartitions says whether the driver makes partitions on chip c: it
// is Partitioned, or Shared with shares the vendor's driver carves.
func (p Policy) MakesPartitions(c inventory.Chip) bool {
	if p.ModeOf(c) == ModePartitioned {
		return true
	}
	_, _, ok := p.ShareGrid(c)
	return ok
}

// PolicyHelp describes the chip-modes setting for the --chip-modes flags
// of the node agent and the CLI, which take the same syntax.
const PolicyHelp = `how chips are published: Whole (the chip only; the default), ` +
	`Partitioned (the whole chip plus its vNPU/sMLU partitions, where the model has templates; ` +
	`costs the scheduler about 5-7x per claim) or Shared (one device several claims share by capacity); ` +
	`one mode for all chips or per device, e.g. "Partitioned", "npu-0=Shared,mlu-*=Partitioned"`

// ParsePolicy parses the node agent's chip-modes setting: a comma list of
// entries, each a mode (the default for every chip) or <device>=<mode>
// with a whole-chip device name (npu-0, mlu-3), or <prefix>-*=<mode>
// (npu-*, mlu-*) for every chip of a vendor; the prefixes are those of
// the vendors of reg (vendors.Names.DevicePrefix). Modes are Partitioned, Shared
// and Whole. A device name beats npu-*/mlu-*, which beat the default;
// otherwise later entries win. Examples: "Partitioned", "Shared",
// "npu-0=Shared,npu-1=Shared", "mlu-*=Partitioned". The empty string is the
// default policy: every chip Whole.
func ParsePolicy(reg vendors.Registry, s string) (Policy, error) {
	p := Policy{Chips: map[string]Mode{}, Registry: reg}
	var prefixes []string
	for _, v := range reg.All() {
		prefixes = append(prefixes, v.Names().DevicePrefix)
	}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, value, hasKey := strings.Cut(entry, "=")
		if !hasKey {
			key, value = "", key
		}
		m, err := parseMode(strings.TrimSpace(value))
		if err != nil {
			return Policy{}, fmt.Errorf("chip modes entry %d %q: %w", i+1, entry, err)
		}
		key = strings.TrimSpace(key)
		switch {
		case key == "":
			p.Default = m
		case validChipName(prefixes, key):
			p.Chips[key] = m
		default:
			return Policy{}, fmt.Errorf("chip modes entry %d %q: %q is not a chip device name (%s)", i+1, entry, key, chipNameForms(prefixes))
		}
	}
	return p, nil
}

func parseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("mode %q is not one of %s", s, strings.Join(names, ", "))
}

// validChipName says whether s is <prefix>-N or <prefix>-* for one of
// the vendors' device prefixes.
func validChipName(prefixes []string, s string) bool {
	prefix, rest, ok := strings.Cut(s, "-")
	if !ok || !slices.Contains(prefixes, prefix) {
		return false
	}
	if rest == "*" {
		return true
	}
	n, err := strconv.Atoi(rest)
	return err == nil && n >= 0 && rest == strconv.Itoa(n)
}

// chipNameForms lists the chip names ParsePolicy takes, for its errors:
// "npu-N, mlu-N, npu-* or mlu-*".
func chipNameForms(prefixes []string) string {
	var forms []string
	for _, p := range prefixes {
		forms = append(forms, p+"-N")
	}
	for _, p := range prefixes {
		forms = append(forms, p+"-*")
	}
	if len(forms) < 2 {
		return strings.Join(forms, "")
	}
	return strings.Join(forms[:len(forms)-1], ", ") + " or " + forms[len(forms)-1]
}

// String renders the policy in ParsePolicy's syntax, sorted.
func (p Policy) String() string {
	var parts []string
	if p.Default != "" {
		parts = append(parts, string(p.Default))
	}
	chips := make([]string, 0, len(p.Chips))
	for k := range p.Chips {
		chips = append(chips, k)
	}
	sort.Strings(chips)
	for _, k := range chips {
		parts = append(parts, k+"="+string(p.Chips[k]))
	}
	return strings.Join(parts, ",")
}

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

// Cambricon sMLU instances with cnmon (the fallback where libcndev is not
// loaded; see cndev.go for the library path):
//
//	cnmon smlu -c <card> -l                 list the card's instances
//	cnmon smlu -c <card> -p                 list the card's profiles
//	cnmon smlu -c <card> -C <profile id>    create an instance
//	cnmon smlu -c <card> -D <instance id>   destroy one
//
// <card> is the N of /dev/cambricon_devN (cnmon's card index). sMLU works
// only on a chip whose sMLU mode is on, an admin's step that discovery
// reads (Chip.PartitionModeOff), so the tool never switches modes itself.
// The column layout of -l and -p is not in the public recordings, so the
// parsers depend on none: an instance is a line naming its capability node
// /dev/cambricon-caps/cap_dev<card>_mi<instance>, a profile a line starting
// with its id and naming a profile; other lines are skipped, and a destroy
// is checked by listing again. Sources: docs/hardware.md#smlu-instances.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// SMLU is one sMLU instance as `cnmon smlu -c N -l` (or libcndev) lists it.
type SMLU struct {
	// Card is the N of its cap_devN_miK node.
	Card        int
	InstanceID  int
	ProfileName string
	UUID        string
	DeviceNode  string
}

// SMLUProfile is one profile of `cnmon smlu -c N -p`.
type SMLUProfile struct {
	ID   int
	Name string
}

var (
	smluNode        = regexp.MustCompile(`^/dev/cambricon-caps/cap_dev(\d+)_mi(\d+)$`)
	smluProfileName = regexp.MustCompile(`^\d+p\.\d+mb$`)
	smluCreated     = regexp.MustCompile(`(?i)successfully created smlu instance ID (\d+) on card (\d+), using profile ID (\d+)`)
)

// ParseSMLUList parses `cnmon smlu -c N -l`: every line naming an
// instance's capability node is one instance.
func ParseSMLUList(source string, data []byte) ([]SMLU, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var out []SMLU
	seen := map[int]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		lineNo, line := i+1, strings.TrimSpace(raw)
		var s SMLU
		found := false
		for _, f := range strings.Fields(line) {
			switch m := smluNode.FindStringSubmatch(f); {
			case m != nil:
				card, err1 := strconv.Atoi(m[1])
				id, err2 := strconv.Atoi(m[2])
				if err1 != nil || err2 != nil {
					return nil, perr(lineNo, line, "capability node %s has numbers out of range", f)
				}
				s.Card, s.InstanceID, s.DeviceNode, found = card, id, f, true
			case smluProfileName.MatchString(f):
				s.ProfileName = f
			case strings.HasPrefix(f, "MLU-"):
				s.UUID = f
			}
		}
		if !found {
			continue
		}
		if s.ProfileName == "" {
			return nil, perr(lineNo, line, "sMLU instance %d names no profile (<quota>p.<MiB>mb)", s.InstanceID)
		}
		// Instances are found by id: a repeated one would make the
		// lookup pick either.
		if first, dup := seen[s.InstanceID]; dup {
			return nil, perr(lineNo, line, "sMLU instance %d is listed twice (first on line %d)", s.InstanceID, first)
		}
		seen[s.InstanceID] = lineNo
		out = append(out, s)
	}
	return out, nil
}

// ParseSMLUProfiles parses `cnmon smlu -c N -p`: every line that starts
// with a number and names a profile is one profile.
func ParseSMLUProfiles(source string, data []byte) ([]SMLUProfile, error) {
	var out []SMLUProfile
	seen := map[int]bool{}
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		id, err := strconv.Atoi(fields[0])
		if err != nil || id < 0 {
			continue
		}
		for _, f := range fields[1:] {
			if !smluProfileName.MatchString(f) {
				continue
			}
			if seen[id] {
				return nil, &discovery.ParseError{Source: source, Line: i + 1, Text: line, Msg: fmt.Sprintf("profile %d is listed twice", id)}
			}
			seen[id] = true
			out = append(out, SMLUProfile{ID: id, Name: f})
			break
		}
	}
	return out, nil
}

// smluCreate is what `cnmon smlu -C` says it made.
type smluCreate struct{ instance, card, profile int }

func parseSMLUCreate(source string, data []byte) (smluCreate, error) {
	m := smluCreated.FindSubmatch(data)
	if m == nil {
		return smluCreate{}, &discovery.ParseError{Source: source, Msg: `no "Successfully created smlu instance ID <id> on card <card>, using profile ID <id>" in the output: ` + strings.TrimSpace(string(data))}
	}
	var out [3]int
	for i := range out {
		n, err := strconv.Atoi(string(m[i+1]))
		if err != nil {
			return smluCreate{}, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("number %s is out of range", m[i+1])}
		}
		out[i] = n
	}
	return smluCreate{instance: out[0], card: out[1], profile: out[2]}, nil
}

// PartitionTool implements vendors.PartitionTool for Cambricon sMLU instances:
// through libcndev where Library is set (NewTool sets it
// where the node's library loads), through cnmon otherwise.
type PartitionTool struct {
	Runner discovery.CommandRunner
	// Library, when set, is used for every sMLU call.
	Library *CNDev
}

// libraryFor returns the library to use for sMLU calls, nil for cnmon.
func (t *PartitionTool) libraryFor() *CNDev {
	if l := t.Library; l != nil && l.instances != nil {
		return l
	}
	return nil
}

func card(c inventory.Chip) string { return strconv.Itoa(c.Index) }

// List implements vendors.PartitionTool.
func (t *PartitionTool) List(ctx context.Context, c inventory.Chip) ([]vendors.Instance, error) {
	if l := t.libraryFor(); l != nil {
		insts, _, err := t.libList(l, c)
		return insts, err
	}
	rows, err := discovery.Query(ctx, t.Runner, fmt.Sprintf("listing the sMLU instances of chip %d", c.Index), ParseSMLUList,
		Cnmon, "smlu", "-c", card(c), "-l")
	if err != nil {
		return nil, err
	}
	return smluInstances(c, rows, discovery.CommandLine(Cnmon, "smlu", "-c", card(c), "-l"))
}

// smluInstances turns the rows listed for chip c into instances; what
// lists them (a command line, a library call) names the source in errors.
func smluInstances(c inventory.Chip, rows []SMLU, what string) ([]vendors.Instance, error) {
	out := make([]vendors.Instance, 0, len(rows))
	for _, r := range rows {
		if r.Card != c.Index {
			return nil, fmt.Errorf("listing the sMLU instances of chip %d: %s lists %s, a node of card %d", c.Index, what, r.DeviceNode, r.Card)
		}
		out = append(out, vendors.Instance{Type: PartitionType, Chip: c.Index, Template: r.ProfileName, ID: r.InstanceID, DeviceNode: r.DeviceNode, UUID: r.UUID})
	}
	return out, nil
}

// Create implements vendors.PartitionTool.
func (t *PartitionTool) Create(ctx context.Context, c inventory.Chip, tmpl vendors.Template) (vendors.Instance, error) {
	if tmpl.Type != PartitionType {
		return vendors.Instance{}, fmt.Errorf("creating an sMLU instance on chip %d: profile %s is a %s template", c.Index, tmpl.Name, tmpl.Type)
	}
	if l := t.libraryFor(); l != nil {
		return t.libCreate(ctx, l, c, tmpl)
	}
	profiles, err := discovery.Query(ctx, t.Runner, fmt.Sprintf("listing the sMLU profiles of chip %d", c.Index), ParseSMLUProfiles,
		Cnmon, "smlu", "-c", card(c), "-p")
	if err != nil {
		return vendors.Instance{}, err
	}
	id := -1
	for _, p := range profiles {
		if p.Name == tmpl.Name {
			id = p.ID
		}
	}
	if id < 0 {
		return vendors.Instance{}, fmt.Errorf("creating a %s sMLU instance on chip %d: %s lists no such profile", tmpl.Name, c.Index,
			discovery.CommandLine(Cnmon, "smlu", "-c", card(c), "-p"))
	}
	what := fmt.Sprintf("creating a %s sMLU instance (profile %d) on chip %d", tmpl.Name, id, c.Index)
	made, err := discovery.Query(ctx, t.Runner, what, parseSMLUCreate, Cnmon, "smlu", "-c", card(c), "-C", strconv.Itoa(id))
	if err != nil {
		return vendors.Instance{}, err
	}
	if made.card != c.Index || made.profile != id {
		return vendors.Instance{}, fmt.Errorf("%s: cnmon created instance %d on card %d with profile %d", what, made.instance, made.card, made.profile)
	}
	return vendors.ConfirmCreated(ctx, t, c, made.instance, tmpl.Name, vendors.Created{Tool: Cnmon, Kind: "sMLU instance", Template: "profile"})
}

// Destroy implements vendors.PartitionTool.
func (t *PartitionTool) Destroy(ctx context.Context, c inventory.Chip, inst vendors.Instance) error {
	if l := t.libraryFor(); l != nil {
		return t.libDestroy(ctx, l, c, inst)
	}
	existing, err := t.List(ctx, c)
	if err != nil {
		return err
	}
	if _, ok := vendors.FindInstance(existing, inst.ID); !ok {
		return nil
	}
	what := fmt.Sprintf("destroying sMLU instance %d on chip %d", inst.ID, c.Index)
	ignore := func(string, []byte) (struct{}, error) { return struct{}{}, nil }
	if _, err := discovery.Query(ctx, t.Runner, what, ignore, Cnmon, "smlu", "-c", card(c), "-D", strconv.Itoa(inst.ID)); err != nil {
		return err
	}
	after, err := t.List(ctx, c)
	if err != nil {
		return fmt.Errorf("%s: checking it is gone: %w", what, err)
	}
	if _, ok := vendors.FindInstance(after, inst.ID); ok {
		return fmt.Errorf("%s: cnmon still lists it", what)
	}
	return nil
}

// NewTool implements vendors.Partitions: sMLUs through the node's
// libcndev where it loads, else with cnmon. A library
// that does not load is logged by discovery, which loads it first.
func (SMLUs) NewTool(cfg vendors.BackendConfig) vendors.PartitionTool {
	t := &PartitionTool{Runner: cfg.Runner}
	if cfg.Library == vendors.LibraryNone {
		return t
	}
	t.Library = vendors.LoadLibrary(cfg.Opened, func() *CNDev {
		l, _ := OpenCNDev(cfg.Root, cfg.Library)
		return l
	})
	return t
}

// Edits implements vendors.Partitions. An sMLU container gets the chip's
// /dev/cambricon_devN, its /dev/cambricon_ipcmN where the node has one,
// and the instance's capability node, at the same paths, and no
// CAMBRICON_VISIBLE_DEVICES: what Cambricon's device plugin gives a MIM or
// dynamic-sMLU container (cambricon-k8s-device-plugin@3c9ed24
// device-plugin/pkg/mlu/server.go PrepareResponse: lines 265-282 add the
// "dev,ipcm,cap" path built at line 439 and no variable; the slots
// variable is set only for whole cards, lines 233-237, after line 229
// returned an sMLU with VIRTUAL_DEVICES instead, and its CDI path, lines
// 211-216, gives an sMLU nothing). The card's other nodes (commu,
// cmsg_ctrl, msgq, rpc) serve the whole card: the plugin gives them only
// to a container that has the whole card (lines 284-308), and a shared
// card must not hand them to one instance's tenant.
func (SMLUs) Edits(c inventory.Chip, inst vendors.Instance) (vendors.PartitionEdits, error) {
	if inst.Type != PartitionType {
		return vendors.PartitionEdits{}, fmt.Errorf("%s: unknown partition type", inst)
	}
	if !smluNode.MatchString(inst.DeviceNode) {
		return vendors.PartitionEdits{}, fmt.Errorf("%s: device node %q is not /dev/cambricon-caps/cap_dev<N>_mi<K>", inst, inst.DeviceNode)
	}
	own := map[string]bool{
		fmt.Sprintf("/dev/%s%d", devPrefix, c.Index): true,
		ipcmPrefix + strconv.Itoa(c.Index):           true,
	}
	var nodes []vendors.DeviceNode
	for _, n := range c.DeviceNodes {
		if own[n] {
			nodes = append(nodes, vendors.DeviceNode{Path: n, HostPath: n})
		}
	}
	nodes = append(nodes, vendors.DeviceNode{Path: inst.DeviceNode, HostPath: inst.DeviceNode})
	return vendors.PartitionEdits{DeviceNodes: nodes, NotVisible: true}, nil
}

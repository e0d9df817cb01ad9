package cambricon

// Cambricon sMLU instances with cnmon.
//
// What is certain (sources in testdata/smlu/README.md): an sMLU instance is
// made on one chip from a profile (the driver's defaults are 1, 1/2 and
// 1/4 of the chip), gets an instance id K and the device node
// /dev/cambricon-caps/cap_dev<N>_mi<K>, and is listed and destroyed by
// instance; Cambricon's device plugin does this through libcndev
// (cndevCreateSMluInstanceByProfileId, cndevGetAllSMluInstanceInfo,
// cndevDestroySMluInstanceByHandle in device-plugin/pkg/cndev/bindings.go).
//
// What is assumed: the command-line spelling below. No public document of
// cnmon's sMLU subcommand was at hand, so the plugin speaks this small,
// explicit dialect and its parser accepts the layout documented in
// testdata/smlu/README.md; a node whose cnmon differs can point --cnmon at a
// wrapper that maps these three commands to its tool (they are the only
// partition commands the plugin runs):
//
//	cnmon smlu -c <card> --list
//	cnmon smlu -c <card> --create --profile <profile name>
//	cnmon smlu -c <card> --destroy --instance <instance id>
//
// <card> is the N of /dev/cambricon_devN (cnmon's card index).

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

// SMLU is one row of `cnmon smlu -c N --list`.
type SMLU struct {
	InstanceID  int
	ProfileID   int
	ProfileName string
	UUID        string
	DeviceNode  string
}

var smluHeader = []string{"Instance", "ID", "Profile", "ID", "Profile", "Name", "UUID", "Device", "Node"}

// ParseSMLUList parses the instance table of `cnmon smlu -c N --list`:
//
//	Card: 0
//	Total sMLU instances: 1
//	Instance ID  Profile ID  Profile Name  UUID                                      Device Node
//	1            1           50p.11654mb   MLU-20001012-1916-0000-0000-000000000000  /dev/cambricon-caps/cap_dev0_mi1
func ParseSMLUList(source string, data []byte) ([]SMLU, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		out       []SMLU
		seen      = map[int]int{}
		total     = -1
		inTable   bool
		totalLine int
		totalText string
	)
	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Total sMLU instances:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				return nil, perr(lineNo, line, "the instance count is not a number")
			}
			total, totalLine, totalText = n, lineNo, line
			continue
		}
		fields := strings.Fields(line)
		if equalFields(fields, smluHeader) {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if len(fields) != 5 {
			return nil, perr(lineNo, line, "an sMLU row has 5 columns (Instance ID, Profile ID, Profile Name, UUID, Device Node), this one %d", len(fields))
		}
		id, err1 := strconv.Atoi(fields[0])
		prof, err2 := strconv.Atoi(fields[1])
		if err1 != nil || err2 != nil || id < 0 || prof < 0 || !strings.HasPrefix(fields[4], "/dev/") {
			return nil, perr(lineNo, line, "expected non-negative instance and profile ids and a /dev path")
		}
		// Instances are found by id: a repeated one would make the
		// lookup pick either.
		if first, dup := seen[id]; dup {
			return nil, perr(lineNo, line, "sMLU instance %d is listed twice (first on line %d)", id, first)
		}
		seen[id] = lineNo
		out = append(out, SMLU{InstanceID: id, ProfileID: prof, ProfileName: fields[2], UUID: fields[3], DeviceNode: fields[4]})
	}
	if total < 0 {
		return nil, perr(0, "", `no "Total sMLU instances" line`)
	}
	if total != len(out) {
		return nil, perr(totalLine, totalText, "cnmon counts %d sMLU instances but lists %d", total, len(out))
	}
	return out, nil
}

func equalFields(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	smluCreated   = regexp.MustCompile(`(?i)create sMLU instance (\d+) success`)
	smluDestroyed = regexp.MustCompile(`(?i)destroy sMLU instance (\d+) success`)
)

func parseSMLUCreate(source string, data []byte) (int, error) {
	return parseSMLUResult(source, data, smluCreated, "Create")
}

func parseSMLUDestroy(source string, data []byte) (int, error) {
	return parseSMLUResult(source, data, smluDestroyed, "Destroy")
}

// parseSMLUResult finds the instance id in cnmon's "<Verb> sMLU instance
// <id> success" line.
func parseSMLUResult(source string, data []byte, re *regexp.Regexp, verb string) (int, error) {
	m := re.FindSubmatch(data)
	if m == nil {
		return 0, &discovery.ParseError{Source: source, Msg: `no "` + verb + ` sMLU instance <id> success" in the output: ` + strings.TrimSpace(string(data))}
	}
	id, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("instance id %s is out of range", m[1])}
	}
	return id, nil
}

// PartitionTool implements partitions.Tool for Cambricon sMLU instances.
type PartitionTool struct {
	Runner discovery.CommandRunner
}

// List implements partitions.Tool.
func (t *PartitionTool) List(ctx context.Context, c inventory.Chip) ([]partitions.Instance, error) {
	rows, err := discovery.Query(ctx, t.Runner, fmt.Sprintf("listing the sMLU instances of chip %d", c.Index), ParseSMLUList,
		Cnmon, "smlu", "-c", strconv.Itoa(c.Index), "--list")
	if err != nil {
		return nil, err
	}
	out := make([]partitions.Instance, 0, len(rows))
	for _, r := range rows {
		out = append(out, partitions.Instance{Type: partitions.TypeSMLU, Chip: c.Index, Template: r.ProfileName, ID: r.InstanceID, DeviceNode: r.DeviceNode, UUID: r.UUID})
	}
	return out, nil
}

// Create implements partitions.Tool.
func (t *PartitionTool) Create(ctx context.Context, c inventory.Chip, tmpl partitions.Template) (partitions.Instance, error) {
	if tmpl.Type != partitions.TypeSMLU {
		return partitions.Instance{}, fmt.Errorf("creating an sMLU instance on chip %d: profile %s is a %s template", c.Index, tmpl.Name, tmpl.Type)
	}
	id, err := discovery.Query(ctx, t.Runner, fmt.Sprintf("creating a %s sMLU instance on chip %d", tmpl.Name, c.Index), parseSMLUCreate,
		Cnmon, "smlu", "-c", strconv.Itoa(c.Index), "--create", "--profile", tmpl.Name)
	if err != nil {
		return partitions.Instance{}, err
	}
	return partitions.ConfirmCreated(ctx, t, c, id, tmpl.Name, partitions.Created{Tool: Cnmon, Kind: "sMLU instance", Template: "profile"})
}

// Destroy implements partitions.Tool.
func (t *PartitionTool) Destroy(ctx context.Context, c inventory.Chip, inst partitions.Instance) error {
	existing, err := t.List(ctx, c)
	if err != nil {
		return err
	}
	if _, ok := partitions.Find(existing, inst.ID); !ok {
		return nil
	}
	id, err := discovery.Query(ctx, t.Runner, fmt.Sprintf("destroying sMLU instance %d on chip %d", inst.ID, c.Index), parseSMLUDestroy,
		Cnmon, "smlu", "-c", strconv.Itoa(c.Index), "--destroy", "--instance", strconv.Itoa(inst.ID))
	if err != nil {
		return err
	}
	if id != inst.ID {
		return fmt.Errorf("destroying sMLU instance %d on chip %d: cnmon destroyed instance %d", inst.ID, c.Index, id)
	}
	return nil
}

// NewPartitionTool implements partitions.Vendor.
func (Cambricon) NewPartitionTool(runner discovery.CommandRunner) partitions.Tool {
	return &PartitionTool{Runner: runner}
}

// PartitionEdits implements partitions.Vendor. An sMLU container gets the
// chip's own nodes (/dev/cambricon_devN, /dev/cambricon_ipcmN, …) plus the
// instance's capability node, at the same paths, and
// CAMBRICON_VISIBLE_DEVICES=N: what Cambricon's device plugin gives a MIM
// or dynamic-sMLU container
// (Cambricon/cambricon-k8s-device-plugin device-plugin/pkg/mlu/server.go
// PrepareResponse: "/dev/cambricon_dev0,/dev/cambricon_ipcm0,
// /dev/cambricon-caps/cap_dev0_mi1").
func (Cambricon) PartitionEdits(c inventory.Chip, inst partitions.Instance) (partitions.Edits, error) {
	if inst.Type != partitions.TypeSMLU {
		return partitions.Edits{}, fmt.Errorf("%s: unknown partition type", inst)
	}
	var nodes []partitions.DeviceNode
	for _, n := range c.DeviceNodes {
		nodes = append(nodes, partitions.DeviceNode{Path: n, HostPath: n})
	}
	nodes = append(nodes, partitions.DeviceNode{Path: inst.DeviceNode, HostPath: inst.DeviceNode})
	return partitions.Edits{DeviceNodes: nodes, VisibleID: c.Index}, nil
}

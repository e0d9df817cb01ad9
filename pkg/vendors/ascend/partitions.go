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

// Ascend vNPUs with npu-smi (the commands and their sources:
// docs/hardware.md#vnpu-commands; recorded in testdata/vnpu):
//
//	npu-smi info -t info-vnpu -i <npu> -c <chip>      the vNPUs of one chip
//	npu-smi set -t create-vnpu -i <npu> -c <chip> -f <template> -v <vnpu id>
//	npu-smi set -t destroy-vnpu -i <npu> -c <chip> -v <vnpu id>
//
// -i and -c are the NPU ID and Chip ID of `npu-smi info -m`, not the
// physical index N of /dev/davinciN. The vNPU id is chosen by the plugin
// (the lowest free one of the chip's range [N*16+100, N*16+100+size)) and
// passed with -v, because create-vnpu only prints "Create vnpu success":
// the plugin must know the id to record it before anyone uses the vNPU.
// The chips must be in vNPU docker mode (`npu-smi set -t vnpu-mode -d 0`),
// a node setup step the plugin does not take.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// VNPU is one row of `npu-smi info -t info-vnpu`.
type VNPU struct {
	ID          int
	VGroup      int
	ContainerID string
	Status      int
	Template    string
}

var vnpuHeader = regexp.MustCompile(`^\|?\s*Vnpu ID\s*\|\s*Vgroup ID\s*\|\s*Container ID\s*\|\s*Status\s*\|\s*Template Name\s*\|?$`)

// ParseVNPUInfo parses `npu-smi info -t info-vnpu -i N -c M`: a resource
// summary, "Total number of vnpu: K", then a table
//
//	|  Vnpu ID  |  Vgroup ID     |  Container ID  |  Status  |  Template Name       |
//	|  100      |  0             |  000000000000  |  0       |  vir10_3c_16g        |
//
// with +---+ rules between rows (older npu-smi prints the rows without
// the outer bars). The row count must match the total.
func ParseVNPUInfo(source string, data []byte) ([]VNPU, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	var (
		out       []VNPU
		seen      = map[int]int{}
		total     = -1
		inTable   bool
		totalLine int
		totalText string
	)
	for i, raw := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "|=") {
			continue
		}
		if rest, ok := strings.CutPrefix(strings.Trim(line, "| "), "Total number of vnpu:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				return nil, perr(lineNo, line, "the vNPU count is not a number")
			}
			total, totalLine, totalText = n, lineNo, line
			continue
		}
		if vnpuHeader.MatchString(line) {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			return nil, perr(lineNo, line, "a vNPU row has 5 columns (Vnpu ID, Vgroup ID, Container ID, Status, Template Name), this one %d", len(cells))
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		id, err1 := strconv.Atoi(cells[0])
		status, err3 := strconv.Atoi(cells[3])
		if err1 != nil || err3 != nil || id < 0 || status < 0 || cells[4] == "" {
			return nil, perr(lineNo, line, "expected a non-negative Vnpu ID and Status and a template name")
		}
		// Instances are found by id: a repeated one would make the
		// lookup pick either.
		if first, dup := seen[id]; dup {
			return nil, perr(lineNo, line, "vNPU %d is listed twice (first on line %d)", id, first)
		}
		seen[id] = lineNo
		vgroup, err := strconv.Atoi(cells[1])
		if err != nil {
			// Atlas training products print no Vgroup ID (AVI guide note).
			vgroup = -1
		}
		out = append(out, VNPU{ID: id, VGroup: vgroup, ContainerID: cells[2], Status: status, Template: cells[4]})
	}
	if total < 0 {
		return nil, perr(0, "", `no "Total number of vnpu" line`)
	}
	if total != len(out) {
		return nil, perr(totalLine, totalText, "npu-smi counts %d vNPUs but lists %d", total, len(out))
	}
	return out, nil
}

// parseSetResult checks the "Status : OK" of an `npu-smi set` command.
func parseSetResult(source string, data []byte) (string, error) {
	if lower := strings.ToLower(string(data)); strings.Contains(lower, notDockerMode) || strings.Contains(lower, modeUnread) {
		// npu-smi exits 0 here: the node is not in vNPU docker mode, or
		// its mode query was refused (in a container).
		return "", fmt.Errorf("%s: %s", source, strings.TrimSpace(string(data)))
	}
	status, message := "", ""
	for _, raw := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(raw, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Status":
			status = strings.TrimSpace(v)
		case "Message":
			message = strings.TrimSpace(v)
		}
	}
	if !strings.EqualFold(status, "OK") {
		if status == "" {
			return "", &discovery.ParseError{Source: source, Msg: "no \"Status : OK\" in the output: " + strings.TrimSpace(string(data))}
		}
		return "", fmt.Errorf("%s: status %s: %s", source, status, message)
	}
	return message, nil
}

// PartitionTool implements vendors.PartitionTool for Ascend vNPUs: through
// DCMI where it has the library (VNPUs.NewTool), otherwise with
// npu-smi through Runner.
type PartitionTool struct {
	Runner discovery.CommandRunner

	mu      sync.Mutex
	mapping map[int]ChipMapping // by logic id
	// dcmi is the loaded libdcmi.so; nil: npu-smi.
	dcmi *dcmiLib
	// hostFiles is where the DCMI library finds VNPUHostFiles (the
	// agent's own root, not the host root it reads the node under): "/",
	// a fixture root in tests.
	hostFiles string
}

// library returns the DCMI library the tool uses, nil for npu-smi.
func (a *PartitionTool) library() *dcmiLib { return a.dcmi }

// address returns the NPU ID and Chip ID of a chip, from `npu-smi info -m`
// (read once) by the chip's logic id.
func (a *PartitionTool) address(ctx context.Context, c inventory.Chip) (int, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mapping == nil {
		rows, err := discovery.Query(ctx, a.Runner, "finding the NPU and chip ids of the Ascend chips", ParseMapping, NpuSmi, "info", "-m")
		if err != nil {
			return 0, 0, err
		}
		a.mapping = map[int]ChipMapping{}
		for _, r := range rows {
			a.mapping[r.LogicID] = r
		}
	}
	logic := c.Index
	if v, ok := c.Extra[ExtraLogicID]; ok && v.Int != nil {
		logic = int(*v.Int)
	}
	m, ok := a.mapping[logic]
	if !ok {
		return 0, 0, fmt.Errorf("npu-smi info -m lists no chip with logic id %d (chip %d)", logic, c.Index)
	}
	return m.NPU, m.Chip, nil
}

// List implements vendors.PartitionTool.
func (a *PartitionTool) List(ctx context.Context, c inventory.Chip) ([]vendors.Instance, error) {
	if lib := a.library(); lib != nil {
		return a.listDCMI(lib, c)
	}
	npu, chip, err := a.address(ctx, c)
	if err != nil {
		return nil, err
	}
	rows, err := discovery.Query(ctx, a.Runner, fmt.Sprintf("listing the vNPUs of chip %d", c.Index), ParseVNPUInfo,
		NpuSmi, "info", "-t", "info-vnpu", "-i", strconv.Itoa(npu), "-c", strconv.Itoa(chip))
	if err != nil {
		return nil, err
	}
	out := make([]vendors.Instance, 0, len(rows))
	for _, r := range rows {
		out = append(out, vnpuInstance(c, r.ID, r.Template))
	}
	return out, nil
}

func vnpuInstance(c inventory.Chip, id int, template string) vendors.Instance {
	return vendors.Instance{Type: PartitionType, Chip: c.Index, Template: template, ID: id, DeviceNode: fmt.Sprintf("/dev/vdavinci%d", id)}
}

// VNPUIDRange is the first vNPU id of a chip and how many there are.
func VNPUIDRange(c inventory.Chip) (first, size int) {
	m, _ := vendors.PartitionModelOf(Ascend{}, c)
	size = m.MaxInstances
	if size == 0 {
		size = 16
	}
	return c.Index*16 + 100, size
}

// Create implements vendors.PartitionTool.
func (a *PartitionTool) Create(ctx context.Context, c inventory.Chip, t vendors.Template) (vendors.Instance, error) {
	if t.Type != PartitionType {
		return vendors.Instance{}, fmt.Errorf("creating a vNPU on chip %d: template %s is a %s template", c.Index, t.Name, t.Type)
	}
	existing, err := a.List(ctx, c)
	if err != nil {
		return vendors.Instance{}, err
	}
	used := map[int]bool{}
	for _, e := range existing {
		used[e.ID] = true
	}
	first, size := VNPUIDRange(c)
	id := -1
	for v := first; v < first+size; v++ {
		if !used[v] {
			id = v
			break
		}
	}
	if id < 0 {
		return vendors.Instance{}, fmt.Errorf("creating a %s vNPU on chip %d: all %d vNPU ids from %d are in use", t.Name, c.Index, size, first)
	}
	if lib := a.library(); lib != nil {
		return a.createDCMI(ctx, lib, c, t, id)
	}
	npu, chip, err := a.address(ctx, c)
	if err != nil {
		return vendors.Instance{}, err
	}
	args := []string{"set", "-t", "create-vnpu", "-i", strconv.Itoa(npu), "-c", strconv.Itoa(chip), "-f", t.Name, "-v", strconv.Itoa(id)}
	if _, err := discovery.Query(ctx, a.Runner, fmt.Sprintf("creating a %s vNPU on chip %d", t.Name, c.Index), parseSetResult, NpuSmi, args...); err != nil {
		return vendors.Instance{}, err
	}
	// create-vnpu does not say what it made: confirm the id and template.
	return vendors.ConfirmCreated(ctx, a, c, id, t.Name, vendors.Created{Tool: NpuSmi, Kind: "vNPU", Template: "template"})
}

// Destroy implements vendors.PartitionTool.
func (a *PartitionTool) Destroy(ctx context.Context, c inventory.Chip, inst vendors.Instance) error {
	existing, err := a.List(ctx, c)
	if err != nil {
		return err
	}
	if _, ok := vendors.FindInstance(existing, inst.ID); !ok {
		return nil
	}
	if lib := a.library(); lib != nil {
		card, dev, err := a.dcmiAddress(lib, c)
		if err != nil {
			return err
		}
		if err := lib.destroyVNPU(card, dev, inst.ID); err != nil {
			return fmt.Errorf("destroying vNPU %d on chip %d through DCMI%s: %w", inst.ID, c.Index, a.vnpuHint(err), err)
		}
		return nil
	}
	npu, chip, err := a.address(ctx, c)
	if err != nil {
		return err
	}
	_, err = discovery.Query(ctx, a.Runner, fmt.Sprintf("destroying vNPU %d on chip %d", inst.ID, c.Index), parseSetResult,
		NpuSmi, "set", "-t", "destroy-vnpu", "-i", strconv.Itoa(npu), "-c", strconv.Itoa(chip), "-v", strconv.Itoa(inst.ID))
	return err
}

// Edits implements vendors.Partitions. A vNPU container gets only
// the virtual device, host /dev/vdavinci<id> at /dev/davinci<id> in the
// container, and ASCEND_VISIBLE_DEVICES=<id> with
// ASCEND_RUNTIME_OPTIONS=VIRTUAL, as Huawei's device plugin gives it
// (docs/hardware.md#vnpu-commands). The parent's /dev/davinciN is not given.
func (VNPUs) Edits(_ inventory.Chip, inst vendors.Instance) (vendors.PartitionEdits, error) {
	if inst.Type != PartitionType {
		return vendors.PartitionEdits{}, fmt.Errorf("%s: unknown partition type", inst)
	}
	return vendors.PartitionEdits{
		DeviceNodes: []vendors.DeviceNode{{Path: devPath(inst.ID), HostPath: inst.DeviceNode}},
		VisibleID:   inst.ID,
		Virtual:     true,
	}, nil
}

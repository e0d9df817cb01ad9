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

// vNPU docker mode. Huawei's vNPUs are created for containers only when
// the node is in vNPU docker (container) mode (`npu-smi set -t vnpu-mode -d
// 0`), which `npu-smi info -t vnpu-mode` prints as "vnpu-mode : docker"
// (docs/hardware.md#vnpu-commands). Outside docker mode create-vnpu prints
// "The vnpu is not in docker mode…" and exits 0, so the mode is read before
// any chip is offered as vNPUs (inventory.Chip.PartitionModeOff), and
// create-vnpu's answer is checked for that sentence too (parseSetResult).
//
// The agent runs in a container, where the mode query is refused:
// dcmi_get_vdevice_mode (which `npu-smi info -t vnpu-mode` calls) answers
// -8002 except as root on the host, or for 910B in a privileged container
// (CANN driver source, dcmi/dcmi_interface/src/dcmi_virtual_intf.c:1055-1085,
// npucli/src/npu_info.c:660-677). So the admin declares the mode per node
// group (vendors.BackendConfig.PartitionMode, as Huawei's device plugin
// takes presetVirtualDevice) and the query is a cross-check where it
// answers:
//
//	declared  query answers docker  answers vm        cannot answer
//	auto      vNPUs                 none (says why)   none: mode unknown, how to declare it
//	on        vNPUs                 none, logged      vNPUs, logged once
//	off       none (not asked)
//
// A declared "on" that the node contradicts offers nothing: DCMI creates
// the vNPU whatever the mode (dcmi_virtual_intf.c:964-1010), and a vNPU
// made for a VM is no use to a container.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// PartitionModeValue is the chart value that declares the vNPU mode of a
// node group (vendors.BackendConfig.PartitionMode); messages name it.
const PartitionModeValue = "nodeGroups[].partitionMode"

// sourceDeclared is the reader of a declared partition mode.
const sourceDeclared = "declared partition mode (" + PartitionModeValue + ")"

// modeReading is the node's answer to the vNPU mode query.
type modeReading struct {
	// mode is the answer; "" when the query could not be answered.
	mode string
	// source names the query.
	source string
	// err says why there is no answer.
	err error
}

// readVNPUMode asks the node its vNPU mode: DCMI where the library has
// the call, else npu-smi. Only a cancelled poll is an error.
func (b *Backend) readVNPUMode(ctx context.Context) (modeReading, error) {
	if b.lib != nil && b.lib.getVDevMode != nil {
		r := modeReading{source: b.libName() + " dcmi_get_vdevice_mode"}
		r.mode, r.err = b.lib.vdeviceMode()
		var d *DCMIError
		if errors.As(r.err, &d) && d.Code == dcmiErrNotPermitted {
			r.err = fmt.Errorf("%w: DCMI answers it only as root on the host, or for 910B in a privileged container", r.err)
		}
		return r, nil
	}
	r := modeReading{source: b.command("info", "-t", "vnpu-mode")}
	r.mode, r.err = discovery.Query(ctx, b.runner, "reading the vNPU mode", ParseVNPUMode, b.npuSmi, "info", "-t", "vnpu-mode")
	if r.err != nil && ctx.Err() != nil {
		return modeReading{}, r.err
	}
	return r, nil
}

// setPartitionMode decides once per poll whether the chips that could be
// offered as vNPUs are (the table above), and records on each such chip
// why not ("" when offered) and what decided it.
func (b *Backend) setPartitionMode(ctx context.Context, chips []inventory.Chip) error {
	var partitionable []*inventory.Chip
	for i := range chips {
		if _, ok := vnpuModels[chips[i].Model]; ok {
			partitionable = append(partitionable, &chips[i])
		}
	}
	if len(partitionable) == 0 {
		return nil
	}
	off, src, err := b.partitionModeOff(ctx)
	if err != nil {
		return err
	}
	for _, c := range partitionable {
		c.PartitionModeOff = off
		c.Sources[SourcePartitionMode] = src
	}
	return nil
}

// partitionModeOff returns why the node offers no vNPUs ("" when it does)
// and what decided it.
func (b *Backend) partitionModeOff(ctx context.Context) (string, string, error) {
	declared := b.partitionMode
	if err := vendors.CheckPartitionMode(declared); err != nil {
		return "", "", err
	}
	switch declared {
	case "":
		declared = vendors.PartitionModeAuto
	case vendors.PartitionModeOff:
		return "vNPUs are switched off for this node (" + PartitionModeValue + ": off)", sourceDeclared, nil
	}
	r, err := b.readVNPUMode(ctx)
	if err != nil {
		return "", "", err
	}
	switch {
	case r.err == nil:
		off := vnpuModeOff(r.mode, r.source)
		if declared == vendors.PartitionModeOn && off != "" {
			b.logOnce(ctx, "vnpu-mode-contradicts:"+r.mode, "The node's vNPU mode contradicts the declared partition mode, offering no vNPUs",
				"declared", declared, "mode", r.mode, "source", r.source)
			off += "; " + PartitionModeValue + " declares on"
		}
		return off, r.source, nil
	case declared == vendors.PartitionModeOn:
		b.logOnce(ctx, "vnpu-mode-unread", "Cannot read the vNPU mode here, offering vNPUs as the declared partition mode says",
			"declared", declared, "source", r.source, "err", r.err)
		return "", sourceDeclared, nil
	default:
		b.logOnce(ctx, "vnpu-mode-unread", "Cannot read the vNPU mode here and no partition mode is declared, offering no vNPUs",
			"source", r.source, "err", r.err, "declareWith", PartitionModeValue)
		return fmt.Sprintf("the vNPU mode is unknown (%s: %v); if the node is in vNPU docker mode (`npu-smi info -t vnpu-mode` on the host says docker), declare it with %s: on",
			r.source, r.err, PartitionModeValue), r.source, nil
	}
}

// VNPUModeDocker is the vnpu-mode in which vNPUs go to containers.
const VNPUModeDocker = "docker"

// notDockerMode starts what create-vnpu prints outside docker mode.
const notDockerMode = "the vnpu is not in docker mode"

// modeUnread is what create-vnpu prints, exiting 0, when its mode query
// fails (npucli/src/npu_set_print.c:212-221, called from
// npu_chip_set.c:1474-1478): in a container, where the query is refused.
const modeUnread = "failed to get vnpu mode"

// ParseVNPUMode parses `npu-smi info -t vnpu-mode`: the value of its
// "vnpu-mode" line, lower case; "0" and "container" read as docker, "1" as
// vm (the numeric and spelled-out forms of `npu-smi set -t vnpu-mode -d`).
func ParseVNPUMode(source string, data []byte) (string, error) {
	for l := range keyValueLines(data, ":") {
		if !l.HasSep || !strings.EqualFold(strings.ReplaceAll(l.Key, " ", ""), "vnpu-mode") {
			continue
		}
		switch v := strings.ToLower(l.Value); v {
		case "":
			return "", &discovery.ParseError{Source: source, Line: l.No, Text: l.Text, Msg: "the vnpu-mode is empty"}
		case "0", "container", VNPUModeDocker:
			return VNPUModeDocker, nil
		case "1":
			return "vm", nil
		default:
			return v, nil
		}
	}
	return "", &discovery.ParseError{Source: source, Msg: fmt.Sprintf("no %q line in: %s", "vnpu-mode : <mode>", strings.TrimSpace(string(data)))}
}

// vnpuModeOff says why a node in the given mode offers no vNPUs; "" in
// docker mode.
func vnpuModeOff(mode, source string) string {
	if mode == VNPUModeDocker {
		return ""
	}
	return fmt.Sprintf("the node is not in vNPU docker mode (%s says %q; `npu-smi set -t vnpu-mode -d 0` switches it on)", source, mode)
}

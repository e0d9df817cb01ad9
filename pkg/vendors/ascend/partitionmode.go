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

import (
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// VNPUModeDocker is the vnpu-mode in which vNPUs go to containers.
const VNPUModeDocker = "docker"

// notDockerMode starts what create-vnpu prints outside docker mode.
const notDockerMode = "the vnpu is not in docker mode"

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

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

// Fact names of inventory.Chip.Sources: which backend read what, for
// `accel-dra discover --sources`.
const (
	SourceChips         = "chips"
	SourceModel         = "model"
	SourceMemory        = "memory"
	SourceCores         = "cores"
	SourceLogicID       = "logicId"
	SourcePCI           = "pci"
	SourceHealth        = "health"
	SourceLinks         = "linkGroup"
	SourceDriverVersion = "driverVersion"
	SourcePartitionMode = "partitionMode"
	SourceDeviceIP      = "deviceIP"
	SourceSuperPod      = "superPod"
)

// SourceSysfs names sysfs as a reader.
const SourceSysfs = "sysfs"

// toolSources are the readers of a chip's facts when npu-smi reads them.
func (b *Backend) toolSources(cores, links string, pci, version, healthCodes bool) map[string]string {
	s := map[string]string{
		SourceChips:   b.command("info"),
		SourceModel:   b.command("info"),
		SourceMemory:  b.command("info"),
		SourceLogicID: b.command("info", "-m"),
		SourceHealth:  b.command("info"),
		SourceLinks:   links,
	}
	if links == "" {
		s[SourceLinks] = b.command("info", "-t", "topo")
	}
	if cores != "" {
		s[SourceCores] = cores
	}
	if pci {
		s[SourcePCI] = SourceSysfs
	}
	if version {
		s[SourceDriverVersion] = VersionInfoPath
	}
	if healthCodes {
		s[SourceHealth] = b.command("info") + ", " + b.command("info", "-t", "health")
	}
	return s
}

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

// Discovery through DCMI: the same chips, ids, memory, health and links
// as npu-smi prints, read from libdcmi.so (dcmi.go). What DCMI has no call
// for stays with npu-smi (the vNPU mode; the topology where the library
// lacks dcmi_get_topo_info_by_device_id) and with the files (device
// nodes, sysfs NUMA and PCIe root, the driver's version.info).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// dcmiHealth are npu-smi's words for DCMI's health codes (0 正常, 1 一般
// 告警, 2 重要告警, 3 紧急告警: the dcmi_get_device_health reference).
var dcmiHealth = []string{HealthOK, HealthWarning, HealthAlarm, HealthCritical}

// library loads libdcmi.so once, through the agent's one Library where
// it has one (Config.Opened): the configured path or the first default
// one under the root. A node without it, or with one that does not load,
// is read with npu-smi; the reason is logged once.
func (b *Backend) library(ctx context.Context) *dcmiLib {
	b.libOnce.Do(func() {
		b.lib = vendors.LoadLibrary(b.opened, func() *dcmiLib { return b.openLibrary(ctx) })
	})
	return b.lib
}

// openLibrary loads libdcmi.so as configured; nil, logged, when it
// cannot.
func (b *Backend) openLibrary(ctx context.Context) *dcmiLib {
	logger := klog.FromContext(ctx)
	if b.libraryPath == vendors.LibraryNone {
		logger.V(2).Info("DCMI switched off, reading Ascend chips with npu-smi")
		return nil
	}
	path := findDCMI(b.root, b.libraryPath)
	if path == "" {
		// V(2): the agent's default verbosity (the chart's logVerbosity)
		// shows it, `accel-dra discover` on a workstation does not.
		logger.V(2).Info("No libdcmi.so on this node, reading Ascend chips with npu-smi",
			"lookedIn", prefixAll(b.root, DefaultDCMILibraries))
		return nil
	}
	lib, err := openDCMI(path, b.callTimeout)
	if err != nil {
		logger.Info("Cannot use libdcmi.so, reading Ascend chips with npu-smi", "path", path, "err", err)
		return nil
	}
	logger.Info("Reading Ascend chips and making vNPUs through DCMI", "path", path)
	return lib
}

func prefixAll(root string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Join(root, p)
	}
	return out
}

// libName names the library in Sources: its file name.
func (b *Backend) libName() string {
	if b.lib == nil {
		return "libdcmi.so"
	}
	return filepath.Base(b.lib.path)
}

// reader says who reported a chip's health, for messages.
func (f found) reader() string {
	if f.dcmi != nil {
		return "DCMI"
	}
	return "npu-smi"
}

// readDCMI reads the chips as npu-smi's three outputs would describe
// them, so the rest of discovery is the same for both; byLogic gives each
// chip's DCMI record by logic id.
func (b *Backend) readDCMI(ctx context.Context, lib *dcmiLib) ([]ChipInfo, []ChipMapping, Topology, map[int]*dcmiChip, error) {
	chips, skipped, err := lib.chips()
	if err != nil {
		return nil, nil, Topology{}, nil, fmt.Errorf("listing Ascend chips through %s: %w", lib.path, err)
	}
	for _, s := range skipped {
		what := fmt.Sprintf("card %d device %d", s.Card, s.Device)
		if s.Device < 0 {
			what = fmt.Sprintf("card %d", s.Card)
		}
		b.logOnce(ctx, "dcmi-skipped:"+what+":"+s.Err.Error(), "Leaving out Ascend chips DCMI cannot identify, publishing the others",
			"chips", what, "err", s.Err)
	}
	sort.Slice(chips, func(i, j int) bool { return chips[i].Logic < chips[j].Logic })
	var (
		infos    []ChipInfo
		mappings []ChipMapping
		byLogic  = map[int]*dcmiChip{}
	)
	for i := range chips {
		c := &chips[i]
		if _, dup := byLogic[c.Logic]; dup {
			return nil, nil, Topology{}, nil, fmt.Errorf("listing Ascend chips through %s: logic id %d is given twice", lib.path, c.Logic)
		}
		byLogic[c.Logic] = c
		health := HealthUnknown
		if int(c.Health) < len(dcmiHealth) && c.Failed == nil {
			health = dcmiHealth[c.Health]
		}
		infos = append(infos, ChipInfo{NPU: c.Card, Chip: c.Device, PhysicalID: c.Phy, LogicID: c.Logic, Name: c.Name, NPUName: c.NPUName,
			Health: health, BusID: c.BusID, MemoryMB: c.MemoryMB, HBM: c.HBM, AICores: c.AICores})
		mappings = append(mappings, ChipMapping{NPU: c.Card, Chip: c.Device, LogicID: c.Logic, PhysicalID: c.Phy,
			Name: modelName(c.Name)})
	}
	if ringModel(chipNames(infos)) {
		return infos, mappings, Topology{}, byLogic, nil
	}
	topo, err := b.dcmiTopo(ctx, lib, chips)
	if err != nil {
		return nil, nil, Topology{}, nil, err
	}
	return infos, mappings, topo, byLogic, nil
}

// dcmiTopo asks DCMI for the link of every pair of chips; a library
// without the call, or chips that do not support it, fall back to
// `npu-smi info -t topo`.
func (b *Backend) dcmiTopo(ctx context.Context, lib *dcmiLib, chips []dcmiChip) (Topology, error) {
	t := Topology{Supported: true, ByLogicID: true, Codes: map[int]map[int]string{}, CPUAffinity: map[int]string{},
		Source: b.libName() + " " + lib.fn("dcmi_get_topo_info_by_device_id")}
	for _, a := range chips {
		t.IDs = append(t.IDs, a.Logic)
		t.Codes[a.Logic] = map[int]string{}
		for _, c := range chips {
			code, err := lib.topo(a, c)
			if err != nil {
				if errors.Is(err, vendors.ErrLibraryWedged) {
					return Topology{}, fmt.Errorf("reading the link between logic ids %d and %d through DCMI: %w", a.Logic, c.Logic, err)
				}
				if !notSupported(err) {
					// The links only group chips: a failing pair costs the
					// links, not the node.
					b.logOnce(ctx, "dcmi-topo-failed:"+err.Error(), "Cannot read a link between two Ascend chips through DCMI, treating every chip as PCIe-only",
						"logicIDs", []int{a.Logic, c.Logic}, "err", err)
					return Topology{Source: t.Source}, nil
				}
				b.logOnce(ctx, "dcmi-topo", "DCMI cannot report the chip topology here, reading it with npu-smi", "err", err)
				return b.topo(ctx)
			}
			if a.Logic == c.Logic {
				code = "X"
			}
			t.Codes[a.Logic][c.Logic] = code
		}
	}
	return t, nil
}

// dcmiHealthMessage says why DCMI calls a chip unhealthy: its health and
// its error codes (dcmi_get_device_errorcode_v2). DCMI gives no text for
// the codes; Huawei's black-box error-code list explains them.
func (b *Backend) dcmiHealthMessage(ctx context.Context, c found) (string, error) {
	message := "DCMI reports health " + c.info.Health
	codes, err := b.lib.errorCodes(c.dcmi.Card, c.dcmi.Device)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot read the error codes of an unhealthy Ascend chip, reporting its health without them",
			"npu", c.info.NPU, "chip", c.info.Chip, "health", c.info.Health, "err", err)
		return message + "; " + err.Error(), nil
	}
	h := ChipHealth{Health: c.info.Health}
	for _, code := range codes {
		h.Codes = append(h.Codes, fmt.Sprintf("0x%08X", code))
	}
	return message + h.Describe(), nil
}

// dcmiSources are the readers of a chip's facts when DCMI reads them.
func (b *Backend) dcmiSources(c found, cores string, version bool, topo string) map[string]string {
	lib := b.libName()
	memory := lib + " " + b.lib.fn("dcmi_get_device_hbm_info")
	if !c.dcmi.HBM {
		memory = lib + " dcmi_get_device_memory_info_v3"
	}
	s := map[string]string{
		SourceChips:   lib + " " + b.lib.fn("dcmi_get_card_list, dcmi_get_device_num_in_card"),
		SourceModel:   lib + " " + b.lib.chipInfoCall(),
		SourceMemory:  memory,
		SourceLogicID: lib + " " + b.lib.fn("dcmi_get_device_logic_id"),
		SourceHealth:  lib + " " + b.lib.fn("dcmi_get_device_health"),
		SourceLinks:   topo,
	}
	if !c.info.Healthy() {
		s[SourceHealth] += ", " + b.lib.fn("dcmi_get_device_errorcode_v2")
	}
	if cores != "" {
		s[SourceCores] = cores
	}
	if c.dcmi.BusID != "" {
		s[SourcePCI] = strings.Join([]string{lib + " " + b.lib.fn("dcmi_get_device_pcie_info_v2"), SourceSysfs}, ", ")
	}
	if version {
		s[SourceDriverVersion] = VersionInfoPath
	}
	return s
}

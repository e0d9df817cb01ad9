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

// Package ascend discovers Huawei Ascend NPU chips: device files under a
// root directory (/dev/davinciN and the shared /dev/davinci_manager,
// /dev/devmm_svm, /dev/hisi_hdc), chip facts from `npu-smi info`, logic ids
// from `npu-smi info -m`, HCCS topology from `npu-smi info -t topo`, the
// driver version from /usr/local/Ascend/driver/version.info and PCI facts
// (vendor id, NUMA node, PCIe root) from sysfs.
//
// Index mapping: N of /dev/davinciN is the chip's physical id, as Huawei's
// references and device plugin have it; where npu-smi prints no physical
// id, the logic id stands in (the two agree on a host that sees all its
// chips in slot order). Health: healthy when npu-smi says OK and the
// device file exists; Warning, Alarm, Critical and UNKNOWN are unhealthy,
// as HAMi's Ascend device plugin treats DCMI's health codes. For an
// unhealthy chip whose device file and PCI function are there, and only
// for it, `npu-smi info -t health` gives its error codes for the health
// message; the taint's value stays the table's health, so a taint does not
// change with every new code. docs/hardware.md ("Index and health") and
// testdata/README.md cite the sources.
package ascend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Device node names, as the Ascend device plugin and docker runtime mount
// them (Ascend/ascend-device-plugin pkg/common/constants.go HiAIManagerDevice,
// pkg/server/plugin.go getDevPath; docs/architecture.md hardware facts).
const devPrefix = "davinci"

// sharedNodes are the device files every container using Ascend chips needs,
// in the order the simulated backend lists them. /dev/dvpp_cmdlist is the
// media (DVPP) command-list device: Huawei's device plugin adds it to every
// container where the node has it (its GenerateSharedNodes tests skip it
// only when stat fails), an A3 kubelet checkpoint lists it beside
// davinci_manager, hisi_hdc and devmm_svm, and Huawei's MindX RAG guide
// has it added for DVPP preprocessing on an Atlas 800I A2.
var sharedNodes = append(simulatedSharedNodes, "/dev/dvpp_cmdlist")

// ubDirs hold the unified bus's device files of a 950 (A5) node: Huawei's
// device plugin gives a container every file in them where they exist,
// not their subdirectories (Ascend/mind-cluster@22bb3d98
// component/ascend-device-plugin pkg/server/plugin.go mountUBDevice,
// addDevicesInDir; pkg/common/constants.go UburmaDevicePath,
// UmmuDevicePath).
var ubDirs = []string{"/dev/uburma", "/dev/ummu"}

// simulatedSharedNodes are the shared nodes of a simulated node: the three
// every Ascend host has, so simulated specs and slices stay as they were.
var simulatedSharedNodes = []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}

// Chip.Extra keys, published unqualified in the driver's domain (docs/architecture.md).
const (
	// ExtraChipName is the chip name npu-smi prints, e.g. 910B3.
	ExtraChipName = "chipName"
	// ExtraLogicID is the chip's logic id (npu-smi info -m), the device
	// number the Ascend runtime uses.
	ExtraLogicID = "logicId"
)

// Config configures the backend.
type Config struct {
	// Root is the host root, "/" in production, a fixture tree in tests.
	Root string
	// Runner runs npu-smi; nil runs the real tool.
	Runner discovery.CommandRunner
	// NpuSmi is the command name, default "npu-smi".
	NpuSmi string
	// Library is the path of libdcmi.so: "" looks in DefaultDCMILibraries
	// under Root, vendors.LibraryNone uses npu-smi only.
	Library string
	// LibraryCallTimeout bounds each DCMI call (zero: the default,
	// vendors.DefaultLibraryCallTimeout).
	LibraryCallTimeout time.Duration
	// PartitionMode is the vNPU mode the admin declares for the node
	// (vendors.PartitionModeAuto, On, Off; "" is auto): partitionmode.go.
	PartitionMode string
	// Opened, when set, is libdcmi.so as the agent's main holds it
	// (vendors.BackendConfig.Opened): loaded through it.
	Opened *vendors.Library
}

// Backend discovers Ascend chips. It implements discovery.Backend.
type Backend struct {
	root   string
	runner discovery.CommandRunner
	npuSmi string

	mu     sync.Mutex
	logged map[string]bool
	// phyIDs caches the chip behind each device file (nil: the tool
	// cannot tell) for the device files in phyIDsFor, so a poll of an
	// unchanged node asks npu-smi no more than before.
	phyIDs    map[[2]int]int
	phyIDsFor string

	libraryPath   string
	callTimeout   time.Duration
	partitionMode string
	libOnce       sync.Once
	lib           *dcmiLib
	opened        *vendors.Library
}

var _ discovery.Backend = (*Backend)(nil)

// New returns a backend for cfg.
func New(cfg Config) *Backend {
	b := &Backend{root: cfg.Root, runner: cfg.Runner, npuSmi: cfg.NpuSmi, libraryPath: cfg.Library, callTimeout: cfg.LibraryCallTimeout,
		partitionMode: cfg.PartitionMode, opened: cfg.Opened}
	if b.root == "" {
		b.root = "/"
	}
	if b.runner == nil {
		b.runner = discovery.ExecRunner{}
	}
	if b.npuSmi == "" {
		b.npuSmi = "npu-smi"
	}
	return b
}

// Name implements discovery.Backend.
func (b *Backend) Name() string { return "ascend" }

// found is one chip as npu-smi describes it across its three outputs, or
// as DCMI describes it.
type found struct {
	info    ChipInfo
	mapping ChipMapping
	// index is the physical id, the N of /dev/davinciN.
	index int
	// dcmi is the chip as DCMI read it; nil when npu-smi did.
	dcmi *dcmiChip
}

// Discover implements discovery.Backend. A node without any /dev/davinciN
// has no Ascend chips: it returns an empty inventory without running
// npu-smi.
func (b *Backend) Discover(ctx context.Context) (inventory.Inventory, error) {
	logger := klog.FromContext(ctx)

	devs, err := b.deviceIndices()
	if err != nil {
		return inventory.Inventory{}, err
	}
	if len(devs) == 0 {
		logger.V(4).Info("No Ascend device files, skipping npu-smi", "dir", b.hostPath("/dev"))
		return inventory.Inventory{}, nil
	}

	var (
		infos    []ChipInfo
		mappings []ChipMapping
		topo     Topology
		byLogic  map[int]*dcmiChip
	)
	if lib := b.library(ctx); lib != nil {
		infos, mappings, topo, byLogic, err = b.readDCMI(ctx, lib)
	} else {
		infos, mappings, topo, err = b.readTool(ctx, devs)
	}
	if err != nil {
		return inventory.Inventory{}, err
	}
	version, err := b.driverVersion(ctx)
	if err != nil {
		return inventory.Inventory{}, err
	}

	chips, err := b.combine(ctx, infos, mappings)
	if err != nil {
		return inventory.Inventory{}, err
	}
	topo = b.matchTopo(ctx, chips, topo)
	for i := range chips {
		chips[i].dcmi = byLogic[chips[i].mapping.LogicID]
	}
	listed := map[int]bool{}
	for _, c := range chips {
		listed[c.index] = true
	}
	for _, n := range devs {
		if !listed[n] {
			logger.Info("Skipping Ascend device file that npu-smi does not list", "device", devPath(n))
		}
	}

	topo.UBFabric = len(infos) > 0 && is950(infos[0].Name)
	groups := linkGroups(chips, topo)
	if ringModel(chipNames(infos)) {
		groups, topo.Source = ringGroups(chips), ringSource
	}
	busUsers := map[string]int{}
	for _, c := range chips {
		busUsers[c.info.BusID]++
	}
	inv := inventory.Inventory{}
	for _, c := range chips {
		chip, err := b.chip(ctx, c, groups, version, topo.Source, busUsers[c.info.BusID] > 1)
		if err != nil {
			return inventory.Inventory{}, err
		}
		inv.Chips = append(inv.Chips, chip)
	}
	if err := b.setPartitionMode(ctx, inv.Chips); err != nil {
		return inventory.Inventory{}, err
	}
	if err := b.setSuperPod(ctx, chips, inv.Chips); err != nil {
		return inventory.Inventory{}, err
	}
	b.setHCCLTopology(ctx, chips, inv.Chips)
	if shared := b.sharedNodes(ctx); len(shared) > 0 {
		inv.SharedDeviceNodes = map[inventory.Vendor][]string{Vendor: shared}
	}
	return inv, nil
}

// sharedNodes are the node's sharedNodes and the files in ubDirs, where
// the node has them.
func (b *Backend) sharedNodes(ctx context.Context) []string {
	var out []string
	for _, n := range sharedNodes {
		if b.exists(n) {
			out = append(out, n)
		}
	}
	for _, dir := range ubDirs {
		entries, err := os.ReadDir(b.hostPath(dir))
		if err != nil {
			if !os.IsNotExist(err) {
				b.logOnce(ctx, "ub:"+dir, "Cannot list the unified bus's device files, giving containers none of them", "dir", dir, "err", err)
			}
			continue
		}
		for _, e := range entries {
			if !e.IsDir() {
				out = append(out, path.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// combine joins the chip table and the mapping per chip, sorted by index,
// and checks that they describe the same chips. A chip without a usable
// mapping row (none, or one that did not parse) has no logic id, so no
// runtime device number: it is left out with a log line naming the
// command and row, and the node's other chips are read.
func (b *Backend) combine(ctx context.Context, infos []ChipInfo, mappings []ChipMapping) ([]found, error) {
	logger := klog.FromContext(ctx)
	infoSrc, mapSrc := b.command("info"), b.command("info", "-m")
	byChip := map[[2]int]ChipMapping{}
	for _, m := range mappings {
		byChip[[2]int{m.NPU, m.Chip}] = m
	}
	listed := map[[2]int]bool{}
	for _, c := range infos {
		listed[[2]int{c.NPU, c.Chip}] = true
	}
	for _, m := range mappings {
		if !listed[[2]int{m.NPU, m.Chip}] {
			return nil, &discovery.ParseError{Source: mapSrc, Line: m.Line, Text: m.Text,
				Msg: fmt.Sprintf("NPU %d chip %d is not in the table of %s", m.NPU, m.Chip, infoSrc)}
		}
	}

	var out []found
	byIndex := map[int]found{}
	for _, c := range infos {
		m, ok := byChip[[2]int{c.NPU, c.Chip}]
		if !ok {
			logger.Info("Leaving out an Ascend chip the mapping does not list: no logic id",
				"npu", c.NPU, "chip", c.Chip, "command", mapSrc, "listedBy", infoSrc, "line", c.Line)
			continue
		}
		if m.RowError != "" {
			logger.Info("Leaving out an Ascend chip whose mapping row does not parse: no logic id",
				"npu", c.NPU, "chip", c.Chip, "command", mapSrc, "err", m.RowError)
			continue
		}
		f := found{info: c, mapping: m, index: m.LogicID}
		if c.LogicID >= 0 && c.LogicID != m.LogicID {
			return nil, fmt.Errorf("combining %s and %s: NPU %d chip %d has logic id %d in one and %d in the other",
				infoSrc, mapSrc, c.NPU, c.Chip, c.LogicID, m.LogicID)
		}
		switch {
		case c.PhysicalID >= 0 && m.PhysicalID >= 0 && c.PhysicalID != m.PhysicalID:
			return nil, fmt.Errorf("combining %s and %s: NPU %d chip %d has physical id %d in one and %d in the other",
				infoSrc, mapSrc, c.NPU, c.Chip, c.PhysicalID, m.PhysicalID)
		case c.PhysicalID >= 0:
			f.index = c.PhysicalID
		case m.PhysicalID >= 0:
			f.index = m.PhysicalID
		}
		if other, dup := byIndex[f.index]; dup {
			return nil, fmt.Errorf("combining %s and %s: NPU %d chip %d and NPU %d chip %d both map to %s",
				infoSrc, mapSrc, other.info.NPU, other.info.Chip, c.NPU, c.Chip, devPath(f.index))
		}
		byIndex[f.index] = f
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out, nil
}

// matchTopo checks that the matrix and the chip list name the same cards
// (or chips). The matrix only groups chips into HCCS link groups, so a
// mismatch (a card without a row, a row without a chip) costs the links,
// not the node: every chip is then published PCIe-only, with a log line.
func (b *Backend) matchTopo(ctx context.Context, chips []found, topo Topology) Topology {
	if !topo.Supported {
		return topo
	}
	var mismatch []string
	named := map[int]bool{}
	for _, c := range chips {
		id := c.topoID(topo)
		named[id] = true
		if topo.Codes[id] == nil {
			mismatch = append(mismatch, fmt.Sprintf("NPU %d chip %d has no row %s", c.info.NPU, c.info.Chip, topo.label(id)))
		}
	}
	for _, id := range topo.IDs {
		if !named[id] {
			mismatch = append(mismatch, fmt.Sprintf("row %s names no listed chip", topo.label(id)))
		}
	}
	if len(mismatch) == 0 {
		return topo
	}
	b.logOnce(ctx, "topo-mismatch:"+strings.Join(mismatch, ";"),
		"The topology matrix and the chip list disagree, treating every chip as PCIe-only",
		"matrix", topo.Source, "mismatch", mismatch)
	return Topology{Source: topo.Source}
}

// topoID is the id the topology matrix names this chip by: its card id
// (the NPU ID), its physical id on a 910_93, its logic id in a matrix read
// through DCMI.
func (f found) topoID(t Topology) int {
	switch {
	case t.ByPhysicalID:
		return f.index
	case t.ByLogicID:
		return f.mapping.LogicID
	}
	return f.info.NPU
}

// long: one chip from every source (npu-smi, sysfs, PCI, library) in the
// order they override each other; vendor-internal, left whole while that
// code is reworked (issue 42).
func (b *Backend) chip(ctx context.Context, c found, groups map[int]string, version, topoSource string, sharedBus bool) (inventory.Chip, error) {
	logger := klog.FromContext(ctx)
	info := c.info
	dev := pci.Device{}
	var faults []fault
	if info.BusID != "" {
		d, err := pci.Read(b.root, info.BusID)
		switch {
		case pci.IsMissing(b.root, info.BusID):
			// A chip that fell off the bus is a health fault of that chip,
			// not a reason to serve none of the node's chips.
			logger.Info("The npu-smi tool lists an Ascend chip whose PCI function is gone from sysfs, reporting it unhealthy",
				"npu", info.NPU, "chip", info.Chip, "pciBusID", info.BusID)
			faults = append(faults, fault{inventory.ReasonPCIDeviceMissing, fmt.Sprintf("PCI function %s is gone from sysfs", info.BusID)})
			d = pci.Device{BusID: info.BusID}
		case err != nil:
			return inventory.Chip{}, fmt.Errorf("reading PCI facts of NPU %d chip %d (%s) from sysfs: %w", info.NPU, info.Chip, info.BusID, err)
		case d.VendorID != PCIVendorID:
			return inventory.Chip{}, fmt.Errorf("NPU %d chip %d: PCI function %s has vendor id %#04x, not Huawei's %#04x: npu-smi and sysfs disagree",
				info.NPU, info.Chip, info.BusID, d.VendorID, PCIVendorID)
		}
		dev = d
	} else {
		logger.V(2).Info("npu-smi prints no PCI address for this chip, publishing no PCI facts", "npu", info.NPU, "chip", info.Chip)
	}

	node := devPath(c.index)
	if !b.exists(node) {
		logger.Info("The npu-smi tool lists an Ascend chip whose device file is missing, reporting it unhealthy",
			"npu", info.NPU, "chip", info.Chip, "device", node)
		faults = append(faults, fault{inventory.ReasonDeviceFileMissing, "device file " + node + " is missing"})
	}
	if info.RowError != "" {
		logger.Info("The npu-smi table row of this Ascend chip does not parse, reporting it unhealthy", "npu", info.NPU, "chip", info.Chip,
			"device", devPath(c.index), "err", info.RowError)
		faults = append(faults, fault{inventory.ReasonLibraryError, info.RowError})
	}
	if info.NoNPURow {
		// Its health is none npu-smi can name: reported as DCMI's reader
		// reports the same chip, so the two readers agree.
		logger.Info("The npu-smi tool prints no NPU row for this Ascend chip, reporting it unhealthy", "npu", info.NPU, "chip", info.Chip,
			"device", devPath(c.index), "line", info.Line)
		faults = append(faults, fault{inventory.ReasonToolHealth(HealthUnknown),
			fmt.Sprintf("npu-smi reports health %s: it prints the chip without its NPU row (line %d), as it does for a chip DCMI says does not exist (health 0xFFFFFFFF)",
				HealthUnknown, info.Line)})
	} else if c.dcmi != nil && c.dcmi.Failed != nil {
		// Its health is unread: the failed call is why it is unhealthy.
		logger.Info("A DCMI call failed for this Ascend chip alone, reporting it unhealthy", "npu", info.NPU, "chip", info.Chip,
			"device", devPath(c.index), "err", c.dcmi.Failed)
		faults = append(faults, fault{inventory.ReasonLibraryError, "DCMI: " + c.dcmi.Failed.Error()})
	} else if info.Health != HealthOK {
		message := c.reader() + " reports health " + info.Health
		if len(faults) == 0 {
			// Only the first fault's message is kept (MarkUnhealthy): ask
			// for the codes only when they are what the message says.
			var err error
			if message, err = b.healthMessage(ctx, c); err != nil {
				return inventory.Chip{}, err
			}
		}
		msg := "The npu-smi tool reports an unhealthy Ascend chip"
		if c.dcmi != nil {
			msg = "DCMI reports an unhealthy Ascend chip"
		}
		logger.Info(msg, "npu", info.NPU, "chip", info.Chip, "health", info.Health, "message", message)
		faults = append(faults, fault{inventory.ReasonToolHealth(info.Health), message})
	}

	cores, coresSource, err := b.aiCores(ctx, info)
	if err != nil {
		return inventory.Chip{}, err
	}
	npuName, nameSource, err := b.npuName(ctx, info, c.dcmi != nil)
	if err != nil {
		return inventory.Chip{}, err
	}
	if coresSource == "" {
		logger.Info("No AI core count known for this Ascend chip, publishing none", "chipName", info.Name, "device", node)
	}

	uuid := "ascend-" + dev.BusID
	switch {
	case dev.BusID == "":
		uuid = fmt.Sprintf("ascend-npu%d-chip%d", info.NPU, info.Chip)
	case sharedBus:
		// Both chips of some dual-chip cards show the card's address.
		uuid = fmt.Sprintf("ascend-%s-chip%d", dev.BusID, info.Chip)
	}

	chip := inventory.Chip{
		Vendor:        Vendor,
		Model:         chipModel(info.Name, npuName),
		Index:         c.index,
		UUID:          uuid,
		MemoryBytes:   info.MemoryMB << 20,
		Cores:         cores,
		LinkType:      inventory.LinkPCIe,
		LinkGroup:     "pcie-" + strconv.Itoa(c.index),
		NUMANode:      dev.NUMANode,
		PCIBusID:      dev.BusID,
		PCIeRoot:      dev.PCIeRoot,
		DriverVersion: version,
		Healthy:       true,
		DeviceNodes:   []string{node},
		Extra: map[string]inventory.Value{
			ExtraChipName: inventory.StringValue(info.Name),
			ExtraLogicID:  inventory.IntValue(int64(c.mapping.LogicID)),
		},
	}
	if info.Name == die91093Name {
		chip.Extra[AttrModule] = inventory.StringValue(moduleOf(info.NPU))
	}
	for _, f := range faults {
		chip.MarkUnhealthy(f.reason, f.message)
	}
	if g, ok := groups[c.index]; ok {
		chip.LinkType, chip.LinkGroup = inventory.LinkHCCS, g
	}
	if c.dcmi != nil {
		chip.Sources = b.dcmiSources(c, coresSource, version != "", topoSource)
		if ip, err := b.lib.deviceIP(*c.dcmi); err != nil {
			logger.Info("Cannot read the RoCE address of an Ascend chip, publishing none", "device", node, "err", err)
		} else if ip != "" {
			chip.DeviceIP = ip
			chip.Sources[SourceDeviceIP] = b.libName() + " dcmi_get_device_ip"
		}
	} else {
		chip.Sources = b.toolSources(coresSource, topoSource, dev.BusID != "", version != "", len(faults) > 0 && info.Health != HealthOK && !info.NoNPURow)
		if info.NoNPURow {
			chip.Sources[SourceModel] = b.command("info", "-m") // the table prints no name for it
		}
		if nameSource != "" {
			chip.Sources[SourceModel] += ", " + nameSource
		}
	}
	return chip, nil
}

// fault is one reason a chip is unhealthy (inventory.Chip.MarkUnhealthy).
type fault struct{ reason, message string }

// linkGroups returns "hccs-K" for the index of every chip in an HCCS
// connected component of two or more chips, K counting the components in
// the order of their lowest chip index.
func linkGroups(chips []found, topo Topology) map[int]string {
	byIndex := make(map[int]found, len(chips))
	indices := make([]int, 0, len(chips))
	for _, c := range chips {
		byIndex[c.index] = c
		indices = append(indices, c.index)
	}
	return discovery.LinkGroups(indices, func(a, b int) bool {
		return topo.HCCS(byIndex[a].topoID(topo), byIndex[b].topoID(topo))
	}, "hccs")
}

// healthMessage says why npu-smi calls a chip unhealthy: its health and the
// error codes `npu-smi info -t health` lists for it. Only chips the table
// calls unhealthy are asked, so a healthy node costs no more than the three
// queries every poll makes. A chip whose codes cannot be read stays
// unhealthy with the table's health and the reason they could not be read;
// only a cancelled or expired poll fails.
func (b *Backend) healthMessage(ctx context.Context, c found) (string, error) {
	info := c.info
	if c.dcmi != nil {
		return b.dcmiHealthMessage(ctx, c)
	}
	message := "npu-smi reports health " + info.Health
	h, err := discovery.Query(ctx, b.runner, fmt.Sprintf("reading the error codes of NPU %d chip %d", info.NPU, info.Chip),
		ParseHealth, b.npuSmi, "info", "-t", "health", "-i", strconv.Itoa(info.NPU), "-c", strconv.Itoa(info.Chip))
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		klog.FromContext(ctx).Info("Cannot read the error codes of an unhealthy Ascend chip, reporting its health without them",
			"npu", info.NPU, "chip", info.Chip, "health", info.Health, "err", err)
		return message + "; " + err.Error(), nil
	}
	if h.Health != info.Health {
		// The chip changed between the two queries; say both.
		message += fmt.Sprintf(" (%s when its error codes were read)", h.Health)
	}
	return message + h.Describe(), nil
}

// readTool reads the chips from npu-smi's three queries.
func (b *Backend) readTool(ctx context.Context, devs []int) ([]ChipInfo, []ChipMapping, Topology, error) {
	infos, err := b.info(ctx)
	if err != nil {
		return nil, nil, Topology{}, err
	}
	mappings, err := b.mapping(ctx)
	if err != nil {
		return nil, nil, Topology{}, err
	}
	infos = b.adoptChipRows(ctx, infos, mappings)
	if err := b.physicalIDs(ctx, devs, infos, mappings); err != nil {
		return nil, nil, Topology{}, err
	}
	if ringModel(chipNames(infos)) {
		return infos, mappings, Topology{}, nil
	}
	topo, err := b.topo(ctx)
	if err != nil {
		return nil, nil, Topology{}, err
	}
	return infos, mappings, topo, nil
}

// adoptChipRows gives each chip row that npu-smi printed without its NPU
// row (ChipInfo.NoNPURow: a chip whose health DCMI says does not exist)
// the NPU id and name that `npu-smi info -m` lists for it, so the chip is
// published unhealthy, as the DCMI reader publishes it, and the others as
// they are. A mapping row the table has no chip for is matched to such a
// row by chip id and whatever ids the row still says; where more than one
// row fits, the chip keeps no bus id or memory. A row no mapping row fits
// is left out with a log line.
func (b *Backend) adoptChipRows(ctx context.Context, infos []ChipInfo, mappings []ChipMapping) []ChipInfo {
	var orphans, out []ChipInfo
	listed := map[[2]int]bool{}
	for _, c := range infos {
		if c.NoNPURow {
			orphans = append(orphans, c)
			continue
		}
		listed[[2]int{c.NPU, c.Chip}] = true
		out = append(out, c)
	}
	if len(orphans) == 0 {
		return infos
	}
	logger := klog.FromContext(ctx)
	used := make([]bool, len(orphans))
	for _, m := range mappings {
		if listed[[2]int{m.NPU, m.Chip}] || m.RowError != "" {
			continue
		}
		var fits []int
		for i, o := range orphans {
			if o.Chip == m.Chip && (o.NPU < 0 || o.NPU == m.NPU) && (o.LogicID < 0 || o.LogicID == m.LogicID) &&
				(o.PhysicalID < 0 || m.PhysicalID < 0 || o.PhysicalID == m.PhysicalID) {
				fits = append(fits, i)
			}
		}
		if len(fits) == 0 {
			continue // combine says the table lacks it
		}
		c := ChipInfo{NPU: m.NPU, Chip: m.Chip, PhysicalID: -1, LogicID: -1, Health: HealthUnknown, NoNPURow: true,
			Name: strings.TrimSpace(strings.TrimPrefix(m.Name, "Ascend ")), Line: orphans[fits[0]].Line}
		if len(fits) == 1 {
			o := orphans[fits[0]]
			c.PhysicalID, c.LogicID, c.BusID, c.MemoryMB, c.HBM = o.PhysicalID, o.LogicID, o.BusID, o.MemoryMB, o.HBM
		} else {
			logger.Info("More than one Ascend chip row without its NPU row fits this chip, publishing it without bus id or memory",
				"npu", m.NPU, "chip", m.Chip, "command", b.command("info"))
		}
		for _, i := range fits {
			used[i] = true
		}
		out = append(out, c)
	}
	for i, o := range orphans {
		if !used[i] {
			logger.Info("Leaving out an Ascend chip row without its NPU row that no chip of the mapping fits",
				"chip", o.Chip, "line", o.Line, "command", b.command("info"), "mapping", b.command("info", "-m"))
		}
	}
	return out
}

func (b *Backend) info(ctx context.Context) ([]ChipInfo, error) {
	return discovery.Query(ctx, b.runner, "listing Ascend chips", ParseInfo, b.npuSmi, "info")
}

func (b *Backend) mapping(ctx context.Context) ([]ChipMapping, error) {
	return discovery.Query(ctx, b.runner, "reading Ascend chip logic ids", ParseMapping, b.npuSmi, "info", "-m")
}

// topo reads the topology matrix. The matrix only groups chips into HCCS
// link groups, so a matrix npu-smi refuses to print (exiting non-zero) or
// that does not parse costs the links, not the node: every chip is then
// PCIe-only, with a log line. A hung tool (--tool-timeout) or a cancelled
// poll fails the poll instead, so the last known links are kept.
func (b *Backend) topo(ctx context.Context) (Topology, error) {
	t, err := discovery.Query(ctx, b.runner, "reading HCCS topology", ParseTopo, b.npuSmi, "info", "-t", "topo")
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, discovery.ErrToolTimeout) {
			return Topology{}, err
		}
		b.logOnce(ctx, "topo-unread:"+err.Error(), "Cannot read the chip topology, treating every chip as PCIe-only", "err", err)
		return Topology{Source: b.command("info", "-t", "topo")}, nil
	}
	if !t.Supported {
		klog.FromContext(ctx).Info("npu-smi cannot report the topology of these chips, treating every chip as PCIe-only")
	}
	for _, skipped := range t.Skipped {
		b.logOnce(ctx, skipped, "Skipping what the topology matrix has beyond the NPUs", "skipped", skipped)
	}
	t.Source = b.command("info", "-t", "topo")
	return t, nil
}

// driverVersion reads the driver's version.info. A missing file (a driver
// installed elsewhere, or not mounted into the plugin's container) leaves
// the version unknown rather than failing discovery.
func (b *Backend) driverVersion(ctx context.Context) (string, error) {
	path := b.hostPath(VersionInfoPath)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		klog.FromContext(ctx).V(2).Info("No Ascend driver version file, publishing no driver version", "path", path)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the Ascend driver version: %w", err)
	}
	v, err := ParseVersionInfo(path, data)
	if err != nil {
		return "", fmt.Errorf("reading the Ascend driver version: %w", err)
	}
	return v, nil
}

// logOnce logs msg the first time key is seen by this backend, so what
// every poll meets again (a NIC row of the topology matrix) is said once.
func (b *Backend) logOnce(ctx context.Context, key, msg string, kv ...any) {
	b.mu.Lock()
	if b.logged == nil {
		b.logged = map[string]bool{}
	}
	seen := b.logged[key]
	b.logged[key] = true
	b.mu.Unlock()
	if !seen {
		klog.FromContext(ctx).Info(msg, kv...)
	}
}

// aiCores returns the AI core count of a chip: from the table by its name,
// or, for a name that does not tell it (the A3 die), from `npu-smi info -t
// common`. The second result names what read it ("" when unknown).
func (b *Backend) aiCores(ctx context.Context, info ChipInfo) (int, string, error) {
	if info.AICores > 0 && b.lib != nil {
		return info.AICores, b.libName() + " " + b.lib.chipInfoCall(), nil
	}
	cores, known := aiCoresPerChip[info.Name]
	table := "chip name " + info.Name + " (built-in table)"
	if !ambiguousCores[info.Name] {
		if !known {
			return 0, "", nil
		}
		return cores, table, nil
	}
	args := []string{"info", "-t", "common", "-i", strconv.Itoa(info.NPU), "-c", strconv.Itoa(info.Chip)}
	n, err := discovery.Query(ctx, b.runner, fmt.Sprintf("reading the AI core count of NPU %d chip %d", info.NPU, info.Chip), ParseAICoreCount, b.npuSmi, args...)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", err
		}
		b.logOnce(ctx, "cores:"+info.Name, "Cannot read the AI core count of this chip, publishing the usual count of its name",
			"chipName", info.Name, "cores", cores, "err", err)
		return cores, table, nil
	}
	return n, b.command(args...), nil
}

// npuName returns the variant of a 910_93 die, which npu-smi's table and
// DCMI's chip name call plain "Ascend910": DCMI's npu_name where the
// library read it, else "NPU Name" of `npu-smi info -t board` (printed for
// 910_93 and 950 only, npucli/src/npu_info_print.c:1004-1008, 1051-1056).
// The second result names the command where it ran. A board query that
// fails costs the variant (the model stays "Ascend910", logged once), not
// the chip.
func (b *Backend) npuName(ctx context.Context, info ChipInfo, dcmi bool) (string, string, error) {
	if info.NPUName != "" || info.Name != die91093Name || dcmi {
		return info.NPUName, "", nil
	}
	args := []string{"info", "-t", "board", "-i", strconv.Itoa(info.NPU), "-c", strconv.Itoa(info.Chip)}
	name, err := discovery.Query(ctx, b.runner, fmt.Sprintf("reading the board of NPU %d chip %d", info.NPU, info.Chip), ParseNPUName, b.npuSmi, args...)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", err
		}
		b.logOnce(ctx, "npu-name:"+err.Error(), "Cannot read which A3 die this is, publishing the model npu-smi prints",
			"npu", info.NPU, "chip", info.Chip, "model", modelName(info.Name), "err", err)
		return "", "", nil
	}
	return name, b.command(args...), nil
}

func (b *Backend) command(args ...string) string { return discovery.CommandLine(b.npuSmi, args...) }

// deviceIndices returns the N of every /dev/davinciN under the root.
func (b *Backend) deviceIndices() ([]int, error) {
	devs, err := discovery.DeviceIndices(b.root, devPrefix)
	if err != nil {
		return nil, fmt.Errorf("looking for Ascend device files: %w", err)
	}
	return devs, nil
}

func devPath(n int) string { return fmt.Sprintf("/dev/%s%d", devPrefix, n) }

func (b *Backend) hostPath(p string) string { return filepath.Join(b.root, p) }

// exists reports whether a device file exists under the root.
func (b *Backend) exists(p string) bool { return discovery.DeviceFileExists(b.root, p) }

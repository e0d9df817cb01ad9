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

// Package cambricon discovers Cambricon MLU chips: device files under a root
// directory (/dev/cambricon_devN, /dev/cambricon_ctl and the per-chip IPC
// nodes), chip facts from `cnmon info`, MLU-Link topology from
// `cnmon topo -m`, and PCI facts (vendor id, NUMA node, PCIe root) from sysfs.
//
// Index mapping: cnmon's card N is the chip behind /dev/cambricon_devN,
// the identity Cambricon's device plugin relies on too. Health: healthy
// when the device file exists, cnmon lists the card and, where cnmon
// prints a Health State section (CNMON v5), its Device entry is Good and
// its Driver entry, if any, is Running: the two facts the device plugin
// checks. testdata/README.md and docs/hardware.md cite the sources.
package cambricon

import (
	"context"
	"fmt"
	"os"
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

// Device node names, as the Cambricon device plugin mounts them (docs/hardware.md,
// "Verified against", cites its source and the driver's).
const (
	devPrefix   = "cambricon_dev"
	ctlNode     = "/dev/cambricon_ctl"
	gdrNode     = "/dev/cambricon_gdr"
	ipcmPrefix  = "/dev/cambricon_ipcm"
	commuPrefix = "/dev/commu"
	cmsgPrefix  = "/dev/cmsg_ctrl"
	msgqPrefix  = "/dev/cambr-msgq:"
	rpcPrefix   = "/dev/cambr-rpc:"
)

// ExtraMLULinkPorts is the Chip.Extra key of the number of active MLU-Link
// ports that connect the chip to other chips of the node.
const ExtraMLULinkPorts = "mluLinkPorts"

// Config configures the backend.
type Config struct {
	// Root is the host root, "/" in production, a fixture tree in tests.
	Root string
	// Runner runs cnmon; nil runs the real tool.
	Runner discovery.CommandRunner
	// Cnmon is the command name, default "cnmon".
	Cnmon string
	// Library is the path of libcndev.so: "" looks in DefaultCNDevPaths
	// under Root, vendors.LibraryNone reads everything through cnmon.
	Library string
	// LibraryCallTimeout bounds each CNDev call (zero: the default,
	// vendors.DefaultLibraryCallTimeout).
	LibraryCallTimeout time.Duration
	// Opened, when set, is libcndev as the agent's main holds it
	// (vendors.BackendConfig.Opened): loaded through it.
	Opened *vendors.Library
}

// Backend discovers Cambricon chips. It implements discovery.Backend.
type Backend struct {
	root    string
	runner  discovery.CommandRunner
	cnmon   string
	library string
	// callTimeout is Config.LibraryCallTimeout.
	callTimeout time.Duration

	// once loads the library at the first discovery; lib is nil when it
	// could not be loaded (logged once) or was not wanted.
	once sync.Once
	lib  *CNDev
	// opened is Config.Opened.
	opened *vendors.Library
}

var _ discovery.Backend = (*Backend)(nil)

// New returns a backend for cfg.
func New(cfg Config) *Backend {
	b := &Backend{root: cfg.Root, runner: cfg.Runner, cnmon: cfg.Cnmon, library: cfg.Library, callTimeout: cfg.LibraryCallTimeout, opened: cfg.Opened}
	if b.root == "" {
		b.root = "/"
	}
	if b.runner == nil {
		b.runner = discovery.ExecRunner{}
	}
	if b.cnmon == "" {
		b.cnmon = "cnmon"
	}
	return b
}

// Name implements discovery.Backend.
func (b *Backend) Name() string { return "cambricon" }

// Discover implements discovery.Backend. A node without any
// /dev/cambricon_devN has no Cambricon chips: it returns an empty inventory
// without running cnmon.
func (b *Backend) Discover(ctx context.Context) (inventory.Inventory, error) {
	logger := klog.FromContext(ctx)

	devs, err := b.deviceIndices()
	if err != nil {
		return inventory.Inventory{}, err
	}
	if len(devs) == 0 {
		logger.V(4).Info("No Cambricon device files, skipping cnmon", "dir", b.hostPath("/dev"))
		return inventory.Inventory{}, nil
	}

	var r reader
	if l := b.loadLibrary(ctx); l != nil {
		r, err = b.readLibrary(ctx, l)
	} else {
		r, err = b.readTool(ctx)
	}
	if err != nil {
		return inventory.Inventory{}, err
	}
	cards, topo := r.cards, r.topo

	listed := map[int]bool{}
	for _, c := range cards {
		listed[c.Card] = true
	}
	for _, n := range devs {
		if !listed[n] {
			logger.Info("Skipping a Cambricon device file that is not listed", "by", r.name, "device", fmt.Sprintf("/dev/%s%d", devPrefix, n))
		}
	}

	groups := linkGroups(cards, topo)
	inv := inventory.Inventory{}
	for _, c := range cards {
		chip, err := b.chip(ctx, c, topo, groups, r)
		if err != nil {
			return inventory.Inventory{}, err
		}
		inv.Chips = append(inv.Chips, chip)
	}
	sort.Slice(inv.Chips, func(i, j int) bool { return inv.Chips[i].Index < inv.Chips[j].Index })
	var shared []string
	for _, n := range []string{ctlNode, gdrNode} {
		if b.exists(n) {
			shared = append(shared, n)
		}
	}
	if len(shared) > 0 {
		inv.SharedDeviceNodes = map[inventory.Vendor][]string{Vendor: shared}
	}
	return inv, nil
}

// fault is one reason a chip is unhealthy (inventory.Chip.MarkUnhealthy).
// long: one chip from every source (cnmon, sysfs, PCI, library) in the
// order they override each other; vendor-internal, left whole while that
// code is reworked (issue 42).
func (b *Backend) chip(ctx context.Context, c CardInfo, topo Topology, groups map[int]string, r reader) (inventory.Chip, error) {
	logger := klog.FromContext(ctx)
	var faults []fault
	dev, err := pci.Read(b.root, c.PCIBusID)
	switch {
	case pci.IsMissing(b.root, c.PCIBusID):
		// A card that fell off the bus is a health fault of that card,
		// not a reason to serve none of the node's chips.
		logger.Info("An MLU card is listed whose PCI function is gone from sysfs, reporting it unhealthy", "by", r.name, "card", c.Card, "pciBusID", c.PCIBusID)
		faults = append(faults, fault{inventory.ReasonPCIDeviceMissing, fmt.Sprintf("PCI function %s is gone from sysfs", c.PCIBusID)})
		id, _ := pci.NormalizeBusID(c.PCIBusID)
		dev = pci.Device{BusID: id}
	case err != nil:
		return inventory.Chip{}, fmt.Errorf("reading PCI facts of MLU card %d (%s) from sysfs: %w", c.Card, c.PCIBusID, err)
	case dev.VendorID != PCIVendorID:
		return inventory.Chip{}, fmt.Errorf("MLU card %d: PCI function %s has vendor id %#04x, not Cambricon's %#04x: %s and sysfs disagree",
			c.Card, c.PCIBusID, dev.VendorID, PCIVendorID, r.name)
	}

	devPath := fmt.Sprintf("/dev/%s%d", devPrefix, c.Card)
	if !b.exists(devPath) {
		logger.Info("An MLU card is listed whose device file is missing, reporting it unhealthy", "by", r.name, "card", c.Card, "device", devPath)
		faults = append(faults, fault{inventory.ReasonDeviceFileMissing, "device file " + devPath + " is missing"})
	}
	// Calls that failed for this card alone (readLibrary), after the
	// basic faults and before the health it may not have read.
	faults = append(faults, r.faults[c.Card]...)
	faults = append(faults, healthFaults(ctx, c, r.name)...)

	nodes := []string{devPath}
	for _, prefix := range []string{ipcmPrefix, commuPrefix, cmsgPrefix, msgqPrefix, rpcPrefix} {
		if p := prefix + strconv.Itoa(c.Card); b.exists(p) {
			nodes = append(nodes, p)
		}
	}

	uuid := c.UUID
	if uuid == "" {
		uuid = c.SerialNumber
	}
	chip := inventory.Chip{
		Vendor:        Vendor,
		Model:         c.ProductName,
		Index:         c.Card,
		UUID:          uuid,
		MemoryBytes:   c.MemoryBytes,
		Cores:         c.Cores,
		LinkType:      inventory.LinkPCIe,
		LinkGroup:     fmt.Sprintf("pcie-%d", c.Card),
		NUMANode:      dev.NUMANode,
		PCIBusID:      dev.BusID,
		PCIeRoot:      dev.PCIeRoot,
		DriverVersion: c.DriverVersion,
		Healthy:       true,
		DeviceNodes:   nodes,
		Extra: map[string]inventory.Value{
			ExtraMLULinkPorts: inventory.IntValue(int64(topo.MLULinkPorts(c.Card))),
		},
	}
	for _, f := range faults {
		chip.MarkUnhealthy(f.reason, f.message)
	}
	if g, ok := groups[c.Card]; ok {
		chip.LinkType, chip.LinkGroup = inventory.LinkMLULink, g
	}
	if chip.Cores == 0 {
		logger.V(2).Info("No MLU core count known for this model, publishing none", "model", c.ProductName)
	}
	chip.Sources = map[string]string{"numaNode": "sysfs", "pcieRoot": "sysfs"}
	for k, v := range r.sources {
		chip.Sources[k] = v
	}
	if c.CoresFrom != "" {
		chip.Sources["cores"] = c.CoresFrom
	}
	if smluSupported(c.ProductName) {
		if r.smluMode != nil {
			off, src, err := r.smluMode(c.Card)
			if err == nil {
				chip.PartitionModeOff, chip.Sources["partitionMode"] = off, src
				if r.sized != "" {
					chip.Sources[SourceSizedSMLU] = r.sized
				}
				return chip, nil
			}
			logger.V(2).Info("Cannot read the sMLU mode through the library, reading procfs", "card", c.Card, "err", err)
		}
		chip.PartitionModeOff = b.smluModeOff(ctx, c.Card, dev.BusID)
		chip.Sources["partitionMode"] = smluProcFile(dev.BusID)
	}
	return chip, nil
}

// smluProcFile is where the driver reports a chip's sMLU mode:
// /proc/driver/cambricon/mlus/<BDF>/smlu, BDF as "%04x:%02x:%02x.%x"
// (jklincn/cambricon-mlu-driver@02061856 proc/cndrv_proc.c: the "mlus"
// directory under "driver/cambricon", one directory per PCIe function, file
// "smlu").
func smluProcFile(busID string) string {
	return ProcDir + "/mlus/" + busID + "/smlu"
}

// ProcDir is the driver's procfs directory, where discovery reads the sMLU
// mode of each MLU CNDev cannot tell it (smluProcFile).
const ProcDir = "/proc/driver/cambricon"

// smluModeOff reads the chip's sMLU mode and says why it is off, "" when
// on. The file's first line is "smlu_support:%d smlu_enable:%d"
// (smlu/smlu_core.c cn_smlu_cap_show); an admin switches the mode with
// `cnmon set -c N -smlu on`. A file that is missing or unreadable means
// off: the agent must not offer partitions the tool would refuse.
func (b *Backend) smluModeOff(ctx context.Context, card int, busID string) string {
	logger := klog.FromContext(ctx)
	p := smluProcFile(busID)
	data, err := os.ReadFile(b.hostPath(p))
	if err != nil {
		logger.V(2).Info("Cannot read the sMLU mode of an MLU, treating it as off", "card", card, "file", p, "err", err)
		return fmt.Sprintf("sMLU mode unknown: %s is not readable (a driver without sMLU?)", p)
	}
	support, enable, ok := parseSMLUMode(data)
	switch {
	case !ok:
		logger.Info("Unexpected content in the sMLU mode file, treating sMLU as off", "card", card, "file", p)
		return fmt.Sprintf("sMLU mode unknown: %s has no smlu_support/smlu_enable line", p)
	case !support:
		return fmt.Sprintf("the driver says card %d does not support sMLU (%s)", card, p)
	case !enable:
		return fmt.Sprintf("sMLU mode is off on card %d (%s; switch it on with cnmon set -c %d -smlu on)", card, p, card)
	}
	return ""
}

// parseSMLUMode reads "smlu_support:%d smlu_enable:%d" from the first
// line that has both.
func parseSMLUMode(data []byte) (support, enable, ok bool) {
	for _, line := range strings.Split(string(data), "\n") {
		var haveS, haveE bool
		for _, f := range strings.Fields(line) {
			k, v, found := strings.Cut(f, ":")
			if !found {
				continue
			}
			switch k {
			case "smlu_support":
				support, haveS = v != "0", true
			case "smlu_enable":
				enable, haveE = v != "0", true
			}
		}
		if haveS && haveE {
			return support, enable, true
		}
	}
	return false, false, false
}

// linkGroups returns "mlulink-K" for every card in an MLU-Link connected
// component of two or more cards, K counting the components in the order of
// their lowest card number.
func linkGroups(cards []CardInfo, topo Topology) map[int]string {
	indices := make([]int, 0, len(cards))
	for _, c := range cards {
		indices = append(indices, c.Card)
	}
	return discovery.LinkGroups(indices, func(a, b int) bool {
		linked, _ := topo.MLULink(a, b)
		return linked
	}, "mlulink")
}

// reader is what one way of reading the chips (libcndev or cnmon) found,
// with how it names itself and its facts.
type reader struct {
	// name says who lists the cards, for messages: "cnmon",
	// "libcndev.so".
	name  string
	cards []CardInfo
	topo  Topology
	// sources are the Chip.Sources of the facts it read.
	sources map[string]string
	// faults are the cards' failed library calls, by card.
	faults map[int][]fault
	// smluMode reads a card's sMLU mode (PartitionModeOff and the
	// source); nil where only procfs tells.
	smluMode func(card int) (off, source string, err error)
	// sized names the library's dynamic sMLU calls where it has them
	// (Chip.Sources[SourceSizedSMLU]); "" where it has not.
	sized string
}

// loadLibrary loads libcndev once, through the agent's one Library
// where it has one (Config.Opened); it logs once why it could not.
func (b *Backend) loadLibrary(ctx context.Context) *CNDev {
	b.once.Do(func() {
		b.lib = vendors.LoadLibrary(b.opened, func() *CNDev { return b.openLibrary(ctx) })
	})
	return b.lib
}

// openLibrary loads libcndev as configured; nil, logged, when it cannot.
func (b *Backend) openLibrary(ctx context.Context) *CNDev {
	logger := klog.FromContext(ctx)
	if b.library == vendors.LibraryNone {
		logger.V(2).Info("Reading Cambricon chips through cnmon only, as configured", "library", b.library)
		return nil
	}
	l, err := openCNDev(b.root, b.library, b.callTimeout)
	if err != nil {
		logger.Info("CNDev library not loaded, reading Cambricon chips through cnmon instead", "err", err)
		return nil
	}
	logger.Info("Reading Cambricon chips through CNDev", "library", l.Path)
	return l
}

// readTool reads the cards with `cnmon info` and the MLU-Links with
// `cnmon topo -m`. One card's block of `cnmon info` that cannot be read
// leaves that card out, and a topology that cannot be read (or lacks a
// card's row) leaves the cards it does not cover on PCIe only, each with a
// log line: the node's other chips still publish.
func (b *Backend) readTool(ctx context.Context) (reader, error) {
	logger := klog.FromContext(ctx)
	listing, err := b.info(ctx)
	if err != nil {
		return reader{}, err
	}
	for _, bad := range listing.Bad {
		logger.Info("Leaving out an MLU card whose cnmon listing cannot be read", "command", b.command("info"), "card", bad.Card, "err", bad.Err)
	}
	cards := listing.Cards
	topo, err := b.topo(ctx)
	if err != nil {
		logger.Info("Cannot read the MLU-Link topology, publishing every MLU card on PCIe only", "command", b.command("topo", "-m"), "err", err)
		topo = Topology{Codes: map[int]map[int]string{}, CPUAffinity: map[int]string{}}
	}
	if len(topo.Skipped) > 0 {
		// NIC rows and columns are normal on training nodes: worth a
		// line at higher verbosity, not on every re-discovery.
		logger.V(2).Info("Skipped what the cnmon topology parser does not use", "command", b.command("topo", "-m"), "skipped", topo.Skipped)
	}
	for i, c := range cards {
		if err == nil && topo.Codes[c.Card] == nil {
			logger.Info("An MLU card has no row in the topology matrix, publishing it on PCIe only", "command", b.command("topo", "-m"), "card", c.Card)
			// Its column in the other rows goes too: a link seen from one
			// side only would join it to a group it may not be in.
			for _, row := range topo.Codes {
				delete(row, c.Card)
			}
		}
		cards[i].Cores = mluCoresPerChip[c.ProductName]
		cards[i].CoresFrom = modelTable
	}
	info, topoCmd := b.command("info"), b.command("topo", "-m")
	return reader{name: "cnmon", cards: cards, topo: topo, sources: map[string]string{
		"model": info, "uuid": info, "memory": info, "driverVersion": info, "pciBusID": info,
		"health": info + ", device files", "linkGroup": topoCmd, "mluLinkPorts": topoCmd,
	}}, nil
}

// modelTable names models.go as the source of a core count.
const modelTable = "model table (models.go)"

func (b *Backend) info(ctx context.Context) (InfoListing, error) {
	return discovery.Query(ctx, b.runner, "listing MLU cards", ParseInfoCards, b.cnmon, "info")
}

func (b *Backend) topo(ctx context.Context) (Topology, error) {
	return discovery.Query(ctx, b.runner, "reading MLU-Link topology", ParseTopo, b.cnmon, "topo", "-m")
}

func (b *Backend) command(args ...string) string { return discovery.CommandLine(b.cnmon, args...) }

// deviceIndices returns the N of every /dev/cambricon_devN under the root.
func (b *Backend) deviceIndices() ([]int, error) {
	devs, err := discovery.DeviceIndices(b.root, devPrefix)
	if err != nil {
		return nil, fmt.Errorf("looking for Cambricon device files: %w", err)
	}
	return devs, nil
}

func (b *Backend) hostPath(p string) string { return filepath.Join(b.root, p) }

// exists reports whether a device file exists under the root.
func (b *Backend) exists(p string) bool { return discovery.DeviceFileExists(b.root, p) }

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

// Package vendortest is a third vendor for tests, ACME XPUs, that exists
// only to show a generic package works through pkg/vendors with a vendor
// it has never heard of: adding it to the registry it passes in is all a
// test does. It has no partitions (Partitions returns nil) and no
// management library (no LibraryFlag), so it also shows that those are
// optional; its config kind is AcmeConfig (NoConfig is the same vendor
// without one).
package vendortest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// The test vendor's names.
const (
	Vendor            inventory.Vendor = "acme"
	Family            inventory.Family = "xpu"
	Driver                             = "acme.accel-dra.dev"
	Option                             = "acme"
	CDIKind                            = "accel-dra.dev/acme"
	DevicePrefix                       = "xpu"
	Tool                               = "acme-smi"
	ToolHelp                           = "path of acme-smi; default: acme-smi from PATH"
	EnvVisibleDevices                  = "ACME_VISIBLE_DEVICES"
	ConfigKind                         = "AcmeConfig"
	// CtlNode is the device file every container of the vendor gets.
	CtlNode = "/dev/acme_ctl"
	// Model, Cores and MemoryBytes are what every ACME chip reports.
	Model       = "ACME-1"
	Cores       = 8
	MemoryBytes = int64(16) << 30
	// DriverVersion is the version of the fake driver.
	DriverVersion = "1.2.3"
)

// Acme is the test vendor. A test adds it to the registry it passes in:
// registry.With(vendortest.Acme{}).
type Acme struct{}

var _ vendors.Vendor = Acme{}

// Names implements vendors.Vendor.
func (Acme) Names() vendors.Names {
	return vendors.Names{Vendor: Vendor, Family: Family, Driver: Driver, Option: Option, CDIKind: CDIKind,
		DevicePrefix: DevicePrefix, Tool: Tool, ToolHelp: ToolHelp, ConfigKind: ConfigKind}
}

// NoConfig is ACME with a driver that takes no opaque config
// (vendors.ConfigKindNone), everything else ACME's: it shows that the
// config kind is optional too, and that a config sent to such a driver is
// refused with an error naming the driver, never dereferenced. It has
// ACME's names, so a registry holds one or the other.
type NoConfig struct{ Acme }

// Names implements vendors.Vendor.
func (NoConfig) Names() vendors.Names {
	n := Acme{}.Names()
	n.ConfigKind = vendors.ConfigKindNone
	return n
}

// NewBackend implements vendors.Vendor: one chip per /dev/acme<N> under
// root, no tool run.
func (Acme) NewBackend(cfg vendors.BackendConfig) discovery.Backend {
	return backend{root: cfg.Root}
}

// CDI implements vendors.Vendor.
func (Acme) CDI() vendors.CDIEdits {
	return vendors.CDIEdits{VisibleEnv: EnvVisibleDevices, Permissions: "rw", Mounts: []string{"/usr/lib/acme"}}
}

// Partitions implements vendors.Vendor: ACME chips have none.
func (Acme) Partitions() vendors.Partitions { return nil }

// HostMounts implements vendors.Vendor: the agent needs nothing of the
// node beyond its device files and the admin's driver directories.
func (Acme) HostMounts() []vendors.HostMount { return nil }

// Models implements vendors.Vendor.
func (Acme) Models() []vendors.Model { return []vendors.Model{{Name: Model}} }

// ProfileNode implements vendors.Vendor.
func (Acme) ProfileNode() vendors.ProfileNode {
	return vendors.ProfileNode{
		SharedDeviceNodes: []string{CtlNode},
		BusOffset:         0x40,
		Chip: func(c *inventory.Chip, _ vendors.ProfileGroup) {
			c.DeviceNodes = []string{devPath(c.Index)}
		},
		DriverFiles: func([]inventory.Chip) ([]vendors.File, error) {
			return []vendors.File{
				{Path: "/usr/lib/acme", Mode: fs.ModeDir | 0o755},
				{Path: "/usr/lib/acme/libacme.so", Mode: 0o644, Content: vendors.Placeholder("ACME driver library")},
			}, nil
		},
	}
}

func devPath(n int) string { return fmt.Sprintf("/dev/acme%d", n) }

var devName = regexp.MustCompile(`^acme([0-9]+)$`)

type backend struct{ root string }

func (b backend) Name() string { return "acme" }

func (b backend) Discover(context.Context) (inventory.Inventory, error) {
	entries, err := os.ReadDir(filepath.Join(b.root, "dev"))
	if err != nil && !os.IsNotExist(err) {
		return inventory.Inventory{}, fmt.Errorf("listing ACME device files: %w", err)
	}
	var indices []int
	for _, e := range entries {
		if m := devName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			indices = append(indices, n)
		}
	}
	sort.Ints(indices)
	inv := inventory.Inventory{}
	if len(indices) == 0 {
		return inv, nil
	}
	for _, n := range indices {
		inv.Chips = append(inv.Chips, inventory.Chip{Vendor: Vendor, Model: Model, Index: n, UUID: fmt.Sprintf("ACME-%04d", n),
			MemoryBytes: MemoryBytes, Cores: Cores, LinkType: inventory.LinkPCIe, LinkGroup: fmt.Sprintf("pcie-%d", n),
			DriverVersion: DriverVersion, Healthy: true, DeviceNodes: []string{devPath(n)}})
	}
	inv.SharedDeviceNodes = map[inventory.Vendor][]string{Vendor: {CtlNode}}
	return inv, nil
}

// TelemetryFile is the file, under the root and per chip index, the test
// vendor's telemetry reads: lines of "<quantity> <value>", quantities
// utilization (0-1), memory_used (bytes), temperature (°C), power (W), card_power (W),
// healthy (true/false). A chip without the file fails its read; a
// quantity not listed is absent.
func TelemetryFile(index int) string { return fmt.Sprintf("/sys/class/acme/acme%d/telemetry", index) }

// NewTelemetry implements vendors.Vendor: the chips' TelemetryFile.
func (Acme) NewTelemetry(cfg vendors.BackendConfig) vendors.Telemetry {
	return telemetry{root: cfg.Root}
}

type telemetry struct{ root string }

func (t telemetry) Read(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		data, err := os.ReadFile(filepath.Join(t.root, TelemetryFile(c.Index)))
		if err != nil {
			s.Fail("acme-telemetry", err)
			return
		}
		s.MemoryTotalBytes = vendors.Value(float64(MemoryBytes))
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, v, _ := strings.Cut(line, " ")
			if k == "healthy" {
				ok := v == "true"
				s.Healthy = &ok
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				s.Fail("acme-telemetry", fmt.Errorf("%s: %w", TelemetryFile(c.Index), err))
				continue
			}
			switch k {
			case "utilization":
				s.UtilizationRatio = vendors.Value(f)
			case "memory_used":
				s.MemoryUsedBytes = vendors.Value(f)
			case "temperature":
				s.TemperatureCelsius = vendors.Value(f)
			case "power":
				s.PowerWatts = vendors.Value(f)
			case "card_power":
				s.CardPowerWatts = vendors.Value(f)
			}
		}
	}), nil
}

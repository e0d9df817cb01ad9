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

import (
	"fmt"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// The names of the vendor (vendors.Names), fixed by the design contract.
const (
	// Vendor is the accel-dra.dev/vendor value of Cambricon chips.
	Vendor inventory.Vendor = "cambricon"
	// Family is their accel-dra.dev/family.
	Family inventory.Family = "mlu"
	// Driver is the DRA driver serving them.
	Driver = "cambricon.accel-dra.dev"
	// Option selects them in --vendors.
	Option = "cambricon"
	// ConfigKind is the kind of the driver's opaque device configuration
	// (a v1alpha1.DeviceConfig of this kind).
	ConfigKind = "CambriconConfig"
	// CDIKind is the kind of their CDI specs.
	CDIKind = "accel-dra.dev/cambricon"
	// DevicePrefix names their DRA devices: mlu-N.
	DevicePrefix = "mlu"
	// Cnmon is the name the Cambricon tool is run by (discovery.ExecRunner
	// maps it to the configured path).
	Cnmon = "cnmon"
	// PCIVendorID is Cambricon's id in the PCI ID repository.
	PCIVendorID uint16 = 0xcabc
)

// Cambricon is the Cambricon vendor: Cambricon MLUs. It implements
// vendors.Vendor; its partitions are SMLUs.
type Cambricon struct{}

var _ vendors.Vendor = Cambricon{}

// Names implements vendors.Vendor.
func (Cambricon) Names() vendors.Names {
	return vendors.Names{Vendor: Vendor, Family: Family, Driver: Driver, Option: Option, CDIKind: CDIKind,
		DevicePrefix: DevicePrefix, Tool: Cnmon, ToolHelp: ToolFlagHelp, ConfigKind: ConfigKind,
		LibraryFlag: "cndev-library", LibraryHelp: LibraryFlagHelp}
}

// NewBackend implements vendors.Vendor.
func (Cambricon) NewBackend(cfg vendors.BackendConfig) discovery.Backend {
	return New(Config{Root: cfg.Root, Runner: cfg.Runner, Library: cfg.Library, LibraryCallTimeout: cfg.LibraryCallTimeout, Opened: cfg.Opened})
}

// ProfileNode implements vendors.Vendor.
func (Cambricon) ProfileNode() vendors.ProfileNode {
	return vendors.ProfileNode{
		SharedDeviceNodes: []string{ctlNode},
		// Cambricon chips sit on buses of their own, above the Ascend ones.
		BusOffset: 0x80,
		LinkType:  inventory.LinkMLULink,
		Chip: func(c *inventory.Chip, g vendors.ProfileGroup) {
			c.DeviceNodes = []string{
				fmt.Sprintf("/dev/%s%d", devPrefix, c.Index),
				fmt.Sprintf("%s%d", ipcmPrefix, c.Index),
			}
			c.Extra[ExtraMLULinkPorts] = inventory.IntValue(int64(g.MLULinkPorts))
		},
		DriverFiles: func([]inventory.Chip) ([]vendors.File, error) {
			return []vendors.File{
				{Path: "/usr/bin/cnmon", Mode: 0o755, Content: vendors.ToolNotice("cnmon", "Cambricon MLU")},
			}, nil
		},
	}
}

// HostMounts implements vendors.Vendor: the driver's procfs directory.
func (Cambricon) HostMounts() []vendors.HostMount {
	return []vendors.HostMount{{Path: ProcDir, Type: vendors.HostDirectory}}
}

// ToolFlagHelp describes --cnmon (node agent).
const ToolFlagHelp = "path of cnmon, e.g. /host/usr/bin/cnmon in a container; default: cnmon from PATH"

// LibraryFlagHelp describes --cndev-library (node agent and discover).
const LibraryFlagHelp = `path of Cambricon's CNDev library libcndev.so, loaded at run time to read and partition MLUs (cnmon stays the fallback); default: /usr/local/neuware/lib64/libcndev.so or the distribution's libcndev.so under --root; "none" reads Cambricon chips with cnmon only`

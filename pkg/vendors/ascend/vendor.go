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

import (
	"io/fs"
	"path"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// The names of the vendor (vendors.Names), fixed by the design contract.
const (
	// Vendor is the accel-dra.dev/vendor value of Ascend chips.
	Vendor inventory.Vendor = "huawei"
	// Family is their accel-dra.dev/family.
	Family inventory.Family = "ascend"
	// Driver is the DRA driver serving them.
	Driver = "ascend.accel-dra.dev"
	// Option selects them in --vendors.
	Option = "ascend"
	// ConfigKind is the kind of the driver's opaque device configuration
	// (a v1alpha1.DeviceConfig of this kind).
	ConfigKind = "AscendConfig"
	// CDIKind is the kind of their CDI specs.
	CDIKind = "accel-dra.dev/ascend"
	// DevicePrefix names their DRA devices: npu-N.
	DevicePrefix = "npu"
	// NpuSmi is the name the Ascend tool is run by (discovery.ExecRunner
	// maps it to the configured path).
	NpuSmi = "npu-smi"
	// PCIVendorID is Huawei's id in the PCI ID repository.
	PCIVendorID uint16 = 0x19e5
)

// Ascend is the Ascend vendor: Huawei Ascend NPUs. It implements
// vendors.Vendor; its partitions are VNPUs.
type Ascend struct{}

var _ vendors.Vendor = Ascend{}

// Names implements vendors.Vendor.
func (Ascend) Names() vendors.Names {
	return vendors.Names{Vendor: Vendor, Family: Family, Driver: Driver, Option: Option, CDIKind: CDIKind,
		DevicePrefix: DevicePrefix, Tool: NpuSmi, ToolHelp: ToolFlagHelp, ConfigKind: ConfigKind,
		LibraryFlag: "dcmi-library", LibraryHelp: LibraryFlagHelp}
}

// NewBackend implements vendors.Vendor.
func (Ascend) NewBackend(cfg vendors.BackendConfig) discovery.Backend {
	return New(Config{Root: cfg.Root, Runner: cfg.Runner, Library: cfg.Library, LibraryCallTimeout: cfg.LibraryCallTimeout,
		PartitionMode: cfg.PartitionMode, Opened: cfg.Opened})
}

// ProfileNode implements vendors.Vendor.
func (Ascend) ProfileNode() vendors.ProfileNode {
	return vendors.ProfileNode{
		// The order the device plugin and docker runtime list them.
		SharedDeviceNodes: simulatedSharedNodes,
		LinkType:          inventory.LinkHCCS,
		Chip: func(c *inventory.Chip, g vendors.ProfileGroup) {
			c.DeviceNodes = []string{devPath(c.Index)}
			if g.ChipName != "" {
				c.Extra[ExtraChipName] = inventory.StringValue(g.ChipName)
			}
			if g.ChipName == die91093Name {
				// Simulated A3 dies pair up as a real node's do: two per
				// module (NPU), in order.
				c.Extra[AttrModule] = inventory.StringValue(moduleOf(c.Index / 2))
			}
			c.Extra[ExtraLogicID] = inventory.IntValue(int64(c.Index))
			if f := profileHCCLTopoFile(g.ChipName); f != "" {
				c.Extra[ExtraHCCLTopoFile] = inventory.StringValue(f)
			}
		},
		DriverFiles: driverFiles,
	}
}

// HostMounts implements vendors.Vendor: VNPUHostFiles, read-write at their
// own paths, where the node group makes vNPUs, as Huawei's
// ascend-device-plugin mounts them (Ascend/mind-cluster
// component/ascend-device-plugin/build/ascendplugin-volcano.yaml: vnpu-cut
// /run/vnpu_cfg_lock DirectoryOrCreate, vnpucfg /etc/vnpu.cfg File). The
// lock directory lives in /run (tmpfs), and DCMI makes it too.
func (Ascend) HostMounts() []vendors.HostMount {
	return []vendors.HostMount{
		{Path: VNPUHostFiles[0], Type: vendors.HostDirectoryOrCreate, Library: true, Partitions: true},
		{Path: VNPUHostFiles[1], Type: vendors.HostFile, Library: true, Partitions: true},
	}
}

// ToolFlagHelp describes --npu-smi (node agent).
const ToolFlagHelp = "path of npu-smi, e.g. /host/usr/local/sbin/npu-smi in a container; default: npu-smi from PATH"

// driverFiles is a fake Ascend driver installation: the paths CDI() mounts.
func driverFiles(chips []inventory.Chip) ([]vendors.File, error) {
	version, err := vendors.OneDriverVersion(Vendor, chips)
	if err != nil {
		return nil, err
	}
	return append([]vendors.File{
		// The driver keeps its user-space libraries in lib64/driver and
		// lib64/common (LibraryDirs).
		{Path: "/usr/local/Ascend/driver/lib64/driver/libascend_hal.so", Mode: 0o644, Content: vendors.Placeholder("Ascend driver library")},
		{Path: "/usr/local/Ascend/driver/lib64/common", Mode: fs.ModeDir | 0o755},
		{Path: "/usr/local/Ascend/driver/include", Mode: fs.ModeDir | 0o755},
		// version.info's first line is what CANN and npu-smi read.
		{Path: "/usr/local/Ascend/driver/version.info", Mode: 0o644, Content: "Version=" + version + "\n"},
		// Keys as the Ascend driver installer writes them; CANN's
		// set_env.sh reads Driver_Install_Path_Param.
		{Path: "/etc/ascend_install.info", Mode: 0o644, Content: "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\n" +
			"Driver_Install_Type=full\nDriver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=no\n"},
		{Path: "/usr/local/dcmi/libdcmi.so", Mode: 0o644, Content: vendors.Placeholder("Ascend DCMI library")},
		{Path: "/usr/local/bin/npu-smi", Mode: 0o755, Content: vendors.ToolNotice("npu-smi", "Ascend NPU")},
	}, topoFiles(chips)...), nil
}

// profileHCCLTopoFile is the HCCL topology file of a simulated 950 node:
// the 950DT's Atlas 850 8P server (the bundled atlas-850 profile), the
// 950PR's Atlas 350 card; "" for other chips (hccltopo.go).
func profileHCCLTopoFile(chipName string) string {
	switch chipName {
	case "Ascend950DT":
		return path.Join(hcclTopo950Dir, hcclTopoByProduct[0])
	case "Ascend950PR":
		return path.Join(hcclTopo950Dir, hcclTopoByProduct[5])
	}
	return ""
}

// topoFiles are the HCCL topology files the chips name, as the 950 driver
// installs them (hccltopo.go): placeholders, as the libraries are.
func topoFiles(chips []inventory.Chip) []vendors.File {
	var out []vendors.File
	seen := map[string]bool{}
	for _, c := range chips {
		if v, ok := c.Extra[ExtraHCCLTopoFile]; ok && v.String != nil && !seen[*v.String] {
			seen[*v.String] = true
			out = append(out, vendors.File{Path: *v.String, Mode: 0o444, Content: vendors.Placeholder("Ascend 950 HCCL topology file")})
		}
	}
	return out
}

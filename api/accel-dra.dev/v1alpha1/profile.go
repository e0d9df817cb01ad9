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

package v1alpha1

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// HardwareProfileKind is the kind of a hardware profile file.
const HardwareProfileKind = "HardwareProfile"

// HardwareProfile describes the accelerators of one kind of server, for the
// simulated discovery backend. Numbers come from vendor data sheets, cited
// in each profile file.
type HardwareProfile struct {
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// NUMANodes spreads the chips of each group evenly over this many NUMA
	// nodes (chips 0..k-1 on node 0, and so on). 0 means no NUMA affinity.
	NUMANodes int         `json:"numaNodes,omitempty"`
	Chips     []ChipGroup `json:"chips"`
}

// ChipGroup is a run of identical chips of one vendor. Indices continue
// across groups of the same vendor.
type ChipGroup struct {
	Vendor string `json:"vendor"`
	Model  string `json:"model"`
	Count  int    `json:"count"`
	// Memory is the device memory of one chip.
	Memory resource.Quantity `json:"memory"`
	Cores  int               `json:"cores"`
	// LinkType is hccs, mlulink or pcie. LinkGroupSize chips in index order
	// share one interconnect group; ignored for pcie, where every chip is a
	// group of its own.
	LinkType      string `json:"linkType"`
	LinkGroupSize int    `json:"linkGroupSize,omitempty"`
	DriverVersion string `json:"driverVersion"`
	// PCIDeviceID is the PCI device id of the chip (e.g. 0xd802 for 910B).
	PCIDeviceID string `json:"pciDeviceID,omitempty"`
	// ChipName is the Ascend chip name as npu-smi prints it (e.g. 910B3).
	ChipName string `json:"chipName,omitempty"`
	// MLULinkPorts is the number of MLU-Link ports of a Cambricon chip.
	MLULinkPorts int `json:"mluLinkPorts,omitempty"`
	// Unhealthy lists chip indices (within the vendor) reported unhealthy.
	Unhealthy []int `json:"unhealthy,omitempty"`
	// DeviceIPs are the RoCE addresses of the group's chips in index order,
	// one per chip, each an interface address in CIDR form
	// (192.168.100.101/24): what `hccn_tool -i N -ip -s address A netmask M`
	// configures on a real Ascend training server. Huawei chips only;
	// without it the chips have no device IP. Every node simulated from
	// the profile reports the same addresses.
	DeviceIPs []string `json:"deviceIPs,omitempty"`
	// PartitionModeOff simulates a node whose vendor partition mode is off
	// (Ascend not in vNPU docker mode, Cambricon sMLU not enabled): the
	// group's chips are then published Whole even where Partitioned is
	// asked for, as on such a real node. Simulated nodes have it on by
	// default.
	PartitionModeOff bool `json:"partitionModeOff,omitempty"`
}

// linkPCIe is the linkType every vendor's chips may have, the API's
// spelling of inventory.LinkPCIe (a test in pkg/vendors checks they agree).
const linkPCIe = "pcie"

// ProfileVendor is a vendor whose chips a profile may list: the binary
// reading profiles lists them from its vendor registry
// (vendors.Registry.ProfileVendors), so the API package names none.
//
// +k8s:deepcopy-gen=false
type ProfileVendor struct {
	// Vendor is the value of chips[].vendor, e.g. huawei.
	Vendor string
	// LinkType is the linkType its chips may have besides pcie, e.g.
	// hccs; "" for none.
	LinkType string
}

// ParseHardwareProfile decodes a profile strictly and validates it for
// vendors.
func ParseHardwareProfile(source string, data []byte, vendors []ProfileVendor) (*HardwareProfile, error) {
	var p HardwareProfile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: decoding %s: %w", source, HardwareProfileKind, err)
	}
	if err := p.Validate(vendors); err != nil {
		return nil, fmt.Errorf("%s: %s %q: %w", source, HardwareProfileKind, p.Name, err)
	}
	return &p, nil
}

// Validate checks the fields; errors name the field path. The chips'
// vendors are those of vendors.
func (p *HardwareProfile) Validate(vendors []ProfileVendor) error {
	if p.APIVersion != GroupVersion || p.Kind != HardwareProfileKind {
		return fmt.Errorf("apiVersion/kind: got %q/%q, want %s/%s", p.APIVersion, p.Kind, GroupVersion, HardwareProfileKind)
	}
	if p.Name == "" {
		return fmt.Errorf("name: required")
	}
	if p.NUMANodes < 0 {
		return fmt.Errorf("numaNodes: must not be negative")
	}
	if len(p.Chips) == 0 {
		return fmt.Errorf("chips: at least one chip group is required")
	}
	deviceIPs := map[netip.Addr]string{} // address -> field that has it
	var values []string
	linkTypes := []string{linkPCIe}
	for _, v := range vendors {
		values = append(values, v.Vendor)
		if v.LinkType != "" {
			linkTypes = append(linkTypes[:len(linkTypes)-1], v.LinkType, linkPCIe)
		}
	}
	for i, g := range p.Chips {
		field := fmt.Sprintf("chips[%d]", i)
		j := slices.IndexFunc(vendors, func(v ProfileVendor) bool { return v.Vendor == g.Vendor })
		if j < 0 {
			return fmt.Errorf("%s.vendor: %q is not one of %s", field, g.Vendor, strings.Join(values, ", "))
		}
		if g.Model == "" {
			return fmt.Errorf("%s.model: required", field)
		}
		if g.Count <= 0 {
			return fmt.Errorf("%s.count: must be positive, got %d", field, g.Count)
		}
		if g.Memory.Sign() <= 0 {
			return fmt.Errorf("%s.memory: must be positive", field)
		}
		if g.Cores <= 0 {
			return fmt.Errorf("%s.cores: must be positive, got %d", field, g.Cores)
		}
		switch {
		case g.LinkType == linkPCIe:
		case !slices.Contains(linkTypes, g.LinkType):
			return fmt.Errorf("%s.linkType: %q is not one of %s", field, g.LinkType, strings.Join(linkTypes, ", "))
		case g.LinkGroupSize <= 0 || g.Count%g.LinkGroupSize != 0:
			return fmt.Errorf("%s.linkGroupSize: must divide count %d, got %d", field, g.Count, g.LinkGroupSize)
		case g.LinkType != vendors[j].LinkType:
			return fmt.Errorf("%s.linkType: %s chips have no %s links", field, g.Vendor, g.LinkType)
		}
		if g.DriverVersion == "" {
			return fmt.Errorf("%s.driverVersion: required", field)
		}
		for _, u := range g.Unhealthy {
			if u < 0 {
				return fmt.Errorf("%s.unhealthy: index %d is negative", field, u)
			}
		}
		if err := validateDeviceIPs(field, g, deviceIPs); err != nil {
			return err
		}
	}
	return nil
}

// validateDeviceIPs checks a group's deviceIPs: one interface address per
// chip, none used twice in the profile (seen holds the earlier ones).
func validateDeviceIPs(field string, g ChipGroup, seen map[netip.Addr]string) error {
	if len(g.DeviceIPs) == 0 {
		return nil
	}
	if g.Vendor != "huawei" {
		return fmt.Errorf("%s.deviceIPs: %s chips have no device IP", field, g.Vendor)
	}
	if len(g.DeviceIPs) != g.Count {
		return fmt.Errorf("%s.deviceIPs: %d addresses for %d chips, want one per chip", field, len(g.DeviceIPs), g.Count)
	}
	for j, s := range g.DeviceIPs {
		ipField := fmt.Sprintf("%s.deviceIPs[%d]", field, j)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%s: %q is not an address with prefix length (e.g. 192.168.100.101/24): %w", ipField, s, err)
		}
		if other, dup := seen[p.Addr()]; dup {
			return fmt.Errorf("%s: address %s is also %s", ipField, p.Addr(), other)
		}
		seen[p.Addr()] = ipField
	}
	return nil
}

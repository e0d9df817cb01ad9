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

// Package profilenode is a node without chips built from a hardware
// profile (demo/profiles): the discovery backend reporting the chips such
// a node would have, deterministically from the node name so every node of
// a simulated cluster has its own stable chip UUIDs, and the partition
// tool answering the vendors' partition commands on it (partitiontool.go).
// What a vendor's chips look like there is the vendor's
// vendors.ProfileNode and vendors.Partitions.ProfileNodeCommand. The
// offline allocator behind `accel-dra simulate` is pkg/simulate, which
// uses these nodes.
package profilenode

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Backend implements discovery.Backend for one node and profile.
type Backend struct {
	NodeName string
	Profile  *v1alpha1.HardwareProfile
	// Registry has the vendors whose chips the profile may hold.
	Registry vendors.Registry
	// PartitionMode is what the admin declares (--partition-mode): off
	// turns every chip's partitions off, as the real backends do.
	PartitionMode string
}

var _ discovery.Backend = &Backend{}

// New returns a backend that reports profile's chips of the vendors of reg
// for nodeName.
func New(reg vendors.Registry, nodeName string, profile *v1alpha1.HardwareProfile) *Backend {
	return &Backend{NodeName: nodeName, Profile: profile, Registry: reg}
}

// Name implements discovery.Backend.
func (b *Backend) Name() string { return "simulated profile " + b.Profile.Name }

// Discover implements discovery.Backend.
func (b *Backend) Discover(_ context.Context) (inventory.Inventory, error) {
	p := b.Profile
	inv := inventory.Inventory{SharedDeviceNodes: map[inventory.Vendor][]string{}}
	next := map[inventory.Vendor]int{}   // next chip index per vendor
	groups := map[inventory.Vendor]int{} // next link group number per vendor
	for gi, g := range p.Chips {
		vendor := inventory.Vendor(g.Vendor)
		v, ok := b.Registry.Lookup(vendor)
		if !ok {
			return inventory.Inventory{}, fmt.Errorf("profile %s: chips[%d].vendor: %q is not one of %s", p.Name, gi, g.Vendor, strings.Join(vendorValues(b.Registry), ", "))
		}
		sim := v.ProfileNode()
		version, err := discovery.SemverFromVendor(g.DriverVersion)
		if err != nil {
			return inventory.Inventory{}, fmt.Errorf("profile %s: chips[%d].driverVersion: %w", p.Name, gi, err)
		}
		unhealthy := map[int]bool{}
		for _, u := range g.Unhealthy {
			unhealthy[u] = true
		}
		for i := 0; i < g.Count; i++ {
			idx := next[vendor]
			next[vendor]++
			c := inventory.Chip{
				Vendor:        vendor,
				Model:         g.Model,
				Index:         idx,
				UUID:          chipUUID(b.NodeName, vendor, idx),
				MemoryBytes:   g.Memory.Value(),
				Cores:         g.Cores,
				LinkType:      inventory.LinkType(g.LinkType),
				DriverVersion: version,
				Healthy:       true,
				Extra:         map[string]inventory.Value{},
			}
			if i < len(g.DeviceIPs) {
				ip, err := netip.ParsePrefix(g.DeviceIPs[i])
				if err != nil {
					return inventory.Inventory{}, fmt.Errorf("profile %s: chips[%d].deviceIPs[%d]: %w", p.Name, gi, i, err)
				}
				c.DeviceIP = ip.String()
			}
			switch {
			case g.PartitionModeOff:
				c.PartitionModeOff = "the hardware profile sets partitionModeOff"
			case b.PartitionMode == vendors.PartitionModeOff:
				c.PartitionModeOff = "the node's partition mode is declared off (--partition-mode=off)"
			}
			if unhealthy[idx] {
				c.MarkUnhealthy(inventory.ReasonSimulated, "the hardware profile lists the chip as unhealthy")
			}
			if c.LinkType == inventory.LinkPCIe {
				c.LinkGroup = fmt.Sprintf("pcie-%d", idx)
			} else {
				c.LinkGroup = fmt.Sprintf("%s-%d", g.LinkType, groups[vendor]+i/g.LinkGroupSize)
			}
			if p.NUMANodes > 0 {
				numa := i * p.NUMANodes / g.Count
				c.NUMANode = &numa
			}
			// One root complex per NUMA node and a bus per chip: simulated,
			// but shaped like the sysfs of a real server.
			root := 0
			if c.NUMANode != nil {
				root = *c.NUMANode
			}
			bus := 0x10*(root+1) + idx + sim.BusOffset
			c.PCIeRoot = fmt.Sprintf("pci0000:%02x", 0x10*root)
			c.PCIBusID = fmt.Sprintf("0000:%02x:00.0", bus)
			sim.Chip(&c, vendors.ProfileGroup{ChipName: g.ChipName, MLULinkPorts: g.MLULinkPorts})
			inv.Chips = append(inv.Chips, c)
		}
		if g.LinkType != "pcie" {
			groups[vendor] += g.Count / g.LinkGroupSize
		}
		inv.SharedDeviceNodes[vendor] = sim.SharedDeviceNodes
	}
	return inv, nil
}

// chipUUID derives a stable UUID-shaped id from node, vendor and index.
func chipUUID(node string, v inventory.Vendor, idx int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", node, v, idx)))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// vendorValues lists the profile values of reg's vendors, for errors.
func vendorValues(reg vendors.Registry) []string {
	var out []string
	for _, v := range reg.All() {
		out = append(out, string(v.Names().Vendor))
	}
	sort.Strings(out)
	return out
}

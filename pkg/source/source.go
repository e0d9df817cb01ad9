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

// Package source chooses the discovery backends of a node from the flags
// both binaries share: a host root (real or fixture) read by every
// vendor's backend of Options.Registry (pkg/vendors), or a simulated hardware
// profile.
package source

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Options say where a node's chips come from.
type Options struct {
	// Registry has the vendors discovery knows (main builds it from
	// pkg/vendors/all).
	Registry vendors.Registry
	// Root is the host root directory; "/" in production.
	Root string
	// Profile, when set, simulates a node with this hardware profile
	// (bundled name or file) instead of reading Root.
	Profile string
	// NodeName seeds the simulated chip UUIDs.
	NodeName string
	// ToolOutput, when set, is a directory of recorded npu-smi and cnmon
	// output (discovery.RecordedRunner) used instead of running the tools.
	ToolOutput string
	// Vendors, when not empty, limits discovery to these vendors, by
	// their option names (vendors.Names.Option: "ascend", "cambricon"): a
	// node with both kinds of chips may serve only one.
	Vendors []string
	// Tools are the vendor tools' paths by tool name (vendors.Names.Tool:
	// "npu-smi" → /usr/local/sbin/npu-smi); a tool without an entry is
	// found in PATH.
	Tools map[string]string
	// ToolTimeout bounds each run of a vendor tool (default
	// discovery.DefaultToolTimeout).
	ToolTimeout time.Duration
	// Libraries are the paths of the vendors' management libraries
	// (vendors.BackendConfig.Library) by vendor option ("ascend" →
	// /usr/local/dcmi/libdcmi.so); a vendor without an entry uses its
	// default paths.
	Libraries map[string]string
	// LibraryCallTimeout bounds each call into a management library
	// (vendors.BackendConfig.LibraryCallTimeout; zero: the default).
	LibraryCallTimeout time.Duration
	// Opened are the vendors' libraries as the node agent's main holds
	// them (vendors.Registry.NewLibraries), by vendor option: every
	// backend made from these options, the partition tools and telemetry
	// share them (vendors.BackendConfig.Opened). Nil: each backend loads
	// its library itself, as a one-off command does.
	Opened map[string]*vendors.Library
	// PartitionMode is the partition mode the admin declares for the
	// node (vendors.BackendConfig.PartitionMode: auto, on, off; empty is
	// auto), passed to every vendor's backend.
	PartitionMode string
}

// PartitionModeHelp is the usage of the agent's --partition-mode flag.
const PartitionModeHelp = "the partition mode the admin declares for this node (Ascend vNPU docker mode, Cambricon sMLU mode), as Huawei's device plugin takes presetVirtualDevice: " +
	"auto reads it from the node where the vendor's query answers (Ascend's is refused in most containers); on declares it on; off never offers partitions. " +
	"The query, where it answers, is only a cross-check of a declared mode"

// Backends returns the backends for o. With a root, every vendor's
// backend runs: each finds nothing (without running its tool) on a node without
// its device files, so a node's vendors are detected, not configured.
func Backends(o Options) ([]discovery.Backend, error) {
	if o.Profile != "" {
		p, err := profile.Load(o.Registry, o.Profile)
		if err != nil {
			return nil, err
		}
		b := profilenode.New(o.Registry, o.NodeName, p)
		b.PartitionMode = o.PartitionMode
		return []discovery.Backend{b}, nil
	}
	if err := vendors.CheckPartitionMode(o.PartitionMode); err != nil {
		return nil, err
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	var runner discovery.CommandRunner = discovery.ExecRunner{Tools: o.ToolPaths(), Timeout: o.ToolTimeout}
	if o.ToolOutput != "" {
		runner = discovery.RecordedRunner{Dir: o.ToolOutput}
	}
	want, err := vendorSet(o.Registry, o.Vendors)
	if err != nil {
		return nil, err
	}
	var backends []discovery.Backend
	for _, v := range o.Registry.All() {
		if want[v.Names().Vendor] {
			library := o.Libraries[v.Names().Option]
			if library == "" && o.ToolOutput != "" {
				// Replayed tool output is another node's: this
				// machine's library would mix in its chips.
				library = vendors.LibraryNone
			}
			backends = append(backends, v.NewBackend(o.BackendConfig(v, root, runner, library)))
		}
	}
	return backends, nil
}

// BackendConfig is what vendor v's backends (discovery, telemetry,
// partition tool) are given on this node: root, runner and library as the
// caller resolved them, v's library as main holds it, and the options
// every backend shares.
func (o Options) BackendConfig(v vendors.Vendor, root string, runner discovery.CommandRunner, library string) vendors.BackendConfig {
	return vendors.BackendConfig{Root: root, Runner: runner, Library: library, LibraryCallTimeout: o.LibraryCallTimeout, PartitionMode: o.PartitionMode,
		Opened: o.Opened[v.Names().Option]}
}

// ToolPaths maps the vendor tools' names to the configured paths, for
// discovery.ExecRunner. Tool paths go to the runner, not the backends, so
// commands keep their names in messages and recordings.
func (o Options) ToolPaths() map[string]string {
	tools := map[string]string{}
	for name, path := range o.Tools {
		if path != "" {
			tools[name] = path
		}
	}
	return tools
}

// VendorOption is the Options.Vendors value that selects v of reg.
func VendorOption(reg vendors.Registry, v inventory.Vendor) (string, error) {
	x, ok := reg.Lookup(v)
	if !ok {
		return "", fmt.Errorf("unknown vendor %q", v)
	}
	return x.Names().Option, nil
}

// Served lists the vendors of reg that --vendors (options) selects, in
// the registry's order; empty options select all.
func Served(reg vendors.Registry, options []string) ([]inventory.Vendor, error) {
	want, err := vendorSet(reg, options)
	if err != nil {
		return nil, err
	}
	var out []inventory.Vendor
	for _, v := range reg.All() {
		if want[v.Names().Vendor] {
			out = append(out, v.Names().Vendor)
		}
	}
	return out, nil
}

// vendorSet maps --vendors to the inventory vendors of reg; empty means
// all.
func vendorSet(reg vendors.Registry, options []string) (map[inventory.Vendor]bool, error) {
	out := map[inventory.Vendor]bool{}
	if len(options) == 0 {
		for _, v := range reg.All() {
			out[v.Names().Vendor] = true
		}
		return out, nil
	}
	for _, o := range options {
		v, ok := reg.ByOption(o)
		if !ok {
			return nil, fmt.Errorf("vendors: %q is not one of %s", o, strings.Join(reg.Options(), ", "))
		}
		out[v.Names().Vendor] = true
	}
	return out, nil
}

// Discover runs the backends of o and returns the node's inventory. When
// some vendors' backends fail, it returns the chips of the others with
// the failed ones' errors (discovery.DiscoverAll).
func Discover(ctx context.Context, o Options) (inventory.Inventory, error) {
	backends, err := Backends(o)
	if err != nil {
		return inventory.Inventory{}, err
	}
	// A failed backend's error comes back with the others' chips (see
	// discovery.DiscoverAll), which are still checked and returned.
	inv, discoverErr := discovery.DiscoverAll(ctx, backends...)
	// Backends report their own vendor; a profile may name any.
	for _, c := range inv.Chips {
		if _, ok := o.Registry.Lookup(c.Vendor); !ok {
			return inventory.Inventory{}, fmt.Errorf("checking discovered inventory: chip %d: unknown vendor %q", c.Index, c.Vendor)
		}
	}
	// A simulated profile may hold both vendors: keep only the wanted ones.
	want, _ := vendorSet(o.Registry, o.Vendors)
	out := inventory.Inventory{SharedDeviceNodes: map[inventory.Vendor][]string{}}
	for _, c := range inv.Chips {
		if want[c.Vendor] {
			out.Chips = append(out.Chips, c)
		}
	}
	for v, nodes := range inv.SharedDeviceNodes {
		if want[v] {
			out.SharedDeviceNodes[v] = nodes
		}
	}
	return out, discoverErr
}

// Package source chooses the discovery backends of a node from the flags
// both binaries share: a host root (real or fixture) read by both vendor
// backends, or a simulated hardware profile.
package source

import (
	"context"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/discovery/ascend"
	"github.com/accel-dra/accel-dra/pkg/discovery/cambricon"
	"github.com/accel-dra/accel-dra/pkg/discovery/simulated"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profile"
)

// Options say where a node's chips come from.
type Options struct {
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
	// NpuSmi and Cnmon are the vendor tools' paths; default found in PATH.
	NpuSmi, Cnmon string
}

// Backends returns the backends for o. With a root, both vendor backends
// run: each finds nothing (without running its tool) on a node without
// its device files, so a node's vendors are detected, not configured.
func Backends(o Options) ([]discovery.Backend, error) {
	if o.Profile != "" {
		p, err := profile.Load(o.Profile)
		if err != nil {
			return nil, err
		}
		return []discovery.Backend{simulated.New(o.NodeName, p)}, nil
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	// Tool paths go to the runner, not the backends, so commands keep
	// their names in messages and recordings.
	tools := map[string]string{}
	if o.NpuSmi != "" {
		tools["npu-smi"] = o.NpuSmi
	}
	if o.Cnmon != "" {
		tools["cnmon"] = o.Cnmon
	}
	var runner discovery.CommandRunner = discovery.ExecRunner{Tools: tools}
	if o.ToolOutput != "" {
		runner = discovery.RecordedRunner{Dir: o.ToolOutput}
	}
	return []discovery.Backend{
		ascend.New(ascend.Config{Root: root, Runner: runner}),
		cambricon.New(cambricon.Config{Root: root, Runner: runner}),
	}, nil
}

// Discover runs the backends of o and returns the node's inventory.
func Discover(ctx context.Context, o Options) (inventory.Inventory, error) {
	backends, err := Backends(o)
	if err != nil {
		return inventory.Inventory{}, err
	}
	return discovery.DiscoverAll(ctx, backends...)
}

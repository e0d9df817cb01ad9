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

package profilenode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// PartitionStateFile is the PartitionTool's state file name in the
// plugin's state dir.
const PartitionStateFile = "fake-partitions.json"

// PartitionTool stands in for the vendors' partition tools (npu-smi, cnmon) on a
// simulated node: a discovery.CommandRunner that answers the partition
// commands the vendors' partition tools run, in the vendors' output
// formats (the same layouts as the recordings in the vendors' testdata),
// keeping the partitions in a JSON state file so they survive plugin
// restarts like real ones do. It refuses what the real driver would: a
// template the chip has not, an id outside the chip's range or in use, or
// a partition that does not fit next to the others.
//
// With Root set it also creates each partition's device node under Root as
// a character device 1:3 (a /dev/null clone, like pkg/devicefaker) and
// removes it on destroy, so CDI injection and containers work on a fake
// root.
type PartitionTool struct {
	// StatePath is the state file.
	StatePath string
	// Vendors are the vendors whose tools it answers (by vendors.Names.Tool).
	Vendors []vendors.Vendor
	// Chips are the node's chips (one vendor's or several).
	Chips []inventory.Chip
	// Root, when set, gets the partitions' device nodes.
	Root string

	mu sync.Mutex
}

var (
	_ discovery.CommandRunner       = (*PartitionTool)(nil)
	_ vendors.ProfileNodePartitions = (*node)(nil)
)

// Run implements discovery.CommandRunner.
func (f *PartitionTool) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := discovery.CommandLine(name, args...)
	for _, v := range f.Vendors {
		if p := v.Partitions(); p != nil && v.Names().Tool == name {
			return p.ProfileNodeCommand(&node{f: f, vendor: v.Names().Vendor}, cmd, args)
		}
	}
	return nil, fmt.Errorf("running %s: the simulated node has no %s", cmd, name)
}

// node is the profile node as one vendor's partitions see it during one
// command.
type node struct {
	f      *PartitionTool
	vendor inventory.Vendor
}

// Chips are the vendor's chips of the node, in the order of PartitionTool.Chips.
func (n *node) Chips() []inventory.Chip {
	var out []inventory.Chip
	for _, c := range n.f.Chips {
		if c.Vendor == n.vendor {
			out = append(out, c)
		}
	}
	return out
}

// Chip returns the vendor's chip with index.
func (n *node) Chip(index int) (inventory.Chip, bool) {
	for _, c := range n.Chips() {
		if c.Index == index {
			return c, true
		}
	}
	return inventory.Chip{}, false
}

// Load reads the partitions of the node.
func (n *node) Load() (vendors.PartitionState, error) { return n.f.load() }

// Save writes the partitions of the node.
func (n *node) Save(st vendors.PartitionState) error { return n.f.save(st) }

// Mknod creates a partition's device node p under PartitionTool.Root, if set.
func (n *node) Mknod(p string) error { return n.f.mknod(p) }

// Rmnod removes a partition's device node p under PartitionTool.Root, if set.
func (n *node) Rmnod(p string) error { return n.f.rmnod(p) }

func (f *PartitionTool) load() (vendors.PartitionState, error) {
	st := vendors.PartitionState{Partitions: map[string][]vendors.Instance{}}
	raw, err := os.ReadFile(f.StatePath)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading simulated partition state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("reading simulated partition state %s: %w", f.StatePath, err)
	}
	if st.Partitions == nil {
		st.Partitions = map[string][]vendors.Instance{}
	}
	return st, nil
}

func (f *PartitionTool) save(st vendors.PartitionState) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.StatePath), 0o750); err != nil {
		return fmt.Errorf("writing simulated partition state: %w", err)
	}
	tmp := f.StatePath + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("writing simulated partition state: %w", err)
	}
	return os.Rename(tmp, f.StatePath)
}

// Instances returns the partitions in the state file, sorted by chip and
// id, for tests and diagnostics.
func (f *PartitionTool) Instances() ([]vendors.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	var out []vendors.Instance
	for _, list := range st.Partitions {
		out = append(out, list...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		if out[i].Chip != out[j].Chip {
			return out[i].Chip < out[j].Chip
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (f *PartitionTool) mknod(p string) error {
	if f.Root == "" {
		return nil
	}
	host := filepath.Join(f.Root, p)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return fmt.Errorf("creating fake device node %s: %w", host, err)
	}
	if err := unix.Mknod(host, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating fake device node %s: %w", host, err)
	}
	// Mknod is subject to the umask.
	return os.Chmod(host, 0o666)
}

func (f *PartitionTool) rmnod(p string) error {
	if f.Root == "" || p == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(f.Root, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing fake device node: %w", err)
	}
	return nil
}

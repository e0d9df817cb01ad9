// Package partitionsim simulates the vendors' partition tools on a node
// without chips: Fake answers npu-smi's and cnmon's partition commands the
// way the vendor tools would, for the simulated node of the node agent
// (--profile) and for tests. Each vendor's command dialect lives in its
// package (Simulator); this package keeps the state and the device nodes.
package partitionsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// StateFile is the Fake's state file name in the plugin's state dir.
const StateFile = "fake-partitions.json"

// Fake stands in for the vendors' partition tools (npu-smi, cnmon) on a
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
type Fake struct {
	// StatePath is the state file.
	StatePath string
	// Chips are the node's chips (one vendor's or several).
	Chips []inventory.Chip
	// Root, when set, gets the partitions' device nodes.
	Root string

	mu sync.Mutex
}

// Simulator is a vendor's partition tool on a simulated node. A
// registered vendor implements it to have its partitions simulated; Fake
// hands it the commands run under the vendor's tool name
// (vendors.Names.Tool).
type Simulator interface {
	// SimulatePartitionCommand answers one run of the vendor's tool with
	// args (cmd is the whole command line, for messages), reading and
	// changing the partitions through n.
	SimulatePartitionCommand(n *Node, cmd string, args []string) ([]byte, error)
}

// State is the simulated partitions of a node.
type State struct {
	// Partitions by chip key "<vendor>/<index>" (Key).
	Partitions map[string][]partitions.Instance `json:"partitions"`
}

var _ discovery.CommandRunner = (*Fake)(nil)

// Error is what a failing vendor tool prints (npu-smi's status block).
func Error(cmd string, format string, args ...any) error {
	return fmt.Errorf("running %s: exit status 1: Status : Error, Message : %s", cmd, fmt.Sprintf(format, args...))
}

// Run implements discovery.CommandRunner.
func (f *Fake) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := discovery.CommandLine(name, args...)
	for _, v := range vendors.All() {
		if s, ok := v.(Simulator); ok && v.Names().Tool == name {
			return s.SimulatePartitionCommand(&Node{f: f, vendor: v.Names().Vendor}, cmd, args)
		}
	}
	return nil, fmt.Errorf("running %s: the simulated node has no %s", cmd, name)
}

// Node is the simulated node as one vendor's simulator sees it during one
// command.
type Node struct {
	f      *Fake
	vendor inventory.Vendor
}

// Chips are the vendor's chips of the node, in the order of Fake.Chips.
func (n *Node) Chips() []inventory.Chip {
	var out []inventory.Chip
	for _, c := range n.f.Chips {
		if c.Vendor == n.vendor {
			out = append(out, c)
		}
	}
	return out
}

// Chip returns the vendor's chip with index.
func (n *Node) Chip(index int) (inventory.Chip, bool) {
	for _, c := range n.Chips() {
		if c.Index == index {
			return c, true
		}
	}
	return inventory.Chip{}, false
}

// Load reads the partitions of the node.
func (n *Node) Load() (State, error) { return n.f.load() }

// Save writes the partitions of the node.
func (n *Node) Save(st State) error { return n.f.save(st) }

// Mknod creates a partition's device node p under Fake.Root, if set.
func (n *Node) Mknod(p string) error { return n.f.mknod(p) }

// Rmnod removes a partition's device node p under Fake.Root, if set.
func (n *Node) Rmnod(p string) error { return n.f.rmnod(p) }

func (f *Fake) load() (State, error) {
	st := State{Partitions: map[string][]partitions.Instance{}}
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
		st.Partitions = map[string][]partitions.Instance{}
	}
	return st, nil
}

func (f *Fake) save(st State) error {
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

// Key is a chip's key in State.Partitions.
func Key(c inventory.Chip) string { return fmt.Sprintf("%s/%d", c.Vendor, c.Index) }

// Flags turns "-t x -i 0" into a map; every flag takes a value except
// verbs (cnmon's --list), which map to "".
func Flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[a] = args[i+1]
			i++
			continue
		}
		out[a] = ""
	}
	return out
}

// Without returns list without the instance with id, and that instance
// (nil if list has none).
func Without(list []partitions.Instance, id int) ([]partitions.Instance, *partitions.Instance) {
	var removed *partitions.Instance
	out := make([]partitions.Instance, 0, len(list))
	for i := range list {
		if list[i].ID == id && removed == nil {
			removed = &list[i]
			continue
		}
		out = append(out, list[i])
	}
	return out, removed
}

// Usage sums what the partitions in list take from chip c.
func Usage(c inventory.Chip, list []partitions.Instance) partitions.Counters {
	var u partitions.Counters
	for _, p := range list {
		if t, ok := partitions.TemplateByName(c, p.Template); ok {
			u.Cores += t.Cores
			u.MemoryBytes += t.MemoryBytes
			u.AICPUs += t.AICPUs
		}
	}
	return u
}

// Fits checks that one more partition of t fits next to list on chip c.
func Fits(c inventory.Chip, list []partitions.Instance, t partitions.Template) error {
	u := Usage(c, list)
	total := partitions.CountersOf(c)
	switch {
	case u.Cores+t.Cores > total.Cores:
		return fmt.Errorf("not enough AI cores left on chip %d for %s: %d of %d in use", c.Index, t.Name, u.Cores, total.Cores)
	case u.MemoryBytes+t.MemoryBytes > total.MemoryBytes:
		return fmt.Errorf("not enough memory left on chip %d for %s", c.Index, t.Name)
	case total.AICPUs > 0 && u.AICPUs+t.AICPUs > total.AICPUs:
		return fmt.Errorf("not enough AI CPUs left on chip %d for %s: %d of %d in use", c.Index, t.Name, u.AICPUs, total.AICPUs)
	}
	return nil
}

// Instances returns the partitions in the state file, sorted by chip and
// id, for tests and diagnostics.
func (f *Fake) Instances() ([]partitions.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	var out []partitions.Instance
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

func (f *Fake) mknod(p string) error {
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

func (f *Fake) rmnod(p string) error {
	if f.Root == "" || p == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(f.Root, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing fake device node: %w", err)
	}
	return nil
}

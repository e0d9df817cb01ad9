package partitions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// FakeStateFile is the Fake's state file name in the plugin's state dir.
const FakeStateFile = "fake-partitions.json"

// Fake stands in for npu-smi and cnmon on a simulated node: a
// discovery.CommandRunner that answers the partition commands AscendTool
// and CambriconTool run, in the vendors' output formats (the same layouts
// as the recordings in testdata), keeping the partitions in a JSON state
// file so they survive plugin restarts like real ones do. It refuses what
// the real driver would: a template the chip has not, a vNPU id outside
// the chip's range or in use, or a partition that does not fit next to
// the others.
//
// With Root set it also creates each partition's device node under Root as
// a character device 1:3 (a /dev/null clone, like pkg/devicefaker) and
// removes it on destroy, so CDI injection and containers work on a fake
// root.
type Fake struct {
	// StatePath is the state file.
	StatePath string
	// Chips are the node's chips (one vendor's or both).
	Chips []inventory.Chip
	// Root, when set, gets the partitions' device nodes.
	Root string

	mu sync.Mutex
}

type fakeState struct {
	// Partitions by chip key "<vendor>/<index>".
	Partitions map[string][]Instance `json:"partitions"`
}

var _ discovery.CommandRunner = (*Fake)(nil)

// fakeError is what a failing vendor tool prints (npu-smi's status block).
func fakeError(cmd string, format string, args ...any) error {
	return fmt.Errorf("running %s: exit status 1: Status : Error, Message : %s", cmd, fmt.Sprintf(format, args...))
}

// Run implements discovery.CommandRunner.
func (f *Fake) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := discovery.CommandLine(name, args...)
	switch name {
	case NpuSmi:
		return f.npuSmi(cmd, args)
	case Cnmon:
		return f.cnmon(cmd, args)
	}
	return nil, fmt.Errorf("running %s: the simulated node has no %s", cmd, name)
}

func (f *Fake) load() (fakeState, error) {
	st := fakeState{Partitions: map[string][]Instance{}}
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
		st.Partitions = map[string][]Instance{}
	}
	return st, nil
}

func (f *Fake) save(st fakeState) error {
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

func (f *Fake) chip(v inventory.Vendor, index int) (inventory.Chip, bool) {
	for _, c := range f.Chips {
		if c.Vendor == v && c.Index == index {
			return c, true
		}
	}
	return inventory.Chip{}, false
}

func chipKey(c inventory.Chip) string { return fmt.Sprintf("%s/%d", c.Vendor, c.Index) }

// flags turns "-t x -i 0" into a map; every flag takes a value except the
// cnmon verbs, which map to "".
func flags(args []string) map[string]string {
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

func (f *Fake) npuSmi(cmd string, args []string) ([]byte, error) {
	fl := flags(args)
	if len(args) == 2 && args[0] == "info" && args[1] == "-m" {
		return f.npuSmiMapping(), nil
	}
	if len(args) == 0 {
		return nil, fakeError(cmd, "unsupported command")
	}
	// Simulated chips: NPU ID = physical index, chip 0 (as on 8-card
	// training servers, testdata/ascend/npu-smi_info_-m.txt).
	npu, err := strconv.Atoi(fl["-i"])
	if err != nil || fl["-c"] != "0" {
		return nil, fakeError(cmd, "invalid -i/-c")
	}
	c, ok := f.chip(inventory.VendorHuawei, npu)
	if !ok {
		return nil, fakeError(cmd, "device %d does not exist", npu)
	}
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	switch {
	case args[0] == "info" && fl["-t"] == "info-vnpu":
		return f.vnpuInfo(c, st.Partitions[chipKey(c)]), nil
	case args[0] == "set" && fl["-t"] == "create-vnpu":
		t, ok := TemplateByName(c, fl["-f"])
		if !ok || t.Type != TypeVNPU {
			return nil, fakeError(cmd, "the vnpu template %s is not supported", fl["-f"])
		}
		id, err := strconv.Atoi(fl["-v"])
		first, size := VNPUIDRange(c)
		if err != nil || id < first || id >= first+size {
			return nil, fakeError(cmd, "the vnpu id %s is out of range [%d, %d]", fl["-v"], first, first+size-1)
		}
		for _, list := range st.Partitions {
			for _, p := range list {
				if p.Type == TypeVNPU && p.ID == id {
					return nil, fakeError(cmd, "the vnpu id %d already exists", id)
				}
			}
		}
		if err := fits(c, st.Partitions[chipKey(c)], t); err != nil {
			return nil, fakeError(cmd, "%v", err)
		}
		inst := vnpuInstance(c, id, t.Name)
		if err := f.mknod(inst.DeviceNode); err != nil {
			return nil, err
		}
		st.Partitions[chipKey(c)] = append(st.Partitions[chipKey(c)], inst)
		if err := f.save(st); err != nil {
			return nil, err
		}
		return []byte("\tStatus                         : OK\n\tMessage                        : Create vnpu success\n"), nil
	case args[0] == "set" && fl["-t"] == "destroy-vnpu":
		id, err := strconv.Atoi(fl["-v"])
		if err != nil {
			return nil, fakeError(cmd, "invalid vnpu id")
		}
		list, removed := without(st.Partitions[chipKey(c)], id)
		if removed == nil {
			return nil, fakeError(cmd, "the vnpu %d does not exist", id)
		}
		st.Partitions[chipKey(c)] = list
		if err := f.save(st); err != nil {
			return nil, err
		}
		if err := f.rmnod(removed.DeviceNode); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("\tStatus                         : OK\n\tMessage                        : Destroy vnpu %d success\n", id)), nil
	}
	return nil, fakeError(cmd, "unsupported command")
}

func (f *Fake) npuSmiMapping() []byte {
	var b strings.Builder
	b.WriteString("\tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name                     \n")
	for _, c := range f.Chips {
		if c.Vendor != inventory.VendorHuawei {
			continue
		}
		logic := int64(c.Index)
		if v, ok := c.Extra["logicId"]; ok && v.Int != nil {
			logic = *v.Int
		}
		name := c.Model
		if v, ok := c.Extra["chipName"]; ok && v.String != nil {
			name = "Ascend " + *v.String
		}
		fmt.Fprintf(&b, "\t%-30d %-30d %-30d %s\n", c.Index, 0, logic, name)
	}
	return []byte(b.String())
}

func (f *Fake) vnpuInfo(c inventory.Chip, list []Instance) []byte {
	used := usage(c, list)
	total := CountersOf(c)
	rule := "+-------------------------------------------------------------------------------+\n"
	var b strings.Builder
	b.WriteString(rule)
	b.WriteString("| NPU resource static info as follow:                                           |\n")
	b.WriteString("| Format:Free/Total                   NA: Currently, query is not supported.    |\n")
	b.WriteString("| AICORE    Memory    AICPU    VPC    VENC    VDEC    JPEGD    JPEGE    PNGD    |\n")
	b.WriteString("|            GB                                                                 |\n")
	b.WriteString("|===============================================================================|\n")
	cell := func(free, tot int64) string {
		if tot == 0 {
			return "NA/NA"
		}
		return fmt.Sprintf("%d/%d", free, tot)
	}
	fmt.Fprintf(&b, "| %-9s %-9s %-8s %-6s %-7s %-7s %-8s %-8s %-8s|\n",
		cell(total.Cores-used.Cores, total.Cores), cell((total.MemoryBytes-used.MemoryBytes)>>30, total.MemoryBytes>>30),
		cell(total.AICPUs-used.AICPUs, total.AICPUs), "NA/NA", "NA/NA", "NA/NA", "NA/NA", "NA/NA", "NA/NA")
	b.WriteString(rule)
	fmt.Fprintf(&b, "| Total number of vnpu: %-2d                                                      |\n", len(list))
	b.WriteString(rule)
	b.WriteString("|  Vnpu ID  |  Vgroup ID     |  Container ID  |  Status  |  Template Name       |\n")
	b.WriteString(rule)
	for i, p := range list {
		fmt.Fprintf(&b, "|  %-8d |  %-13d |  %-13s |  %-7d |  %-19s |\n", p.ID, i, "000000000000", 0, p.Template)
		b.WriteString(rule)
	}
	return []byte(b.String())
}

func (f *Fake) cnmon(cmd string, args []string) ([]byte, error) {
	fl := flags(args)
	if len(args) == 0 || args[0] != "smlu" {
		return nil, fakeError(cmd, "unsupported command")
	}
	card, err := strconv.Atoi(fl["-c"])
	if err != nil {
		return nil, fakeError(cmd, "invalid card")
	}
	c, ok := f.chip(inventory.VendorCambricon, card)
	if !ok {
		return nil, fakeError(cmd, "card %d does not exist", card)
	}
	if _, ok := ModelOf(c); !ok {
		return nil, fakeError(cmd, "card %d (%s) does not support sMLU", card, c.Model)
	}
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	list := st.Partitions[chipKey(c)]
	_, create := fl["--create"]
	_, destroy := fl["--destroy"]
	_, listing := fl["--list"]
	switch {
	case listing:
		var b strings.Builder
		fmt.Fprintf(&b, "Card: %d\nTotal sMLU instances: %d\n", card, len(list))
		fmt.Fprintf(&b, "%-13s%-13s%-16s%-42s%s\n", "Instance ID", "Profile ID", "Profile Name", "UUID", "Device Node")
		for _, p := range list {
			fmt.Fprintf(&b, "%-13d%-13d%-16s%-42s%s\n", p.ID, profileID(c, p.Template), p.Template, p.UUID, p.DeviceNode)
		}
		return []byte(b.String()), nil
	case create:
		t, ok := TemplateByName(c, fl["--profile"])
		if !ok || t.Type != TypeSMLU {
			return nil, fakeError(cmd, "profile %s does not exist on card %d", fl["--profile"], card)
		}
		if err := fits(c, list, t); err != nil {
			return nil, fakeError(cmd, "%v", err)
		}
		// Instance ids start at 1 (mi0 is the physical function).
		used := map[int]bool{}
		for _, p := range list {
			used[p.ID] = true
		}
		id := 1
		for used[id] {
			id++
		}
		inst := Instance{Type: TypeSMLU, Chip: card, Template: t.Name, ID: id,
			DeviceNode: fmt.Sprintf("/dev/cambricon-caps/cap_dev%d_mi%d", card, id),
			UUID:       fmt.Sprintf("MLU-%08x-%04x-0000-0000-000000000000", card+1, id)}
		if err := f.mknod(inst.DeviceNode); err != nil {
			return nil, err
		}
		st.Partitions[chipKey(c)] = append(list, inst)
		if err := f.save(st); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("Create sMLU instance %d success\n", id)), nil
	case destroy:
		id, err := strconv.Atoi(fl["--instance"])
		if err != nil {
			return nil, fakeError(cmd, "invalid instance")
		}
		rest, removed := without(list, id)
		if removed == nil {
			return nil, fakeError(cmd, "sMLU instance %d does not exist on card %d", id, card)
		}
		st.Partitions[chipKey(c)] = rest
		if err := f.save(st); err != nil {
			return nil, err
		}
		if err := f.rmnod(removed.DeviceNode); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("Destroy sMLU instance %d success\n", id)), nil
	}
	return nil, fakeError(cmd, "unsupported command")
}

// profileID numbers the default profiles as the driver does: 0 the whole
// chip, 1 the half, 2 the quarter.
func profileID(c inventory.Chip, name string) int {
	m, _ := ModelOf(c)
	for i, t := range m.Templates {
		if t.Name == name {
			return len(m.Templates) - i
		}
	}
	return 0
}

func without(list []Instance, id int) ([]Instance, *Instance) {
	var removed *Instance
	out := make([]Instance, 0, len(list))
	for i := range list {
		if list[i].ID == id && removed == nil {
			removed = &list[i]
			continue
		}
		out = append(out, list[i])
	}
	return out, removed
}

// usage sums what the partitions in list take from chip c.
func usage(c inventory.Chip, list []Instance) Counters {
	var u Counters
	for _, p := range list {
		if t, ok := TemplateByName(c, p.Template); ok {
			u.Cores += t.Cores
			u.MemoryBytes += t.MemoryBytes
			u.AICPUs += t.AICPUs
		}
	}
	return u
}

// fits checks that one more partition of t fits next to list on chip c.
func fits(c inventory.Chip, list []Instance, t Template) error {
	u := usage(c, list)
	total := CountersOf(c)
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
func (f *Fake) Instances() ([]Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.load()
	if err != nil {
		return nil, err
	}
	var out []Instance
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

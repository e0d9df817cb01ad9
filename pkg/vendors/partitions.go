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

package vendors

import (
	"context"
	"fmt"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// Partitions is the partition knowledge of a vendor whose chips can be
// cut into partitions (docs/partitions.md); Vendor.Partitions returns nil
// for a vendor whose chips have none, which then publishes whole chips
// and shares only.
type Partitions interface {
	// Model returns the partition facts of chip c (cores and memory
	// known), or false when its model has no partitions.
	Model(c inventory.Chip) (PartitionModel, bool)
	// NewTool returns the tool that makes, lists and removes partitions:
	// through the vendor's management library (cfg.Opened where main
	// holds it, else the one at cfg.Library: "" the vendor's default
	// paths under cfg.Root, LibraryNone never) where it loads, else by
	// running the vendor's tool through cfg.Runner.
	NewTool(cfg BackendConfig) PartitionTool
	// Edits returns what a container of partition inst of chip c gets, as
	// the vendor's device plugin gives it.
	Edits(c inventory.Chip, inst Instance) (PartitionEdits, error)
	// ProfileNodeCommand answers one run of the vendor's tool with args on
	// a node built from a hardware profile (cmd is the whole command line,
	// for messages), reading and changing the partitions through n.
	ProfileNodeCommand(n ProfileNodePartitions, cmd string, args []string) ([]byte, error)
}

// PartitionModelOf returns the partition facts of chip c of vendor v, or
// false when the vendor has no partitions, the chip's model has none, or
// the chip's cores or memory are unknown.
func PartitionModelOf(v Vendor, c inventory.Chip) (PartitionModel, bool) {
	if v == nil || c.Cores <= 0 || c.MemoryBytes <= 0 {
		return PartitionModel{}, false
	}
	p := v.Partitions()
	if p == nil {
		return PartitionModel{}, false
	}
	return p.Model(c)
}

// Template is one partition shape a chip supports.
type Template struct {
	// Name is the vendor's name of the shape: the npu-smi template
	// (vir04, vir05_1c_16g) or the sMLU profile ("50p.11654mb", the
	// driver's "<ipu quota %>p.<memory MiB>mb").
	Name string
	// Type is the accel-dra.dev/type of its partitions, the vendor's
	// partition kind ("vnpu", "smlu").
	Type string
	// Slug names the partition devices: <chip>-<slug>-<k>, a DNS label.
	Slug string
	// Cores, MemoryBytes and AICPUs are what one partition takes from the
	// chip's counters; AICPUs is 0 where the chip has no aicpu counter.
	Cores       int64
	MemoryBytes int64
	AICPUs      int64
}

// Counters are the totals of a chip's counter set.
type Counters struct {
	Cores       int64
	MemoryBytes int64
	// AICPUs is 0 when the chip's AI CPUs are not counted.
	AICPUs int64
}

// Fits says how many partitions of t fit on an empty chip with counters c.
func (c Counters) Fits(t Template) int {
	n := -1
	limit := func(have, need int64) {
		if need <= 0 {
			return
		}
		if k := int(have / need); n < 0 || k < n {
			n = k
		}
	}
	limit(c.Cores, t.Cores)
	limit(c.MemoryBytes, t.MemoryBytes)
	if c.AICPUs > 0 {
		limit(c.AICPUs, t.AICPUs)
	}
	if n < 0 {
		return 0
	}
	return n
}

// PartitionModel is the partition facts of one chip model.
type PartitionModel struct {
	// AICPUs is the chip's AI CPU count where templates take AI CPUs
	// (Ascend); 0 leaves the aicpu counter out.
	AICPUs int64
	// MaxInstances bounds the partitions of one chip (the vNPU id range,
	// the sMLU default profiles); 0 means no bound beyond the counters.
	MaxInstances int
	// Templates are the shapes, smallest first.
	Templates []Template
}

// Counters returns the counter set totals of chip c of the model.
func (m PartitionModel) Counters(c inventory.Chip) Counters {
	return Counters{Cores: int64(c.Cores), MemoryBytes: c.MemoryBytes, AICPUs: m.AICPUs}
}

// Template finds a template of the model by its vendor name.
func (m PartitionModel) Template(name string) (Template, bool) {
	for _, t := range m.Templates {
		if t.Name == name {
			return t, true
		}
	}
	return Template{}, false
}

// Slot is one partition device a chip publishes: the k-th partition of a
// template.
type Slot struct {
	Template Template
	// K numbers the slots of one template from 0.
	K int
}

// Slots lists the partition devices of chip c of the model: for every
// template as many as fit on the empty chip (the counters keep their sum
// in bounds).
func (m PartitionModel) Slots(c inventory.Chip) []Slot {
	counters := m.Counters(c)
	var out []Slot
	for _, t := range m.Templates {
		n := counters.Fits(t)
		if m.MaxInstances > 0 && n > m.MaxInstances {
			n = m.MaxInstances
		}
		for k := 0; k < n; k++ {
			out = append(out, Slot{Template: t, K: k})
		}
	}
	return out
}

// Usage sums what the partitions in list take from a chip of the model.
func (m PartitionModel) Usage(list []Instance) Counters {
	templates := make([]string, len(list))
	for i, p := range list {
		templates[i] = p.Template
	}
	return m.UsageOf(templates)
}

// UsageOf sums what partitions of the named templates take from a chip
// of the model; a name the model does not know takes nothing.
func (m PartitionModel) UsageOf(templates []string) Counters {
	var u Counters
	for _, name := range templates {
		if t, ok := m.Template(name); ok {
			u.Cores += t.Cores
			u.MemoryBytes += t.MemoryBytes
			u.AICPUs += t.AICPUs
		}
	}
	return u
}

// FitsNextTo checks that one more partition of t fits next to list on
// chip c of the model.
func (m PartitionModel) FitsNextTo(c inventory.Chip, list []Instance, t Template) error {
	return m.FitsWith(c, m.Usage(list), t)
}

// FitsWith is the one rule for whether a partition fits its chip: one
// more partition of t fits on chip c of the model next to partitions
// that take u. The node agent checks a claim's partitions with it before
// the vendor tool runs, and the simulated tool before it makes one.
func (m PartitionModel) FitsWith(c inventory.Chip, u Counters, t Template) error {
	total := m.Counters(c)
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

// Instance is a partition that exists on a chip. It is what the plugin
// records in its checkpoint (before it answers the kubelet) and what it
// needs to destroy the partition again.
type Instance struct {
	// Type is the template's Type.
	Type string `json:"type"`
	// Chip is the index of the parent chip (the N of /dev/davinciN,
	// /dev/cambricon_devN).
	Chip int `json:"chip"`
	// Template is the vendor's template or profile name.
	Template string `json:"template"`
	// ID is the vNPU id (npu-smi -v) or the sMLU instance id (the K of
	// cap_devN_miK).
	ID int `json:"id"`
	// DeviceNode is the partition's own device file on the host:
	// /dev/vdavinci<id> or /dev/cambricon-caps/cap_dev<N>_mi<K>.
	DeviceNode string `json:"deviceNode"`
	// UUID is the instance's UUID where the tool reports one (sMLU).
	UUID string `json:"uuid,omitempty"`
}

// String names an instance for logs and errors.
func (i Instance) String() string {
	return fmt.Sprintf("%s %d (%s) on chip %d", i.Type, i.ID, i.Template, i.Chip)
}

// PartitionTool makes, lists and removes the partitions of a vendor's
// chips with the vendor's library or tool (the real tool, recorded output
// in tests, or a profile node's).
type PartitionTool interface {
	// Create makes a partition of template t on chip c.
	Create(ctx context.Context, c inventory.Chip, t Template) (Instance, error)
	// Destroy removes a partition; one that no longer exists is not an
	// error, so Unprepare can be retried.
	Destroy(ctx context.Context, c inventory.Chip, inst Instance) error
	// List returns the partitions that exist on chip c, whoever made them.
	List(ctx context.Context, c inventory.Chip) ([]Instance, error)
}

// DeviceNode is one device file a container gets: Path inside the
// container, HostPath on the node (both absolute, as seen from /).
type DeviceNode struct {
	Path     string
	HostPath string
}

// PartitionEdits are what a container needs to use a partition.
type PartitionEdits struct {
	// DeviceNodes replace the parent chip's own nodes.
	DeviceNodes []DeviceNode
	// VisibleID is the id the vendor's visible-devices variable lists for
	// the partition (ASCEND_VISIBLE_DEVICES, CAMBRICON_VISIBLE_DEVICES).
	VisibleID int
	// Virtual says the id is a virtual device (an Ascend vNPU): a claim of
	// only such partitions gets the vendor's CDIEdits.VirtualEnv.
	Virtual bool
	// NotVisible says the vendor's visible-devices variable does not list
	// the partition at all, as the vendor's device plugin never sets it
	// for one (a Cambricon sMLU); VisibleID is then unused.
	NotVisible bool
}

// FindInstance returns the instance with id among insts: the vendor tools
// confirm a create and skip destroying what is already gone by listing
// the chip.
func FindInstance(insts []Instance, id int) (Instance, bool) {
	for _, e := range insts {
		if e.ID == id {
			return e, true
		}
	}
	return Instance{}, false
}

// Created names a tool's partition kind in ConfirmCreated's errors: the
// tool (npu-smi), the partition kind (vNPU) and what the vendor calls a
// template (template, profile).
type Created struct {
	Tool, Kind, Template string
}

// ConfirmCreated lists the chip's partitions after the tool reported
// partition id created, and returns it if it exists with the template
// asked for.
func ConfirmCreated(ctx context.Context, tool PartitionTool, c inventory.Chip, id int, template string, w Created) (Instance, error) {
	after, err := tool.List(ctx, c)
	if err != nil {
		return Instance{}, fmt.Errorf("checking the new %s %d on chip %d: %w", w.Kind, id, c.Index, err)
	}
	e, ok := FindInstance(after, id)
	if !ok {
		return Instance{}, fmt.Errorf("%s reported %s %d on chip %d created, but does not list it", w.Tool, w.Kind, id, c.Index)
	}
	if e.Template != template {
		return Instance{}, fmt.Errorf("created %s %d on chip %d with %s %s, but %s lists it as %s", w.Kind, id, c.Index, w.Template, template, w.Tool, e.Template)
	}
	return e, nil
}

// ShareGrid is how a vendor's driver carves a share of a Shared chip
// into a partition at prepare: a share takes a whole number of memory
// steps and of cores steps, at least one of each. The chip's request
// policy publishes the grid (validRange with these steps), so the
// scheduler charges each share exactly what the driver makes of it.
type ShareGrid struct {
	// MemoryStep is the memory unit in bytes; MaxMemory, a multiple of
	// it, the most a share takes: asking for it is asking for the whole
	// chip (Whole).
	MemoryStep, MaxMemory int64
	// CoresStep is the cores unit; MaxCores, a multiple of it, the chip's
	// cores.
	CoresStep, MaxCores int64
	// Units is set where the driver carves only fixed templates (Ascend
	// vNPUs): a share is a number of units, one of Units.Sizes, and the
	// steps above are one unit's.
	Units *UnitGrid
}

// UnitGrid is the grid of a chip whose driver makes partitions of fixed
// templates only, every one of them a whole number of one unit of cores
// and memory. A request policy rounds each capacity on its own, so
// separate cores and memory requests could ask for a pair no template
// has; the chip therefore publishes one capacity counted in units
// (names.CapShareUnits) whose valid values are the templates' sizes, and
// its cores and memory follow from the units a share takes.
type UnitGrid struct {
	// Cores and MemoryBytes are one unit's.
	Cores, MemoryBytes int64
	// Sizes are the unit counts a share can take, ascending: one per
	// template, and last the whole chip (no partition).
	Sizes []int64
	// Templates are the template of each size but the last.
	Templates []Template
}

// Whole is the units of the whole chip: a share of them gets the chip.
func (u UnitGrid) Whole() int64 { return u.Sizes[len(u.Sizes)-1] }

// Share returns the memory and cores of a share of units on chip c: the
// whole chip's from Whole up.
func (u UnitGrid) Share(c inventory.Chip, units int64) (memory, cores int64) {
	if units >= u.Whole() {
		return c.MemoryBytes, int64(c.Cores)
	}
	return units * u.MemoryBytes, units * u.Cores
}

// Template returns the template of a share of units, or an error naming
// the templates there are.
func (u UnitGrid) Template(units int64) (Template, error) {
	for i, t := range u.Templates {
		if u.Sizes[i] == units {
			return t, nil
		}
	}
	return Template{}, fmt.Errorf("%d units is no template's size; the sizes are %s", units, u.Describe())
}

// Describe lists the sizes: "1 (vir05_1c_16g: 5 cores, 16Gi), 2
// (vir10_3c_32g: 10 cores, 32Gi) or 4 (the whole chip)".
func (u UnitGrid) Describe() string {
	parts := make([]string, 0, len(u.Sizes))
	for i, t := range u.Templates {
		parts = append(parts, fmt.Sprintf("%d (%s: %d cores, %dMi)", u.Sizes[i], t.Name, t.Cores, t.MemoryBytes>>20))
	}
	parts = append(parts, fmt.Sprintf("%d (the whole chip)", u.Whole()))
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// Whole says whether a share that takes memory bytes is the whole chip:
// no other share fits next to it, so it gets the chip and no partition.
func (g ShareGrid) Whole(memory int64) bool { return memory >= g.MaxMemory }

// Check says why a share of memory bytes and cores is not on the grid.
func (g ShareGrid) Check(memory, cores int64) error {
	switch {
	case memory < g.MemoryStep || memory > g.MaxMemory || memory%g.MemoryStep != 0:
		return fmt.Errorf("memory %d bytes is not a multiple of %d bytes from %d to %d, the sizes the driver carves", memory, g.MemoryStep, g.MemoryStep, g.MaxMemory)
	case cores < g.CoresStep || cores > g.MaxCores || cores%g.CoresStep != 0:
		return fmt.Errorf("%d cores is not a multiple of %d from %d to %d, the quotas the driver carves", cores, g.CoresStep, g.CoresStep, g.MaxCores)
	}
	return nil
}

// ModelShares is implemented by the SizedPartitions of a vendor whose
// shares are partitions of fixed templates (UnitGrid), where the grid
// follows from the model: the webhook checks the claims of a DeviceClass
// that names the model (ModelClassName) against it at apply, before any
// node's request policy does.
type ModelShares interface {
	// ModelUnitGrid returns the grid of a chip of model, or false where
	// its shares are not counted in units.
	ModelUnitGrid(model string) (UnitGrid, bool)
}

// ModelClassName is the DeviceClass of the whole chips of one model that
// hack/gen-deviceclasses and the chart write: the model lowercased, "_" as
// "-" (a DeviceClass name cannot hold it), with the domain.
func ModelClassName(model string) string {
	return strings.ReplaceAll(strings.ToLower(model), "_", "-") + "." + names.Domain
}

// SizedPartitions is implemented by the Partitions of a vendor whose
// driver makes a partition of any size on its grid at run time (Cambricon
// dynamic sMLU profiles): a Shared chip then stays one device with
// consumable capacity, and each share of it that is not the whole chip
// becomes a partition of the share's size, made at prepare with the
// vendor's PartitionTool and destroyed at unprepare like a Partitioned
// chip's (docs/partitions.md).
type SizedPartitions interface {
	// ShareGrid returns the grid of chip c, or false where the vendor's
	// driver cannot carve its shares (a model without partitions, a
	// library without the dynamic calls): its shares stay accounting
	// only.
	ShareGrid(c inventory.Chip) (ShareGrid, bool)
	// SizedTemplate returns the template of a partition of chip c that
	// takes memory bytes and cores, a point of its grid: what the
	// vendor's PartitionTool.Create makes.
	SizedTemplate(c inventory.Chip, memory, cores int64) (Template, error)
}

// ShareGridOf returns the grid of chip c of vendor v and the vendor's
// sized partitions, or false when the vendor cannot carve shares of it.
func ShareGridOf(v Vendor, c inventory.Chip) (ShareGrid, SizedPartitions, bool) {
	if v == nil || c.Cores <= 0 || c.MemoryBytes <= 0 {
		return ShareGrid{}, nil, false
	}
	s, ok := v.Partitions().(SizedPartitions)
	if !ok {
		return ShareGrid{}, nil, false
	}
	g, ok := s.ShareGrid(c)
	if !ok || g.MemoryStep <= 0 || g.CoresStep <= 0 {
		return ShareGrid{}, nil, false
	}
	return g, s, true
}

// GCD is the greatest common divisor of a and b (b of 0 gives a): the
// step a share grid's sizes are multiples of.
func GCD(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

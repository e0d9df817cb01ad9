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

package driver

// check.go is prepare's first phase: it checks a claim's allocation
// results against this node and what the prepared claims hold, and plans
// what each result becomes, changing nothing on the node.

import (
	"errors"
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// claimPlan is a checked claim: what each of its results for this driver
// becomes (devices[i] is results[i]).
type claimPlan struct {
	claim   *resourceapi.ResourceClaim
	devices []plannedDevice
	// had: the checkpoint lists the claim already (a kubelet retry, a
	// restart), with a CDI spec of the same IDs.
	had bool
}

// plannedDevice is what one allocation result becomes: its CDI device and
// its checkpoint entry, completed by the later phases.
type plannedDevice struct {
	result resourceapi.DeviceRequestAllocationResult
	dev    cdi.Device
	entry  checkpoint.Device
	// create is the partition to make for it; nil when there is none or
	// an earlier prepare made it.
	create *slot
	// virtual: a vNPU, for the Ascend runtime's VIRTUAL option.
	virtual bool
}

// planner checks a claim's results in order: u is what the other claims
// hold plus the results checked so far.
type planner struct {
	d       *Driver
	plan    *claimPlan
	configs map[string]requestConfig
	u       usage
	// earlier are the devices of the claim's earlier prepare, by name,
	// and its shares by share ID.
	earlier       map[string]checkpoint.Device
	earlierShares map[types.UID]checkpoint.Device
	// seen is the first result of each device.
	seen map[string]int
}

// check is the first phase of prepare: it refuses what this node cannot
// or must not give (the scheduler's view may be stale) before anything
// is made.
func (d *Driver) check(claim *resourceapi.ResourceClaim) (*claimPlan, error) {
	if claim.Status.Allocation == nil {
		return nil, errors.New("not allocated")
	}
	results, err := d.ourResults(claim)
	if err != nil {
		return nil, err
	}
	configs, err := d.requestConfigs(claim, results)
	if err != nil {
		return nil, err
	}
	prev, had := d.prepared.Claims[claim.UID]
	pl := planner{d: d, plan: &claimPlan{claim: claim, had: had, devices: make([]plannedDevice, 0, len(results))}, configs: configs, u: d.usage(claim.UID),
		earlier: map[string]checkpoint.Device{}, earlierShares: map[types.UID]checkpoint.Device{}, seen: map[string]int{}}
	for _, dev := range prev.Devices {
		pl.earlier[dev.Device] = dev
		if dev.Share != nil {
			pl.earlierShares[dev.Share.ID] = dev
		}
	}
	for i, r := range results {
		if err := pl.add(i, r); err != nil {
			return nil, err
		}
	}
	pl.plan.nameAdminDevices()
	return pl.plan, nil
}

// add checks results[i] and plans it.
func (pl *planner) add(i int, r resourceapi.DeviceRequestAllocationResult) error {
	d := pl.d
	field := fmt.Sprintf("status.allocation.devices.results[%d]", i)
	cfg := pl.configs[r.Request]
	if isAdmin(r) {
		dev, entry, err := d.planAdmin(field, r, cfg.env)
		if err != nil {
			return err
		}
		pl.plan.devices = append(pl.plan.devices, plannedDevice{result: r, dev: dev, entry: entry})
		return nil
	}
	j, again := pl.seen[r.Device]
	if again && !d.isShared(r.Device) {
		return fmt.Errorf("%s: device %s is allocated twice in this claim (also results[%d])", field, r.Device, j)
	}
	if !again {
		pl.seen[r.Device] = i
	}
	p := plannedDevice{result: r, dev: cdi.Device{Name: r.Device, Env: cfg.env},
		entry: checkpoint.Device{Kind: checkpoint.KindChip, Request: r.Request, Pool: r.Pool, Device: r.Device}}
	var err error
	if chip, ok := d.chips[r.Device]; ok {
		p.dev.Chip = chip
		if d.modes[r.Device] == partitions.ModeShared && r.ShareID != nil {
			err = pl.share(field, i, &p, chip, cfg.strategy, again)
		} else if err = d.checkWhole(pl.u, r.Device, chip); err == nil {
			pl.u.devices[r.Device] = append(pl.u.devices[r.Device], holder{uid: pl.plan.claim.UID, result: i})
		}
	} else if sl, ok := d.slots[r.Device]; ok {
		err = pl.partition(i, &p, sl)
	} else {
		err = fmt.Errorf("%s: device %q is not a chip of %s on node %s (nor a partition of one)", field, r.Device, d.name, d.node)
	}
	if err != nil {
		return err
	}
	pl.plan.devices = append(pl.plan.devices, p)
	return nil
}

// share plans a share of a Shared chip: the capacity the scheduler gave
// it, if it fits next to the chip's other shares, and, where the
// vendor's driver carves shares, the partition to make for it.
func (pl *planner) share(field string, i int, p *plannedDevice, chip inventory.Chip, strategy v1alpha1.SharingStrategy, again bool) error {
	r := p.result
	memory := consumed(r, names.CapMemory, chip.MemoryBytes)
	cores := consumed(r, names.CapCores, int64(chip.Cores))
	grid, sized, enforced := pl.d.policy.ShareGrid(chip)
	var units int64
	if enforced && grid.Units != nil {
		// A chip of fixed templates is charged in units: the share's cores
		// and memory follow from them.
		units = consumed(r, names.CapShareUnits, grid.Units.Whole())
		memory, cores = grid.Units.Share(chip, units)
	}
	whole := memory >= chip.MemoryBytes || (enforced && grid.Whole(memory))
	if !whole && strategy == v1alpha1.SharingExclusive {
		return fmt.Errorf("%s: device %s is a share (%s of %s memory) of a shared chip, but the config of request %q says sharing.strategy: %s; request all of its memory or use strategy %s",
			field, r.Device, resource.NewQuantity(memory, resource.BinarySI), resource.NewQuantity(chip.MemoryBytes, resource.BinarySI),
			r.Request, v1alpha1.SharingExclusive, v1alpha1.SharingShared)
	}
	if err := pl.d.checkShare(pl.u, r.Device, chip, memory); err != nil {
		return err
	}
	p.entry.Kind = checkpoint.KindShare
	p.entry.Share = &checkpoint.Share{ID: *r.ShareID, Consumed: map[string]resource.Quantity{
		string(names.CapMemory): *resource.NewQuantity(memory, resource.BinarySI),
		string(names.CapCores):  *resource.NewQuantity(cores, resource.DecimalSI),
	}}
	if units > 0 {
		p.entry.Share.Consumed[string(names.CapShareUnits)] = *resource.NewQuantity(units, resource.DecimalSI)
	}
	pl.u.devices[r.Device] = append(pl.u.devices[r.Device], holder{uid: pl.plan.claim.UID, result: i, share: p.entry.Share})
	p.dev.DriverEnv = map[string]string{
		cdi.EnvSuffixShareID: string(*r.ShareID),
		cdi.EnvSuffixMemory:  strconv.FormatInt(memory, 10),
		cdi.EnvSuffixCores:   strconv.FormatInt(cores, 10),
	}
	// Two shares of one chip in one claim get distinct CDI devices.
	if again {
		p.dev.Name = r.Device + "-" + string(*r.ShareID)
	}
	if !enforced || whole {
		return nil
	}
	return pl.sizedPartition(field, i, p, chip, sized, memory, cores)
}

// sizedPartition plans the partition a share of a Shared chip becomes
// where the vendor's driver carves shares: of the share's size, or the
// one an earlier prepare of the claim made for it.
func (pl *planner) sizedPartition(field string, i int, p *plannedDevice, chip inventory.Chip, sized vendors.SizedPartitions, memory, cores int64) error {
	r := p.result
	// SizedTemplate checks the size against the grid the request policy
	// published: a result off it is a stale or forged allocation.
	t, err := sized.SizedTemplate(chip, memory, cores)
	if err != nil {
		return fmt.Errorf("%s: the share of %s (%s memory, %d cores) does not fit the request policy the driver published for it: %w",
			field, r.Device, resource.NewQuantity(memory, resource.BinarySI), cores, err)
	}
	p.dev.DriverEnv[cdi.EnvSuffixPartition] = t.Name
	pl.u.partitions[chip.Index] = append(pl.u.partitions[chip.Index], partitionUse{uid: pl.plan.claim.UID, result: i, device: r.Device, template: t.Name})
	if e, ok := pl.earlierShares[*r.ShareID]; ok && e.Partition != nil && e.Partition.Template == t.Name {
		// Prepared before (a kubelet retry, a restart): reuse it.
		p.entry.Partition = e.Partition
		return nil
	}
	p.create = &slot{chip: chip, template: t}
	return nil
}

// partition plans a partition device: the partition to make, or the one
// an earlier prepare of the claim made.
func (pl *planner) partition(i int, p *plannedDevice, sl slot) error {
	r, uid := p.result, pl.plan.claim.UID
	if err := pl.d.checkPartition(pl.u, r.Device, sl); err != nil {
		return err
	}
	p.dev.Chip = sl.chip
	p.entry.Kind = checkpoint.KindPartition
	pl.u.devices[r.Device] = append(pl.u.devices[r.Device], holder{uid: uid, result: i})
	pl.u.partitions[sl.chip.Index] = append(pl.u.partitions[sl.chip.Index], partitionUse{uid: uid, result: i, device: r.Device, template: sl.template.Name})
	if e, ok := pl.earlier[r.Device]; ok && e.Partition != nil && e.Partition.Template == sl.template.Name {
		// Prepared before (a kubelet retry, a restart): reuse it.
		p.entry.Partition = e.Partition
	} else {
		s := sl
		p.create = &s
	}
	return nil
}

// isAdmin says whether an allocation result has admin access.
func isAdmin(r resourceapi.DeviceRequestAllocationResult) bool {
	return r.AdminAccess != nil && *r.AdminAccess
}

// planAdmin is what an admin-access result becomes: the chip's device
// nodes, whatever holds the chip. The scheduler hands admin results out
// next to the devices' normal holders (monitoring, debugging), so nothing
// is checked against other claims, no partition is made (a partition
// device gives its parent chip's nodes) and no share is counted; other
// claims' checks ignore it (usage).
func (d *Driver) planAdmin(field string, r resourceapi.DeviceRequestAllocationResult, env map[string]string) (cdi.Device, checkpoint.Device, error) {
	chip, ok := d.chips[r.Device]
	if !ok {
		sl, isSlot := d.slots[r.Device]
		if !isSlot {
			return cdi.Device{}, checkpoint.Device{}, fmt.Errorf("%s: device %q is not a chip of %s on node %s (nor a partition of one)", field, r.Device, d.name, d.node)
		}
		chip = sl.chip
	}
	dev := cdi.Device{Name: r.Device, Chip: chip, Env: env, DriverEnv: map[string]string{cdi.EnvSuffixAdminAccess: "true"}}
	entry := checkpoint.Device{Kind: checkpoint.KindAdmin, Request: r.Request, Pool: r.Pool, Device: r.Device}
	return dev, entry, nil
}

// nameAdminDevices renames admin devices whose CDI device name another
// result of the claim has (an admin request beside a normal one of the
// same chip): CDI device names must differ.
func (p *claimPlan) nameAdminDevices() {
	taken := map[string]bool{}
	for _, pd := range p.devices {
		if pd.entry.Kind != checkpoint.KindAdmin {
			taken[pd.dev.Name] = true
		}
	}
	for i := range p.devices {
		pd := &p.devices[i]
		if pd.entry.Kind != checkpoint.KindAdmin {
			continue
		}
		name := pd.dev.Name
		for n := 1; taken[name]; n++ {
			name = fmt.Sprintf("%s-admin-%d", pd.dev.Name, n)
		}
		pd.dev.Name, taken[name] = name, true
	}
}

// consumed is the capacity name the scheduler gave a share of, or def
// when the result records none (the request policy's default).
func consumed(r resourceapi.DeviceRequestAllocationResult, name resourceapi.QualifiedName, def int64) int64 {
	if q, ok := r.ConsumedCapacity[name]; ok {
		return q.Value()
	}
	return def
}

// isShared says whether a device is a chip published Shared.
func (d *Driver) isShared(device string) bool {
	return d.modes[device] == partitions.ModeShared
}

// checkPartition refuses a partition device whose chip is taken whole or
// has no room left for it.
func (d *Driver) checkPartition(u usage, device string, s slot) error {
	if hs := u.devices[device]; len(hs) > 0 {
		return fmt.Errorf("device %s is already prepared for %s: refusing to give it to two claims", device, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	parent := d.names.ChipDevice(s.chip.Index)
	if hs := u.devices[parent]; len(hs) > 0 {
		return fmt.Errorf("device %s is a partition of %s, which is prepared whole for %s: refusing to give out a chip and its partition", device, parent, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	prepared := u.partitions[s.chip.Index]
	templates := make([]string, len(prepared))
	for i, p := range prepared {
		templates[i] = p.template
	}
	if err := s.model.FitsWith(s.chip, s.model.UsageOf(templates), s.template); err != nil {
		return fmt.Errorf("device %s (%s) does not fit on %s next to the %d partitions prepared there: refusing to over-commit the chip: %w", device, s.template.Name, parent, len(prepared), err)
	}
	return nil
}

// checkWhole refuses a whole chip that is prepared for another claim or
// has partitions prepared.
func (d *Driver) checkWhole(u usage, device string, c inventory.Chip) error {
	if hs := u.devices[device]; len(hs) > 0 {
		return fmt.Errorf("device %s is already prepared for %s: refusing to give it to two claims", device, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	if ps := u.partitions[c.Index]; len(ps) > 0 {
		return fmt.Errorf("device %s has partition %s prepared for %s: refusing to give out a chip and its partition", device, ps[0].device, d.heldBy(u, ps[0].uid, ps[0].result))
	}
	return nil
}

// checkShare refuses a share that does not fit next to the other shares
// of a shared chip, or a share of a chip another claim holds exclusively.
func (d *Driver) checkShare(u usage, device string, c inventory.Chip, memory int64) error {
	used := int64(0)
	for _, h := range u.devices[device] {
		if h.share == nil {
			return fmt.Errorf("device %s is already prepared whole for %s: refusing to share it", device, d.heldBy(u, h.uid, h.result))
		}
		if q, ok := h.share.Consumed[string(names.CapMemory)]; ok {
			used += q.Value()
		} else {
			used += c.MemoryBytes
		}
	}
	if used+memory > c.MemoryBytes {
		return fmt.Errorf("device %s has %s of its %s memory prepared already (for other claims or this claim's other requests), no room for %s more: refusing to over-commit the chip", device,
			resource.NewQuantity(used, resource.BinarySI), resource.NewQuantity(c.MemoryBytes, resource.BinarySI), resource.NewQuantity(memory, resource.BinarySI))
	}
	return nil
}

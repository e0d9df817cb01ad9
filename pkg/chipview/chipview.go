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

// Package chipview is the logic of `accel-dra chips`: from a live
// cluster's ResourceSlices and ResourceClaims (a livecluster.Snapshot) it
// builds one row per chip of our drivers with who holds it, and the
// per-model capacity summary that `kubectl describe node` showed under the
// device plugins. It is pure: the CLI reads the snapshot (one list per
// kind) and prints what Build and Summarize return.
//
// A chip's state is one of:
//
//   - free: no claim holds the chip or any partition or share of it
//     (admin-access claims do not count: they hold nothing, as for the
//     scheduler);
//   - allocated: the scheduler allocated it (or a partition or share of
//     it) to at least one claim, and the node agent has not yet prepared
//     all of those;
//   - prepared: every claim holding it has been prepared on the node: the
//     node agent has written the device's entry, with condition Ready, into
//     the claim's status.devices (pkg/claimstatus does so after
//     NodePrepareResources succeeded and removes it after unprepare).
//
// Health is the chip device's taints (a key per cause under
// accel-dra.dev/, the reason as value; effect None for a warning, which
// does not make the chip unhealthy here). DeviceTaintRules are not read.
//
// Slices of other drivers are counted per pool and not interpreted.
package chipview

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// State of a chip (see the package comment).
type State string

const (
	Free      State = "free"
	Allocated State = "allocated"
	Prepared  State = "prepared"
)

// View is what `accel-dra chips` prints: our chips, and the pools of
// other drivers.
type View struct {
	Chips        []Chip      `json:"chips"`
	OtherDrivers []OtherPool `json:"otherDrivers,omitempty"`
}

// Chip is one whole chip of our drivers.
type Chip struct {
	Node   string `json:"node"`
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
	Model  string `json:"model"`
	Index  *int64 `json:"index,omitempty"`
	// Memory and Cores are the chip's capacity.
	Memory    *resource.Quantity `json:"memory,omitempty"`
	Cores     *resource.Quantity `json:"cores,omitempty"`
	LinkGroup string             `json:"linkGroup,omitempty"`
	// SuperPod is the chip's super pod (accel-dra.dev/superPod), by which
	// the summary groups.
	SuperPod string `json:"superPod,omitempty"`
	// Mode is how the chip is published (the agent's --chip-modes),
	// shown in lower case ("whole") as the view always has.
	Mode partitions.Mode `json:"mode"`
	// ShareEnforcement is a Shared chip's accel-dra.dev/shareEnforcement:
	// "hardware" where each share is a partition the vendor's driver makes.
	ShareEnforcement string `json:"shareEnforcement,omitempty"`
	// Taints are the chip device's taints; none means healthy.
	Taints []resourceapi.DeviceTaint `json:"taints,omitempty"`
	State  State                     `json:"state"`
	// Holders are the claims allocated the chip, a partition or a share
	// of it, one entry per allocated device (or share).
	Holders []Holder `json:"holders,omitempty"`
	// AdminHolders are admin-access claims on the chip or its
	// partitions (monitoring): they see it but hold nothing.
	AdminHolders []Holder `json:"adminHolders,omitempty"`
	// Left is the capacity not yet given out, for partitioned chips (the
	// counters of the chip's counter set: cores, memory, aicpu) and
	// shared chips (the consumable capacity: memory and cores).
	Left map[string]resource.Quantity `json:"left,omitempty"`
}

// MarshalJSON writes the chip with its mode in lower case ("whole"), as
// `accel-dra chips -o json` always has.
func (c Chip) MarshalJSON() ([]byte, error) {
	type plain Chip
	return json.Marshal(struct {
		plain
		Mode string `json:"mode"`
	}{plain(c), modeName(c.Mode)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Chip) UnmarshalJSON(data []byte) error {
	type plain Chip
	var in struct {
		plain
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*c = Chip(in.plain)
	c.Mode = partitions.Mode(in.Mode)
	for _, m := range partitions.Modes {
		if strings.EqualFold(in.Mode, string(m)) {
			c.Mode = m
		}
	}
	return nil
}

// modeName is how the view shows a chip mode: in lower case.
func modeName(m partitions.Mode) string { return strings.ToLower(string(m)) }

// Healthy says whether no taint keeps new claims off the chip (a taint
// with effect None only informs).
func (c Chip) Healthy() bool {
	for _, t := range c.Taints {
		if t.Effect != resourceapi.DeviceTaintEffectNone {
			return false
		}
	}
	return true
}

// Holder is one allocation of a chip, a partition or a share to a claim.
type Holder struct {
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	Request   string `json:"request"`
	// Device is the allocated device: the chip itself or a partition.
	Device string `json:"device"`
	// Template is the partition's template, for a partition.
	Template string `json:"template,omitempty"`
	// ShareID is set for a share of a shared chip.
	ShareID string `json:"shareID,omitempty"`
	// Consumed is what a share consumed of the chip's capacity.
	Consumed map[string]resource.Quantity `json:"consumed,omitempty"`
	// Pods are the pods in the claim's reservedFor (same namespace);
	// other consumers are listed as resource/name.
	Pods []string `json:"pods,omitempty"`
	// Prepared: the node agent has prepared this device for the claim.
	Prepared bool `json:"prepared"`
}

// ClaimName is namespace/name.
func (h Holder) ClaimName() string { return h.Namespace + "/" + h.Claim }

// OtherPool is a pool of a driver that is not ours.
type OtherPool struct {
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Node    string `json:"node,omitempty"`
	Slices  int    `json:"slices"`
	Devices int    `json:"devices"`
}

// Options filter the view.
type Options struct {
	// Registry names our vendors' drivers; slices of other drivers are
	// listed, not interpreted.
	Registry vendors.Registry
	// Node limits the view to one node; an error if no slice names it.
	Node string
}

// deviceKey identifies a device in the cluster.
type deviceKey struct{ driver, pool, device string }

// allocation is one result of a claim's allocation.
type allocation struct {
	claim  *resourceapi.ResourceClaim
	result *resourceapi.DeviceRequestAllocationResult
}

// poolDevices are the devices of one pool of ours at its newest
// generation, and its counter sets.
type poolDevices struct {
	driver, pool, node string
	devices            []*resourceapi.Device
	counterSets        map[string]resourceapi.CounterSet
}

// Build computes the view of snap. Slices of an older generation of
// their pool (left over while the agent replaces them) are skipped.
func Build(snap *livecluster.Snapshot, opts Options) (*View, error) {
	g, err := groupSlices(snap, opts)
	if err != nil {
		return nil, err
	}
	allocs := allocationsOf(snap, g.ours)
	v := &View{Chips: []Chip{}}
	for _, p := range g.pools {
		v.Chips = append(v.Chips, p.chips(allocs, preparedReady)...)
	}
	slices.SortFunc(v.Chips, func(a, b Chip) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Pool, b.Pool),
			cmp.Compare(ptr.Deref(a.Index, -1), ptr.Deref(b.Index, -1)), cmp.Compare(a.Device, b.Device))
	})
	for _, o := range g.others {
		v.OtherDrivers = append(v.OtherDrivers, *o)
	}
	slices.SortFunc(v.OtherDrivers, func(a, b OtherPool) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Pool, b.Pool))
	})
	return v, nil
}

// slicesByPool are the newest slices of snap on the node asked for,
// grouped by pool: ours by their devices, other drivers' counted.
type slicesByPool struct {
	// ours says, by driver, whether the driver is one of ours.
	ours   map[string]bool
	pools  map[[2]string]*poolDevices
	others map[[2]string]*OtherPool
}

// groupSlices groups the newest generation of snap's slices by driver and
// pool; an error if a node was asked for and no slice names it.
func groupSlices(snap *livecluster.Snapshot, opts Options) (slicesByPool, error) {
	newest := map[[2]string]int64{}
	for i := range snap.Slices {
		s := &snap.Slices[i]
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	g := slicesByPool{ours: map[string]bool{}, pools: map[[2]string]*poolDevices{}, others: map[[2]string]*OtherPool{}}
	nodeSeen := opts.Node == ""
	for i := range snap.Slices {
		s := &snap.Slices[i]
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation < newest[k] {
			continue
		}
		node := ptr.Deref(s.Spec.NodeName, "")
		if opts.Node != "" && node != opts.Node {
			continue
		}
		nodeSeen = true
		our, known := g.ours[s.Spec.Driver]
		if !known {
			_, our = opts.Registry.ByDriver(s.Spec.Driver)
			g.ours[s.Spec.Driver] = our
		}
		if our {
			g.addOurs(s, k, node)
		} else {
			g.addOther(s, k, node)
		}
	}
	if !nodeSeen {
		return slicesByPool{}, fmt.Errorf("no ResourceSlice is published for node %q: the node does not exist or no DRA driver runs there (accel-dra chips without --node lists the nodes that have chips)", opts.Node)
	}
	return g, nil
}

func (g slicesByPool) addOurs(s *resourceapi.ResourceSlice, k [2]string, node string) {
	p := g.pools[k]
	if p == nil {
		p = &poolDevices{driver: s.Spec.Driver, pool: s.Spec.Pool.Name, node: node, counterSets: map[string]resourceapi.CounterSet{}}
		g.pools[k] = p
	}
	for j := range s.Spec.Devices {
		p.devices = append(p.devices, &s.Spec.Devices[j])
	}
	for _, cs := range s.Spec.SharedCounters {
		p.counterSets[cs.Name] = cs
	}
}

func (g slicesByPool) addOther(s *resourceapi.ResourceSlice, k [2]string, node string) {
	o := g.others[k]
	if o == nil {
		o = &OtherPool{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Node: node}
		g.others[k] = o
	}
	o.Slices++
	o.Devices += len(s.Spec.Devices)
}

// allocationsOf are the allocated devices of our drivers in snap's
// claims, by device.
func allocationsOf(snap *livecluster.Snapshot, ours map[string]bool) map[deviceKey][]allocation {
	allocs := map[deviceKey][]allocation{}
	for i := range snap.Claims {
		c := &snap.Claims[i]
		if c.Status.Allocation == nil {
			continue
		}
		for j := range c.Status.Allocation.Devices.Results {
			r := &c.Status.Allocation.Devices.Results[j]
			if !ours[r.Driver] {
				continue
			}
			k := deviceKey{r.Driver, r.Pool, r.Device}
			allocs[k] = append(allocs[k], allocation{claim: c, result: r})
		}
	}
	return allocs
}

// preparedReady says whether the node agent prepared r: its status entry
// (driver, pool, device, shareID) has condition Ready.
func preparedReady(c *resourceapi.ResourceClaim, r *resourceapi.DeviceRequestAllocationResult) bool {
	for _, d := range c.Status.Devices {
		if d.Driver == r.Driver && d.Pool == r.Pool && d.Device == r.Device && ptr.Deref(d.ShareID, "") == string(ptr.Deref(r.ShareID, "")) {
			return apimeta.IsStatusConditionTrue(d.Conditions, "Ready")
		}
	}
	return false
}

// attr reads a string attribute by its qualified name or, for the
// driver's own domain, its short name.
func attr(d *resourceapi.Device, driver string, name resourceapi.QualifiedName) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[name]; ok {
		return a, true
	}
	if !strings.Contains(string(name), "/") {
		a, ok := d.Attributes[resourceapi.QualifiedName(driver+"/"+string(name))]
		return a, ok
	}
	return resourceapi.DeviceAttribute{}, false
}

func stringAttr(d *resourceapi.Device, driver string, name resourceapi.QualifiedName) string {
	a, _ := attr(d, driver, name)
	return ptr.Deref(a.StringValue, "")
}

// chips are the rows of the whole chips of one pool.
func (p *poolDevices) chips(allocs map[deviceKey][]allocation, ready func(*resourceapi.ResourceClaim, *resourceapi.DeviceRequestAllocationResult) bool) []Chip {
	// Partition devices by the chip they are cut from.
	parts := map[string][]*resourceapi.Device{}
	var chips []*resourceapi.Device
	for _, d := range p.devices {
		if parent := stringAttr(d, p.driver, resourceslices.AttrParentDevice); parent != "" {
			parts[parent] = append(parts[parent], d)
			continue
		}
		chips = append(chips, d)
	}
	out := make([]Chip, 0, len(chips))
	for _, d := range chips {
		c := Chip{
			Node: p.node, Driver: p.driver, Pool: p.pool, Device: d.Name,
			Model:     stringAttr(d, p.driver, names.AttrModel),
			LinkGroup: stringAttr(d, p.driver, names.AttrLinkGroup),
			SuperPod:  stringAttr(d, p.driver, fabric.AttrSuperPod),
			Taints:    d.Taints,
			Mode:      partitions.ModeWhole,
		}
		if a, ok := attr(d, p.driver, names.AttrIndex); ok {
			c.Index = a.IntValue
		}
		if q, ok := d.Capacity[names.CapMemory]; ok {
			c.Memory = ptr.To(q.Value.DeepCopy())
		}
		if q, ok := d.Capacity[names.CapCores]; ok {
			c.Cores = ptr.To(q.Value.DeepCopy())
		}
		switch {
		case ptr.Deref(d.AllowMultipleAllocations, false):
			c.Mode = partitions.ModeShared
			c.ShareEnforcement = stringAttr(d, p.driver, partitions.AttrShareEnforcement)
		case len(d.ConsumesCounters) > 0 || len(parts[d.Name]) > 0:
			c.Mode = partitions.ModePartitioned
		}
		devices := append([]*resourceapi.Device{d}, parts[d.Name]...)
		for _, dev := range devices {
			for _, a := range allocs[deviceKey{p.driver, p.pool, dev.Name}] {
				h := holder(a, dev, p.driver, ready(a.claim, a.result))
				if ptr.Deref(a.result.AdminAccess, false) {
					c.AdminHolders = append(c.AdminHolders, h)
					continue
				}
				c.Holders = append(c.Holders, h)
			}
		}
		c.State = Free
		if len(c.Holders) > 0 {
			c.State = Prepared
			for _, h := range c.Holders {
				if !h.Prepared {
					c.State = Allocated
				}
			}
		}
		switch c.Mode {
		case partitions.ModeShared:
			c.Left = sharedLeft(d, c.Holders)
		case partitions.ModePartitioned:
			c.Left = p.countersLeft(d, devices, allocs)
		}
		out = append(out, c)
	}
	return out
}

// holder is the Holder of one allocation result.
func holder(a allocation, dev *resourceapi.Device, driver string, prepared bool) Holder {
	h := Holder{
		Namespace: a.claim.Namespace, Claim: a.claim.Name, Request: a.result.Request, Device: dev.Name,
		Template: stringAttr(dev, driver, resourceslices.AttrPartitionTemplate),
		ShareID:  string(ptr.Deref(a.result.ShareID, "")),
		Prepared: prepared,
	}
	if len(a.result.ConsumedCapacity) > 0 {
		h.Consumed = map[string]resource.Quantity{}
		for k, q := range a.result.ConsumedCapacity {
			h.Consumed[shortName(k)] = q
		}
	}
	for _, r := range a.claim.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			h.Pods = append(h.Pods, r.Name)
		} else {
			h.Pods = append(h.Pods, r.Resource+"/"+r.Name)
		}
	}
	return h
}

// shortName drops our attribute domain: accel-dra.dev/memory is memory.
func shortName(n resourceapi.QualifiedName) string {
	return strings.TrimPrefix(string(n), names.Domain+"/")
}

// sharedLeft is a shared chip's capacity minus what its shares consumed.
func sharedLeft(d *resourceapi.Device, holders []Holder) map[string]resource.Quantity {
	left := map[string]resource.Quantity{}
	for k, c := range d.Capacity {
		left[shortName(k)] = c.Value.DeepCopy()
	}
	for _, h := range holders {
		for k, q := range h.Consumed {
			if l, ok := left[k]; ok {
				l.Sub(q)
				left[k] = l
			}
		}
	}
	return left
}

// countersLeft is what is left of the chip's counter set after the
// allocated devices of the chip (the chip itself or its partitions) took
// their counters. Admin-access allocations take nothing.
func (p *poolDevices) countersLeft(chip *resourceapi.Device, devices []*resourceapi.Device, allocs map[deviceKey][]allocation) map[string]resource.Quantity {
	if len(chip.ConsumesCounters) == 0 {
		return nil
	}
	setName := chip.ConsumesCounters[0].CounterSet
	set, ok := p.counterSets[setName]
	if !ok {
		return nil
	}
	left := map[string]resource.Quantity{}
	for k, c := range set.Counters {
		left[k] = c.Value.DeepCopy()
	}
	for _, dev := range devices {
		taken := false
		for _, a := range allocs[deviceKey{p.driver, p.pool, dev.Name}] {
			taken = taken || !ptr.Deref(a.result.AdminAccess, false)
		}
		if !taken {
			continue
		}
		for _, cc := range dev.ConsumesCounters {
			if cc.CounterSet != setName {
				continue
			}
			for k, c := range cc.Counters {
				if l, ok := left[k]; ok {
					l.Sub(c.Value)
					left[k] = l
				}
			}
		}
	}
	return left
}

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

package simulate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
)

// Pool is the state a claim is explained against: the slices of the nodes
// it could go to, the DeviceClasses, and what allocated claims hold.
type Pool struct {
	Slices    []*resourceapi.ResourceSlice
	Classes   structured.DeviceClassLister
	Allocated structured.AllocatedState
	Cache     *cel.Cache
}

// NewAllocatedState is an empty AllocatedState.
func NewAllocatedState() structured.AllocatedState {
	return structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
}

// AddAllocation records the devices of an allocation as in use, the way
// kube-scheduler gathers them from allocated claims (foreachAllocatedDevice
// in k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources,
// which is not importable): admin-access results hold nothing, a result
// with a share ID holds that share and its consumed capacity, any other
// holds the whole device.
func AddAllocation(state structured.AllocatedState, a *resourceapi.AllocationResult) {
	if a == nil {
		return
	}
	for _, r := range a.Devices.Results {
		if ptr.Deref(r.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID != nil {
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
			continue
		}
		state.AllocatedDevices.Insert(id)
	}
}

// Candidates is what one request (or firstAvailable subrequest, named
// "request/subrequest") of a claim had to choose from, as counts of
// devices narrowed step by step.
type Candidates struct {
	Request string
	Class   string
	// ClassMissing: the DeviceClass does not exist.
	ClassMissing bool
	// Count is the devices the request needs (0 with allocationMode All).
	Count int64
	Mode  resourceapi.DeviceAllocationMode
	// ClassMatched devices the class's selectors accept; of those,
	// PassSelectors also pass the request's; of those, Free are neither
	// allocated nor short of shared counters, nor carry a taint the
	// request does not tolerate. InUse and Tainted count the others.
	ClassMatched, PassSelectors, Free, InUse, Tainted int
	// Taints are the untolerated taints met (key=value:effect), sorted.
	Taints []string
	// MatchAttribute is the attribute of a matchAttribute constraint
	// covering the request; LargestGroup the most free devices sharing
	// one value of it on one node, at GroupWhere ("node value").
	MatchAttribute resourceapi.FullyQualifiedName
	LargestGroup   int
	GroupWhere     string
	// Nodes are the per-node counts of the devices passing the
	// selectors, by node name (the pool name for slices of no node).
	Nodes map[string]*NodeCandidates
	// match tells whether a device passes the class's and the request's
	// selectors (CEL errors count as no).
	match func(driver string, d resourceapi.Device) bool
}

// NodeCandidates counts one node's devices that pass a request's selectors.
type NodeCandidates struct {
	Free, InUse, Tainted int
	// Group is the largest free matchAttribute group on the node and
	// GroupValue its attribute value.
	Group      int
	GroupValue string
}

// Nearest is the node that misses the request by the fewest devices (in
// one matchAttribute group where the request has that constraint), with
// how many it has; ties go to the first name. ok is false without nodes.
func (c *Candidates) Nearest() (node string, have int, ok bool) {
	names := make([]string, 0, len(c.Nodes))
	for n := range c.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := c.Nodes[n].Free
		if c.MatchAttribute != "" {
			h = c.Nodes[n].Group
		}
		if !ok || h > have {
			node, have, ok = n, h, true
		}
	}
	return node, have, ok
}

// Explain counts, per request of the claim, the devices its class matched,
// those passing its selectors, and those free, with per-node counts and
// the largest free matchAttribute group. It evaluates the CEL with the
// upstream library as the allocator does; it is the explanation of both
// simulate and why.
func Explain(ctx context.Context, pool Pool, claim *resourceapi.ResourceClaim) []*Candidates {
	counters := availableCounters(pool)
	var out []*Candidates
	for _, r := range claim.Spec.Devices.Requests {
		for _, ch := range requestChoices(r) {
			out = append(out, explainChoice(ctx, pool, counters, ch, constraintAttr(claim, r.Name)))
		}
	}
	return out
}

// requestChoice is one way to satisfy a request: the request itself
// (Exactly) or one of its firstAvailable subrequests.
type requestChoice struct {
	name, class string
	count       int64
	mode        resourceapi.DeviceAllocationMode
	sels        []resourceapi.DeviceSelector
	tolerations []resourceapi.DeviceToleration
}

func requestChoices(r resourceapi.DeviceRequest) []requestChoice {
	var choices []requestChoice
	if e := r.Exactly; e != nil {
		choices = append(choices, requestChoice{r.Name, e.DeviceClassName, e.Count, e.AllocationMode, e.Selectors, e.Tolerations})
	}
	for _, s := range r.FirstAvailable {
		choices = append(choices, requestChoice{r.Name + "/" + s.Name, s.DeviceClassName, s.Count, s.AllocationMode, s.Selectors, s.Tolerations})
	}
	return choices
}

// explainChoice counts the candidates of one choice of a request whose
// claim constrains matchAttribute (empty: none).
func explainChoice(ctx context.Context, pool Pool, counters counterLeft, ch requestChoice, matchAttribute resourceapi.FullyQualifiedName) *Candidates {
	matches := func(sels []resourceapi.DeviceSelector, driver string, d resourceapi.Device) bool {
		return SelectorsMatch(ctx, pool.Cache, sels, driver, d)
	}
	c := &Candidates{Request: ch.name, Class: ch.class, Count: ch.count, Mode: ch.mode,
		MatchAttribute: matchAttribute, Nodes: map[string]*NodeCandidates{}}
	class, err := pool.Classes.Get(ch.class)
	if err != nil || class == nil {
		c.ClassMissing = true
		return c
	}
	c.match = func(driver string, d resourceapi.Device) bool {
		return matches(class.Spec.Selectors, driver, d) && matches(ch.sels, driver, d)
	}
	taints := sets.New[string]()
	groups := map[string]map[string]int{} // node -> attribute value -> free devices
	for _, s := range pool.Slices {
		node := s.Spec.Pool.Name
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		for _, d := range s.Spec.Devices {
			if !matches(class.Spec.Selectors, s.Spec.Driver, d) {
				continue
			}
			c.ClassMatched++
			if !matches(ch.sels, s.Spec.Driver, d) {
				continue
			}
			c.PassSelectors++
			n := c.Nodes[node]
			if n == nil {
				n = &NodeCandidates{}
				c.Nodes[node] = n
			}
			id := structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)
			if inUse(pool.Allocated, id, d) || !counters.fit(s.Spec.Driver, s.Spec.Pool.Name, d) {
				c.InUse++
				n.InUse++
				continue
			}
			if t := untolerated(d.Taints, ch.tolerations); len(t) > 0 {
				c.Tainted++
				n.Tainted++
				taints.Insert(t...)
				continue
			}
			c.Free++
			n.Free++
			if c.MatchAttribute != "" {
				if v, ok := d.Attributes[resourceapi.QualifiedName(c.MatchAttribute)]; ok && v.StringValue != nil {
					if groups[node] == nil {
						groups[node] = map[string]int{}
					}
					groups[node][*v.StringValue]++
				}
			}
		}
	}
	c.Taints = sets.List(taints)
	c.setLargestGroups(groups)
	return c
}

// setLargestGroups sets each node's and the pool's largest group of free
// devices sharing the matchAttribute's value (ties: the smaller value).
func (c *Candidates) setLargestGroups(groups map[string]map[string]int) {
	for node, byValue := range groups {
		for v, k := range byValue {
			n := c.Nodes[node]
			if k > n.Group || k == n.Group && v < n.GroupValue {
				n.Group, n.GroupValue = k, v
			}
			where := node + " " + v
			if k > c.LargestGroup || k == c.LargestGroup && where < c.GroupWhere {
				c.LargestGroup, c.GroupWhere = k, where
			}
		}
	}
}

// SelectorsMatch says whether a device passes CEL selectors (a class's or
// a request's); an expression that fails on the device counts as no.
func SelectorsMatch(ctx context.Context, cache *cel.Cache, sels []resourceapi.DeviceSelector, driver string, d resourceapi.Device) bool {
	for _, s := range sels {
		if s.CEL == nil {
			continue
		}
		ok, _, err := cache.GetOrCompile(s.CEL.Expression).DeviceMatches(ctx, cel.Device{Driver: driver, Attributes: d.Attributes, Capacity: d.Capacity})
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// inUse says whether allocated claims hold the device: all of it, or, for
// a device that allows several allocations, nothing is left to share.
// Shared devices count as free while any claim could still get a share;
// the allocator checks their capacity.
func inUse(state structured.AllocatedState, id structured.DeviceID, d resourceapi.Device) bool {
	if ptr.Deref(d.AllowMultipleAllocations, false) {
		return state.AllocatedDevices.Has(id)
	}
	return structured.IsDeviceAllocated(id, &state)
}

// untolerated returns the taints that keep a request off a device (effect
// NoSchedule or NoExecute, not tolerated), as key=value:effect.
func untolerated(taints []resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) []string {
	var out []string
	for _, t := range taints {
		if t.Effect != resourceapi.DeviceTaintEffectNoSchedule && t.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		tolerated := false
		for _, tol := range tolerations {
			if resourceclaim.ToleratesTaint(tol, t) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			out = append(out, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
	}
	return out
}

// counterKey names one counter of a pool's counter set.
type counterKey struct{ driver, pool, set, name string }

// counterLeft is what allocated devices left of each shared counter
// (partitionable devices: a chip and its partitions draw on one set).
type counterLeft map[counterKey]resource.Quantity

func availableCounters(pool Pool) counterLeft {
	left := counterLeft{}
	for _, s := range pool.Slices {
		for _, cs := range s.Spec.SharedCounters {
			for name, c := range cs.Counters {
				left[counterKey{s.Spec.Driver, s.Spec.Pool.Name, cs.Name, name}] = c.Value.DeepCopy()
			}
		}
	}
	for _, s := range pool.Slices {
		for _, d := range s.Spec.Devices {
			if !structured.IsDeviceAllocated(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name), &pool.Allocated) {
				continue
			}
			for _, cc := range d.ConsumesCounters {
				for name, c := range cc.Counters {
					k := counterKey{s.Spec.Driver, s.Spec.Pool.Name, cc.CounterSet, name}
					if v, ok := left[k]; ok {
						v.Sub(c.Value)
						left[k] = v
					}
				}
			}
		}
	}
	return left
}

// fit says whether the counters the device consumes are still there.
func (l counterLeft) fit(driver, pool string, d resourceapi.Device) bool {
	for _, cc := range d.ConsumesCounters {
		for name, c := range cc.Counters {
			if v, ok := l[counterKey{driver, pool, cc.CounterSet, name}]; ok && v.Cmp(c.Value) < 0 {
				return false
			}
		}
	}
	return true
}

// explain is simulate's reason for a claim: per request (and per
// firstAvailable subrequest), how many devices its class matched, how
// many passed its selectors, how many were free before the claim was
// allocated, and for matchAttribute constraints the largest free group on
// one node. For a claim that found no node this is the reason; with
// --explain it is shown for every claim.
func explain(ctx context.Context, cluster *Cluster, in *Inputs, cache *cel.Cache, allocated structured.AllocatedState, claim *resourceapi.ResourceClaim) []string {
	var parts []string
	for _, c := range Explain(ctx, Pool{Slices: cluster.Slices, Classes: in, Allocated: allocated, Cache: cache}, claim) {
		msg := fmt.Sprintf("request %q needs %d: class %s matches %d devices, %d pass the request's selectors, %d of those are free", c.Request, c.Count, c.Class, c.ClassMatched, c.PassSelectors, c.Free)
		if int64(c.Free) < c.Count && !c.ClassMissing {
			// Too few free devices anywhere: say where partitions would
			// be if the nodes offered them (chips are Whole by default).
			n, nodes := cluster.unpublishedPartitions(c.match)
			if n > 0 {
				msg += fmt.Sprintf("; %d partition devices would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes), on %s", n, nodeList(nodes))
			}
		}
		if c.MatchAttribute != "" && c.Free > 0 {
			msg += fmt.Sprintf("; constraint matchAttribute %s: the largest free group on one node has %d (%s)", c.MatchAttribute, c.LargestGroup, c.GroupWhere)
		}
		parts = append(parts, msg)
	}
	return parts
}

// unpublishedPartitions counts the partition devices passing match that
// the cluster's nodes would publish if every chip not Partitioned now
// were, and names those nodes.
func (c *Cluster) unpublishedPartitions(match func(driver string, d resourceapi.Device) bool) (int, []string) {
	all := resourceslices.Options{Policy: partitions.Policy{Default: partitions.ModePartitioned, Registry: c.registry}}
	total := 0
	var nodes []string
	for _, n := range c.chips {
		found := 0
		for _, v := range n.inv.Vendors() {
			partitioned := map[string]bool{}
			for _, chip := range n.inv.ChipsOf(v) {
				partitioned[c.registry.ChipDeviceName(chip)] = n.policy.ModeOf(chip) == partitions.ModePartitioned
			}
			devices, _ := resourceslices.DevicesFor(c.registry, n.inv, v, all)
			for _, d := range devices {
				parent, ok := d.Attributes[resourceslices.AttrParentDevice]
				if !ok || parent.StringValue == nil || partitioned[*parent.StringValue] {
					continue
				}
				if match(c.registry.DriverFor(v), d) {
					found++
				}
			}
		}
		if found > 0 {
			total += found
			nodes = append(nodes, n.node)
		}
	}
	return total, nodes
}

// nodeList names up to four nodes, or three and how many more.
func nodeList(nodes []string) string {
	const shown = 3
	if len(nodes) <= shown+1 {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:shown], ", "), len(nodes)-shown)
}

// constraintAttr returns the matchAttribute of a constraint covering the
// request (a constraint without requests covers all of them).
func constraintAttr(claim *resourceapi.ResourceClaim, request string) resourceapi.FullyQualifiedName {
	for _, c := range claim.Spec.Devices.Constraints {
		if c.MatchAttribute == nil {
			continue
		}
		if len(c.Requests) == 0 || sets.New(c.Requests...).Has(request) {
			return *c.MatchAttribute
		}
	}
	return ""
}

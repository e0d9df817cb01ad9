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

package why

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/simulate"
)

// nodeFilter is the nodes a pod may go to, and why the others are out.
type nodeFilter struct {
	nodes    []*v1.Node
	excluded map[string][]string // reason -> nodes
}

// eligibleNodes applies what the scheduler checks of the pod besides
// DRA: spec.nodeName, nodeSelector and required node affinity, node
// taints against the pod's tolerations (NoSchedule and NoExecute, as the
// TaintToleration plugin), and the node selectors of the pod's claims
// that are already allocated.
func eligibleNodes(ctx context.Context, pod *v1.Pod, nodes []v1.Node, allocated []*resourceapi.ResourceClaim) (nodeFilter, error) {
	f := nodeFilter{excluded: map[string][]string{}}
	logger := klog.FromContext(ctx)
	var affinity nodeaffinity.RequiredNodeAffinity
	if pod != nil {
		affinity = nodeaffinity.GetRequiredNodeAffinity(pod)
	}
	var claimSelectors []*nodeaffinity.NodeSelector
	var claimNames []string
	for _, c := range allocated {
		if c.Status.Allocation.NodeSelector == nil {
			continue
		}
		sel, err := nodeaffinity.NewNodeSelector(c.Status.Allocation.NodeSelector)
		if err != nil {
			return f, fmt.Errorf("claim %s/%s: status.allocation.nodeSelector: %w", c.Namespace, c.Name, err)
		}
		claimSelectors = append(claimSelectors, sel)
		claimNames = append(claimNames, c.Namespace+"/"+c.Name)
	}
	for i := range nodes {
		n := &nodes[i]
		reason := ""
		switch {
		case pod == nil:
		case pod.Spec.NodeName != "" && pod.Spec.NodeName != n.Name:
			reason = "spec.nodeName is " + pod.Spec.NodeName
		default:
			ok, err := affinity.Match(n)
			if err != nil {
				return f, fmt.Errorf("pod %s/%s: node affinity: %w", pod.Namespace, pod.Name, err)
			}
			if !ok {
				reason = "the pod's nodeSelector or required node affinity"
				break
			}
			if t, bad := corev1.FindMatchingUntoleratedTaint(logger, n.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false); bad {
				reason = fmt.Sprintf("taint %s=%s:%s, not tolerated", t.Key, t.Value, t.Effect)
			}
		}
		for j, sel := range claimSelectors {
			if reason == "" && !sel.Match(n) {
				reason = "claim " + claimNames[j] + " is allocated on another node"
			}
		}
		if reason != "" {
			f.excluded[reason] = append(f.excluded[reason], n.Name)
			continue
		}
		f.nodes = append(f.nodes, n)
	}
	return f, nil
}

// pending runs the allocator for the pod's claims that are not allocated
// and explains each request.
func (e *explainer) pending(ctx context.Context, pod *v1.Pod, ours, pending []podClaim, classes structured.DeviceClassLister, cache *cel.Cache) error {
	ctx, cancel := context.WithTimeoutCause(ctx, e.opts.AllocatorTimeout, errAllocatorTimeout)
	defer cancel()
	if err := e.runAllocator(ctx, pod, ours, pending, classes, cache); err != nil {
		if errors.Is(context.Cause(ctx), errAllocatorTimeout) {
			return fmt.Errorf("the allocator did not finish within %s (--allocator-timeout); its search over these claims and nodes is too large to explain here", e.opts.AllocatorTimeout)
		}
		return err
	}
	return nil
}

var errAllocatorTimeout = errors.New("allocator timeout")

// runAllocator is pending under the allocator's deadline.
func (e *explainer) runAllocator(ctx context.Context, pod *v1.Pod, ours, pending []podClaim, classes structured.DeviceClassLister, cache *cel.Cache) error {
	var allocated []*resourceapi.ResourceClaim
	for _, pc := range ours {
		if pc.claim.Status.Allocation != nil {
			allocated = append(allocated, pc.claim)
		}
	}
	filter, err := eligibleNodes(ctx, pod, e.snap.Nodes, allocated)
	if err != nil {
		return err
	}
	if pod == nil {
		e.say(1, "no pod uses the claim: all %d nodes are candidates", len(e.snap.Nodes))
	} else {
		e.say(1, "%s", filter.summary(len(e.snap.Nodes)))
	}
	slices := slicesFor(e.snap.Slices, filter.nodes)
	waiting := map[string]bool{}
	var claims []*resourceapi.ResourceClaim
	for _, pc := range pending {
		claims = append(claims, pc.claim)
		waiting[pc.claim.Namespace+"/"+pc.claim.Name] = true
	}
	state := e.allocatedState(nil)
	node, err := allocate(ctx, state, classes, slices, cache, filter.nodes, claims)
	if err != nil {
		return err
	}
	for _, pc := range pending {
		c := pc.claim
		e.say(1, "%s: not allocated", pc.label())
		for _, cand := range simulate.Explain(ctx, simulate.Pool{Slices: slices, Classes: classes, Allocated: state, Cache: cache}, c) {
			e.candidates(cand)
		}
	}
	if node != "" && pod == nil {
		e.say(1, "the allocator fits the claim on node %s now: the scheduler allocates it when a pod that uses it is scheduled", node)
		return nil
	}
	if node != "" && e.gangLevel != "" {
		e.say(1, "the allocator fits this pod's claims on node %s alone, but its gang is placed whole, in one %s: it waits until one domain has room for all its pods (free chips per domain above)", node, e.gangLevel)
		return nil
	}
	if node != "" {
		e.say(1, "the allocator fits the claims on node %s now: the scheduler should place the pod at its next attempt; if it stays pending, kubectl describe pod -n %s %s", node, pod.Namespace, pod.Name)
		return nil
	}
	if len(filter.nodes) == 0 {
		e.say(1, "no node is left for the allocator to try")
		return nil
	}
	if len(filter.nodes) == 1 {
		e.say(1, "the allocator cannot fit the claims on %s, the one node the pod can go to", filter.nodes[0].Name)
	} else {
		e.say(1, "the allocator cannot fit the claims on any of the %d nodes the pod can go to", len(filter.nodes))
	}
	return e.whatIf(ctx, classes, slices, cache, filter.nodes, claims, waiting)
}

func (f nodeFilter) summary(total int) string {
	if len(f.excluded) == 0 {
		return fmt.Sprintf("nodes the pod can go to: all %d", total)
	}
	reasons := make([]string, 0, len(f.excluded))
	for r := range f.excluded {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	var parts []string
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%d by %s (%s)", len(f.excluded[r]), r, nodeNames(f.excluded[r])))
	}
	return fmt.Sprintf("nodes the pod can go to: %d of %d; ruled out: %s", len(f.nodes), total, strings.Join(parts, "; "))
}

// nodeNames names up to three nodes, then how many more.
func nodeNames(nodes []string) string {
	sort.Strings(nodes)
	if len(nodes) <= 3 {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:3], ", "), len(nodes)-3)
}

// slicesFor keeps the slices of the nodes, and those not tied to one node
// (the allocator matches their node selectors itself).
func slicesFor(all []resourceapi.ResourceSlice, nodes []*v1.Node) []*resourceapi.ResourceSlice {
	keep := map[string]bool{}
	for _, n := range nodes {
		keep[n.Name] = true
	}
	var out []*resourceapi.ResourceSlice
	for i := range all {
		s := &all[i]
		if s.Spec.NodeName != nil && !keep[*s.Spec.NodeName] {
			continue
		}
		out = append(out, s)
	}
	return out
}

// allocatedState is what the allocated claims hold, leaving out skip.
func (e *explainer) allocatedState(skip *resourceapi.ResourceClaim) structured.AllocatedState {
	state := simulate.NewAllocatedState()
	for i := range e.snap.Claims {
		if c := &e.snap.Claims[i]; skip == nil || c.UID != skip.UID {
			simulate.AddAllocation(state, c.Status.Allocation)
		}
	}
	return state
}

// allocate tries the nodes in order and returns the first where all the
// claims fit, "" if none. An error other than "not on this node" (a CEL
// runtime error, say) is the answer itself.
func allocate(ctx context.Context, state structured.AllocatedState, classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, cache *cel.Cache, nodes []*v1.Node, claims []*resourceapi.ResourceClaim) (string, error) {
	a, err := structured.NewAllocator(ctx, simulate.Features, state, classes, slices, cache)
	if err != nil {
		return "", fmt.Errorf("creating the allocator: %w", err)
	}
	for _, n := range nodes {
		out, err := a.Allocate(ctx, n, claims)
		if err != nil && !errors.Is(err, structured.ErrFailedAllocationOnNode) {
			return "", fmt.Errorf("the allocator refuses the claims (as the scheduler would) on node %s: %w", n.Name, err)
		}
		if err == nil && out != nil {
			return n.Name, nil
		}
	}
	return "", nil
}

// candidates prints what one request had to choose from.
func (e *explainer) candidates(c *simulate.Candidates) {
	need := fmt.Sprintf("%d", c.Count)
	if c.Mode == resourceapi.DeviceAllocationModeAll {
		need = "all"
	}
	e.say(2, "request %s needs %s of class %s:", c.Request, need, c.Class)
	e.say(3, "class matches %d devices on these nodes, %d pass the request's selectors, %d of those are free and untainted", c.ClassMatched, c.PassSelectors, c.Free)
	if c.InUse > 0 || c.Tainted > 0 {
		held := fmt.Sprintf("%d in use by other claims", c.InUse)
		if c.Tainted > 0 {
			held += fmt.Sprintf(", %d tainted (%s)", c.Tainted, strings.Join(c.Taints, ", "))
		}
		e.say(3, "of those passing the selectors: %s", held)
	}
	if c.MatchAttribute != "" {
		if c.Free > 0 {
			e.say(3, "constraint matchAttribute %s: the largest free group on one node has %d (%s)", c.MatchAttribute, c.LargestGroup, c.GroupWhere)
		} else {
			e.say(3, "constraint matchAttribute %s: no free device, so no group", c.MatchAttribute)
		}
	}
	node, have, ok := c.Nearest()
	if !ok || c.Mode == resourceapi.DeviceAllocationModeAll {
		return
	}
	n := c.Nodes[node]
	in := "free"
	if c.MatchAttribute != "" {
		in = fmt.Sprintf("free in %s group %s", c.MatchAttribute, n.GroupValue)
	}
	if int64(have) >= c.Count {
		e.say(3, "nearest node: %s has %d %s, enough for this request alone", node, have, in)
		return
	}
	lacks := fmt.Sprintf("lacks %d", c.Count-int64(have))
	var other []string
	if n.InUse > 0 {
		other = append(other, fmt.Sprintf("%d in use", n.InUse))
	}
	if n.Tainted > 0 {
		other = append(other, fmt.Sprintf("%d tainted", n.Tainted))
	}
	if len(other) > 0 {
		lacks += "; there " + strings.Join(other, ", ")
	}
	e.say(3, "nearest node: %s has %d of %d %s (%s)", node, have, c.Count, in, lacks)
}

// whatIf looks for one allocated claim whose going away would let the
// claims fit: claims holding devices on the nodes the pod may go to, the
// smallest first, each tried on the nodes of its devices.
func (e *explainer) whatIf(ctx context.Context, classes structured.DeviceClassLister, slices []*resourceapi.ResourceSlice, cache *cel.Cache, nodes []*v1.Node, claims []*resourceapi.ResourceClaim, waiting map[string]bool) error {
	byName := map[string]*v1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	nodeOf := e.nodeOfPool()
	type holder struct {
		claim *resourceapi.ResourceClaim
		nodes []*v1.Node
		size  int
	}
	var holders []holder
	for i := range e.snap.Claims {
		c := &e.snap.Claims[i]
		if c.Status.Allocation == nil || waiting[c.Namespace+"/"+c.Name] {
			continue
		}
		h := holder{claim: c}
		seen := map[string]bool{}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess || !e.isOurs(r.Driver) {
				continue
			}
			h.size++
			if n := byName[nodeOf[r.Driver+"/"+r.Pool]]; n != nil && !seen[n.Name] {
				seen[n.Name] = true
				h.nodes = append(h.nodes, n)
			}
		}
		if len(h.nodes) > 0 {
			holders = append(holders, h)
		}
	}
	sort.SliceStable(holders, func(i, j int) bool {
		if holders[i].size != holders[j].size {
			return holders[i].size < holders[j].size
		}
		a, b := holders[i].claim, holders[j].claim
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	tried := 0
	for _, h := range holders {
		if tried == maxHolders {
			e.say(1, "no single claim's going away makes room among the %d smallest holders tried (of %d)", tried, len(holders))
			return nil
		}
		tried++
		node, err := allocate(ctx, e.allocatedState(h.claim), classes, slices, cache, h.nodes, claims)
		if err != nil {
			return err
		}
		if node != "" {
			e.say(1, "would fit on node %s if claim %s/%s%s went away", node, h.claim.Namespace, h.claim.Name, reservedBy(h.claim))
			return nil
		}
	}
	if len(holders) == 0 {
		e.say(1, "no claim holds devices on these nodes, so freeing one would not help")
		return nil
	}
	e.say(1, "no single claim's going away makes room (tried all %d holding devices on these nodes)", len(holders))
	return nil
}

// reservedBy is " (pods a, b)" for a claim's consumers.
func reservedBy(c *resourceapi.ResourceClaim) string {
	var pods []string
	for _, r := range c.Status.ReservedFor {
		if r.Resource == "pods" {
			pods = append(pods, c.Namespace+"/"+r.Name)
		}
	}
	switch len(pods) {
	case 0:
		return ""
	case 1:
		return " (pod " + pods[0] + ")"
	}
	return " (pods " + strings.Join(pods, ", ") + ")"
}

package simulate

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
)

// explain says, per request (and per firstAvailable subrequest), how many
// devices its class matched, how many passed its selectors, how many were
// free before the claim was allocated, and for matchAttribute constraints
// the largest free group on one node. It evaluates the same CEL with the
// upstream library as the allocator. For a claim that found no node this
// is the reason; with --explain it is shown for every claim.
func explain(ctx context.Context, cluster *Cluster, in *Inputs, cache *cel.Cache, allocated sets.Set[structured.DeviceID], claim *resourceapi.ResourceClaim) []string {
	matches := func(sels []resourceapi.DeviceSelector, driver string, d resourceapi.Device) bool {
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
	var parts []string
	for _, r := range claim.Spec.Devices.Requests {
		type choice struct {
			name, class string
			count       int64
			sels        []resourceapi.DeviceSelector
		}
		var choices []choice
		if r.Exactly != nil {
			choices = append(choices, choice{r.Name, r.Exactly.DeviceClassName, r.Exactly.Count, r.Exactly.Selectors})
		}
		for _, s := range r.FirstAvailable {
			choices = append(choices, choice{r.Name + "/" + s.Name, s.DeviceClassName, s.Count, s.Selectors})
		}
		for _, ch := range choices {
			class := in.Classes[ch.class]
			var classN, selN, freeN int
			groups := map[string]int{} // node/attribute value -> free devices
			attr := constraintAttr(claim, r.Name)
			for _, s := range cluster.Slices {
				for _, d := range s.Spec.Devices {
					if class == nil || !matches(class.Spec.Selectors, s.Spec.Driver, d) {
						continue
					}
					classN++
					if !matches(ch.sels, s.Spec.Driver, d) {
						continue
					}
					selN++
					if allocated.Has(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)) || len(d.Taints) > 0 {
						continue
					}
					freeN++
					if attr != "" {
						if v, ok := d.Attributes[resourceapi.QualifiedName(attr)]; ok && v.StringValue != nil {
							groups[s.Spec.Pool.Name+" "+*v.StringValue]++
						}
					}
				}
			}
			msg := fmt.Sprintf("request %q needs %d: class %s matches %d devices, %d pass the request's selectors, %d of those are free", ch.name, ch.count, ch.class, classN, selN, freeN)
			if int64(freeN) < ch.count && class != nil {
				// Too few free devices anywhere: say where partitions would
				// be if the nodes offered them (chips are Whole by default).
				n, nodes := cluster.unpublishedPartitions(func(driver string, d resourceapi.Device) bool {
					return matches(class.Spec.Selectors, driver, d) && matches(ch.sels, driver, d)
				})
				if n > 0 {
					msg += fmt.Sprintf("; %d partition devices would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes), on %s", n, nodeList(nodes))
				}
			}
			if attr != "" && freeN > 0 {
				best, where := 0, ""
				for k, n := range groups {
					if n > best || n == best && k < where {
						best, where = n, k
					}
				}
				msg += fmt.Sprintf("; constraint matchAttribute %s: the largest free group on one node has %d (%s)", attr, best, where)
			}
			parts = append(parts, msg)
		}
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

package simulate

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
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

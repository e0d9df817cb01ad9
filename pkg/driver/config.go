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

// config.go reads what a claim asks of this driver: its allocation
// results on this node and the opaque configs that apply to each.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// allocationConfigs is where the plugin finds the configs of a claim.
var allocationConfigs = field.NewPath("status", "allocation", "devices", "config")

// ourResults are the allocation results this plugin must prepare. A result
// of our driver in another pool means the claim was allocated for another
// node: preparing it here would hand out the wrong chip.
func (d *Driver) ourResults(claim *resourceapi.ResourceClaim) ([]resourceapi.DeviceRequestAllocationResult, error) {
	var out []resourceapi.DeviceRequestAllocationResult
	for i, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.name {
			continue
		}
		if r.Pool != d.node {
			return nil, fmt.Errorf("status.allocation.devices.results[%d]: device %s is in pool %q, but this is node %q", i, r.Device, r.Pool, d.node)
		}
		out = append(out, r)
	}
	return out, nil
}

// requestConfig is what the opaque configs say about one request.
type requestConfig struct {
	env      map[string]string
	strategy v1alpha1.SharingStrategy
}

// requestConfigs decodes the opaque configs for our driver that apply to
// each allocated request: class configs first, then claim configs, later
// ones win (the order the allocation lists them in); env variables merge,
// the last sharing.strategy set wins. A class config with enforced set is
// final: a claim config that sets one of its variables to another value
// fails the claim, and its Exclusive sharing stays. Errors name the
// config.
func (d *Driver) requestConfigs(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (map[string]requestConfig, error) {
	configs := claim.Status.Allocation.Devices.Config
	order := classFirst(configs)
	decoded, err := d.decodeConfigs(configs, order)
	if err != nil {
		return nil, err
	}
	out := map[string]requestConfig{}
	for _, r := range results {
		rc, err := mergeConfigs(configs, order, decoded, r.Request)
		if err != nil {
			return nil, err
		}
		out[r.Request] = rc
	}
	return out, nil
}

// classFirst lists the indices of configs, class configs first, then the
// claim's, each keeping their order.
func classFirst(configs []resourceapi.DeviceAllocationConfiguration) []int {
	order := make([]int, 0, len(configs))
	for i, c := range configs {
		if c.Source == resourceapi.AllocationConfigSourceClass {
			order = append(order, i)
		}
	}
	for i, c := range configs {
		if c.Source != resourceapi.AllocationConfigSourceClass {
			order = append(order, i)
		}
	}
	return order
}

// decodeConfigs decodes the opaque configs for our driver, by their index
// in configs.
func (d *Driver) decodeConfigs(configs []resourceapi.DeviceAllocationConfiguration, order []int) (map[int]*v1alpha1.DeviceConfig, error) {
	decoded := map[int]*v1alpha1.DeviceConfig{}
	for _, i := range order {
		c := configs[i]
		if c.Opaque == nil || c.Opaque.Driver != d.name {
			continue
		}
		cfg, err := d.decodeConfig(i, c)
		if err != nil {
			return nil, err
		}
		decoded[i] = cfg
	}
	return decoded, nil
}

// decodeConfig decodes config i, one for our driver. The webhook words
// the same errors for kubectl apply; a config for a driver that takes
// none is such an error too, never a config that is not there.
func (d *Driver) decodeConfig(i int, c resourceapi.DeviceAllocationConfiguration) (*v1alpha1.DeviceConfig, error) {
	path := v1alpha1.OpaqueParametersPath(allocationConfigs, i)
	cfg, err := d.configs.DecodeOpaqueConfig(path, c.Opaque.Driver, c.Opaque.Parameters.Raw)
	var oe *v1alpha1.OpaqueConfigError
	switch {
	case errors.Is(err, v1alpha1.ErrNotOurs):
		// The agent's decoder lacks the agent's own driver: refused, not
		// skipped, so a config is never silently left unapplied.
		return nil, fmt.Errorf("%w: the node agent's config decoder does not know its driver", err)
	case errors.As(err, &oe):
		oe.Source = "claim"
		if c.Source == resourceapi.AllocationConfigSourceClass {
			oe.Source = "DeviceClass"
		}
		return nil, err
	case err != nil:
		return nil, err
	case cfg.Enforced && c.Source != resourceapi.AllocationConfigSourceClass:
		return nil, fmt.Errorf("%s (from the claim): %w", path, v1alpha1.ErrEnforcedInClaim)
	}
	return cfg, nil
}

// mergeConfigs is what the decoded configs say about request, applied in
// order.
func mergeConfigs(configs []resourceapi.DeviceAllocationConfiguration, order []int, decoded map[int]*v1alpha1.DeviceConfig, request string) (requestConfig, error) {
	rc := requestConfig{env: map[string]string{}, strategy: v1alpha1.SharingShared}
	// enforced maps each variable an enforced class config sets to
	// that config's index; exclusive says one enforces Exclusive.
	enforced := map[string]int{}
	exclusive := false
	for _, i := range order {
		cfg, ok := decoded[i]
		if !ok || !appliesTo(configs[i].Requests, request) {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			v := cfg.Env[k]
			if j, ok := enforced[k]; ok && rc.env[k] != v {
				return requestConfig{}, fmt.Errorf("%s (from the claim): env[%s]: %q may not override %q, which the DeviceClass config %s enforces",
					v1alpha1.OpaqueParametersPath(allocationConfigs, i), k, v, rc.env[k], v1alpha1.OpaqueParametersPath(allocationConfigs, j))
			}
			rc.env[k] = v
			if cfg.Enforced {
				enforced[k] = i
			}
		}
		rc.strategy = cfg.SharingStrategy()
		exclusive = exclusive || (cfg.Enforced && rc.strategy == v1alpha1.SharingExclusive)
	}
	if exclusive {
		rc.strategy = v1alpha1.SharingExclusive
	}
	if len(rc.env) == 0 {
		rc.env = nil
	}
	return rc, nil
}

// appliesTo reports whether a config listing requests covers request
// (which may be "request/subrequest"): an empty list covers all.
func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 {
		return true
	}
	parent, _, _ := strings.Cut(request, "/")
	for _, r := range requests {
		if r == request || r == parent {
			return true
		}
	}
	return false
}

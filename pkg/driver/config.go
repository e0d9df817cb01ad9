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
	// Class configs first, then the claim's, keeping their order.
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
	decoded := map[int]v1alpha1.DeviceConfig{}
	for _, i := range order {
		c := configs[i]
		if c.Opaque == nil || c.Opaque.Driver != d.name {
			continue
		}
		// The webhook words the same errors for kubectl apply.
		path := v1alpha1.OpaqueParametersPath(allocationConfigs, i)
		cfg, _, err := v1alpha1.DecodeOpaqueConfig(path, c.Opaque.Driver, c.Opaque.Parameters.Raw)
		if err != nil {
			var oe *v1alpha1.OpaqueConfigError
			if errors.As(err, &oe) {
				oe.Source = "claim"
				if c.Source == resourceapi.AllocationConfigSourceClass {
					oe.Source = "DeviceClass"
				}
			}
			return nil, err
		}
		if cfg.IsEnforced() && c.Source != resourceapi.AllocationConfigSourceClass {
			return nil, fmt.Errorf("%s (from the claim): %w", path, v1alpha1.ErrEnforcedInClaim)
		}
		decoded[i] = cfg
	}
	out := map[string]requestConfig{}
	for _, r := range results {
		rc := requestConfig{env: map[string]string{}, strategy: v1alpha1.SharingShared}
		// enforced maps each variable an enforced class config sets to
		// that config's index; exclusive says one enforces Exclusive.
		enforced := map[string]int{}
		exclusive := false
		for _, i := range order {
			cfg, ok := decoded[i]
			if !ok || !appliesTo(configs[i].Requests, r.Request) {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(cfg.EnvVars())) {
				v := cfg.EnvVars()[k]
				if j, ok := enforced[k]; ok && rc.env[k] != v {
					return nil, fmt.Errorf("%s (from the claim): env[%s]: %q may not override %q, which the DeviceClass config %s enforces",
						v1alpha1.OpaqueParametersPath(allocationConfigs, i), k, v, rc.env[k], v1alpha1.OpaqueParametersPath(allocationConfigs, j))
				}
				rc.env[k] = v
				if cfg.IsEnforced() {
					enforced[k] = i
				}
			}
			rc.strategy = cfg.SharingStrategy()
			if cfg.IsEnforced() && rc.strategy == v1alpha1.SharingExclusive {
				exclusive = true
			}
		}
		if exclusive {
			rc.strategy = v1alpha1.SharingExclusive
		}
		if len(rc.env) == 0 {
			rc.env = nil
		}
		out[r.Request] = rc
	}
	return out, nil
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

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

package liveclustertest

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// ProfileSlices are the ResourceSlices the node agent of node publishes
// for a bundled hardware profile (demo/profiles) in chip modes modes (the
// agent's --chip-modes; "" is every chip Whole). The chips of the
// indices in unhealthy are unhealthy (reason DeviceFileMissing), so they
// carry the agent's taint.
func ProfileSlices(reg vendors.Registry, node, prof, modes string, unhealthy ...int) ([]resourceapi.ResourceSlice, error) {
	p, err := profile.Load(reg, prof)
	if err != nil {
		return nil, err
	}
	inv, err := profilenode.New(reg, node, p).Discover(context.Background())
	if err != nil {
		return nil, fmt.Errorf("discovering the chips of profile %s: %w", prof, err)
	}
	for i := range inv.Chips {
		for _, u := range unhealthy {
			if inv.Chips[i].Index == u {
				inv.Chips[i].Healthy, inv.Chips[i].HealthReason = false, inventory.ReasonDeviceFileMissing
			}
		}
	}
	policy, err := partitions.ParsePolicy(reg, modes)
	if err != nil {
		return nil, fmt.Errorf("chip modes %q: %w", modes, err)
	}
	var out []resourceapi.ResourceSlice
	for _, s := range resourceslices.SlicesFor(reg, node, inv, resourceslices.Options{Policy: policy}) {
		out = append(out, *s)
	}
	return out, nil
}

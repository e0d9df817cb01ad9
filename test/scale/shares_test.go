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

package scale

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

// chipDevices are the devices the agent of the i-th node publishes with s.
func chipDevices(t *testing.T, i int, s Slices) []resourceapi.Device {
	t.Helper()
	res, err := OurResources(context.Background(), NodeName(i), i, s)
	require.NoError(t, err)
	var out []resourceapi.Device
	for _, r := range res {
		for _, p := range r.Pools {
			for _, sl := range p.Slices {
				out = append(out, sl.Devices...)
			}
		}
	}
	return out
}

// TestEnforcedShareSlices checks what the Shared side publishes: one
// device per chip, as Whole, each enforced by the hardware and
// shareable; without the library's fact the MLU370's shares are
// accounting only, so the fact is what makes that side enforced.
func TestEnforcedShareSlices(t *testing.T) {
	for i, p := range OurProfiles {
		t.Run(p, func(t *testing.T) {
			whole := chipDevices(t, i, Slices{Modes: string(partitions.ModeWhole)})
			shared := chipDevices(t, i, EnforcedShares)
			require.Len(t, shared, len(whole), "one device per chip")
			for _, d := range shared {
				require.Equal(t, "hardware", *d.Attributes[partitions.AttrShareEnforcement].StringValue, d.Name)
				require.NotNil(t, d.AllowMultipleAllocations, d.Name)
				require.True(t, *d.AllowMultipleAllocations, d.Name)
			}
		})
	}
	plain := chipDevices(t, 1, Slices{Modes: string(partitions.ModeShared)})
	require.Equal(t, "none", *plain[0].Attributes[partitions.AttrShareEnforcement].StringValue, "MLU370 without the dynamic sMLU calls")
	again := chipDevices(t, 1, Slices{Modes: string(partitions.ModeShared)})
	require.Equal(t, "none", *again[0].Attributes[partitions.AttrShareEnforcement].StringValue, "the fact is not left on the profile's chips")
}

// TestSharedClaimsAskTheTemplatesFraction checks that each Shared claim
// asks exactly the fraction of the published chip its Partitioned twin's
// template takes, on the driver's grid, so both sides place the same
// work: the template's slot takes that fraction of the chip's cores.
func TestSharedClaimsAskTheTemplatesFraction(t *testing.T) {
	w, err := LoadWorkload("../..", SharesFile, SharedShareTemplates)
	require.NoError(t, err)
	for _, tc := range []struct {
		template string
		profile  int    // OurProfiles index
		quarters int64  // of a chip
		slot     string // the Partitioned twin's template, as in device names
	}{
		{"quarter-910b3-shared", 0, 1, "-vir05-1c-16g-0"},
		{"half-910b3-shared", 0, 2, "-vir10-3c-32g-0"},
		{"quarter-mlu370-shared", 1, 1, "-smlu-25p-0"},
		{"half-mlu370-shared", 1, 2, "-smlu-50p-0"},
	} {
		t.Run(tc.template, func(t *testing.T) {
			chip := chipDevices(t, tc.profile, EnforcedShares)[0]
			var slot *resourceapi.Device
			for _, d := range chipDevices(t, tc.profile, Slices{Modes: string(partitions.ModePartitioned)}) {
				if d.Name == chip.Name+tc.slot {
					slot = &d
				}
			}
			require.NotNil(t, slot, "%s%s", chip.Name, tc.slot)
			slotCores, chipCores := slot.Capacity[names.CapCores].Value, chip.Capacity[names.CapCores].Value
			require.Equal(t, chipCores.Value()*tc.quarters/4, slotCores.Value(), slot.Name)
			var asked map[resourceapi.QualifiedName]resource.Quantity
			for _, tmpl := range w.Templates {
				if tmpl.Name == tc.template {
					asked = tmpl.Spec.Spec.Devices.Requests[0].Exactly.Capacity.Requests
				}
			}
			require.NotEmpty(t, asked)
			for name, q := range asked {
				c := chip.Capacity[name]
				require.NotNil(t, c.RequestPolicy, "%s: %s has a request policy", chip.Name, name)
				want := c.Value.Value() * tc.quarters / 4
				if name == names.CapMemory {
					// The sMLU grid: steps of 1% of the chip, whole MiB.
					step := c.Value.Value() / (1 << 20) / 100 * (1 << 20)
					want = 25 * tc.quarters * step
				}
				require.Equal(t, want, q.Value(), "%s of %s", name, chip.Name)
			}
		})
	}
}

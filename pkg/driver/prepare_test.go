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

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// TestAConflictInsideOneClaimNamesTheOtherResult: results of one claim
// that the scheduler could never give together (a chip and its partition,
// a share of a chip the claim also takes whole) are refused before
// anything is made, and the error names the claim's other result, not an
// empty claim "/ (uid)" (the claim is not in the checkpoint yet). A
// device held by another prepared claim still names that claim.
func TestAConflictInsideOneClaimNamesTheOtherResult(t *testing.T) {
	p, err := profile.Load(registry, "mlu370-x8")
	require.NoError(t, err)
	inv, err := profilenode.New(registry, "node-0", p).Discover(context.Background())
	require.NoError(t, err)
	policy, err := partitions.ParsePolicy(registry, "Partitioned,mlu-3=Shared")
	require.NoError(t, err)
	d := &Driver{name: cambricon.Driver, vendor: cambricon.Cambricon{}, names: cambricon.Cambricon{}.Names(), parts: cambricon.SMLUs{}, node: "node-0", policy: policy,
		prepared: checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{
			"uid-holder": {Namespace: "default", Name: "holder", Devices: []checkpoint.Device{{Request: "accel", Pool: "node-0", Device: "mlu-0"}}},
		}}}
	d.index(inv.ChipsOf(cambricon.Vendor))
	share := types.UID("share-1")

	tests := []struct {
		name    string
		results []resourceapi.DeviceRequestAllocationResult
		want    string
	}{{
		name:    "a partition, then its chip",
		results: []resourceapi.DeviceRequestAllocationResult{{Device: "mlu-1-smlu-25p-0"}, {Device: "mlu-1"}},
		want:    "device mlu-1 has partition mlu-1-smlu-25p-0 prepared for status.allocation.devices.results[0] of this claim: refusing to give out a chip and its partition",
	}, {
		name:    "a chip, then its partition",
		results: []resourceapi.DeviceRequestAllocationResult{{Device: "mlu-2"}, {Device: "mlu-1"}, {Device: "mlu-2-smlu-50p-1"}},
		want:    "device mlu-2-smlu-50p-1 is a partition of mlu-2, which is prepared whole for status.allocation.devices.results[0] of this claim: refusing to give out a chip and its partition",
	}, {
		name:    "a shared chip whole, then a share of it",
		results: []resourceapi.DeviceRequestAllocationResult{{Device: "mlu-3"}, {Device: "mlu-3", ShareID: &share}},
		want:    "device mlu-3 is already prepared whole for status.allocation.devices.results[0] of this claim: refusing to share it",
	}, {
		name:    "a chip of another claim",
		results: []resourceapi.DeviceRequestAllocationResult{{Device: "mlu-1"}, {Device: "mlu-0"}},
		want:    "device mlu-0 is already prepared for claim default/holder (uid-holder): refusing to give it to two claims",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.results {
				tt.results[i].Request, tt.results[i].Driver, tt.results[i].Pool = "accel", cambricon.Driver, "node-0"
			}
			claim := &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod", UID: "uid-pod"},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
					Devices: resourceapi.DeviceAllocationResult{Results: tt.results}}},
			}
			// No partition tool, CDI writer or checkpoint store: a refused
			// claim must not reach them.
			_, _, err := d.prepare(context.Background(), claim)
			require.EqualError(t, err, tt.want)
			require.Len(t, d.prepared.Claims, 1, "the checkpoint is unchanged")
		})
	}
}

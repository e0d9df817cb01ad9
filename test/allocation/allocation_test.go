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

// Package allocation is test tier 2: the real DeviceClasses from
// deployments/ and claims from demo/, allocated by the upstream structured
// allocator over slices generated from the bundled profiles.
package allocation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

type classes map[string]*resourceapi.DeviceClass

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, v := range c {
		out = append(out, v)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if v, ok := c[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("DeviceClass %q not found", name)
}

var decoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

func loadClasses(t *testing.T) classes {
	files, err := filepath.Glob("../../deployments/helm/accel-dra/deviceclasses/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 8)
	// The per-model and per-shape classes the chart installs too, which
	// the demo's claims name.
	models, err := filepath.Glob("../../deployments/helm/accel-dra/deviceclasses/models/*/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, models)
	out := classes{}
	for _, f := range append(files, models...) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		obj, _, err := decoder.Decode(data, nil, nil)
		require.NoError(t, err, f)
		dc := obj.(*resourceapi.DeviceClass)
		out[dc.Name] = dc
	}
	return out
}

func loadTemplateClaim(t *testing.T, file string) *resourceapi.ResourceClaim {
	return loadTemplateClaimFile(t, filepath.Join("../../demo/workloads", file))
}

// loadTemplateClaimFile is loadTemplateClaim for a file anywhere.
func loadTemplateClaimFile(t *testing.T, file string) *resourceapi.ResourceClaim {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	obj, _, err := decoder.Decode(data, nil, nil)
	require.NoError(t, err, file)
	tmpl := obj.(*resourceapi.ResourceClaimTemplate)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: tmpl.Name, Namespace: "default", UID: types.UID("uid-" + tmpl.Name)}, Spec: tmpl.Spec.Spec}
	// The API server's defaulting, which the allocator relies on.
	for i := range claim.Spec.Devices.Requests {
		if e := claim.Spec.Devices.Requests[i].Exactly; e != nil {
			if e.AllocationMode == "" {
				e.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			}
			if e.Count == 0 {
				e.Count = 1
			}
		}
		for j := range claim.Spec.Devices.Requests[i].FirstAvailable {
			s := &claim.Spec.Devices.Requests[i].FirstAvailable[j]
			if s.AllocationMode == "" {
				s.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			}
			if s.Count == 0 {
				s.Count = 1
			}
		}
	}
	return claim
}

// slicesFor returns the slices of a simulated node with the default chip
// modes: whole chips only.
func slicesFor(t *testing.T, node, profileName string) []*resourceapi.ResourceSlice {
	return slicesWith(t, node, profileName, "")
}

// slicesWith returns the slices of a simulated node whose agent runs with
// --chip-modes=chipModes.
func slicesWith(t *testing.T, node, profileName, chipModes string) []*resourceapi.ResourceSlice {
	t.Helper()
	policy, err := partitions.ParsePolicy(registry, chipModes)
	require.NoError(t, err)
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, node, p).Discover(context.Background())
	require.NoError(t, err)
	return resourceslices.SlicesFor(registry, node, inv, resourceslices.Options{Policy: policy})
}

var features = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true,
	DeviceTaints: true, DeviceBindingAndStatus: true, ConsumableCapacity: true}

func allocate(t *testing.T, cls classes, slices []*resourceapi.ResourceSlice, allocated sets.Set[structured.DeviceID], node string, claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	ctx := context.Background()
	state := structured.AllocatedState{AllocatedDevices: allocated, AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	a, err := structured.NewAllocator(ctx, features, state, cls, slices, cel.NewCache(100, cel.Features{EnableConsumableCapacity: true}))
	require.NoError(t, err)
	res, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
	require.NoError(t, err)
	if res == nil {
		return nil
	}
	for _, r := range res[0].Devices.Results {
		allocated.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
	}
	return res[0].Devices.Results
}

func linkGroups(slices []*resourceapi.ResourceSlice) map[string]string {
	out := map[string]string{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			out[d.Name] = *d.Attributes[names.AttrLinkGroup].StringValue
		}
	}
	return out
}

func TestFourChipSameRingClaimNeverStraddlesTheTwo910ARings(t *testing.T) {
	cls := loadClasses(t)
	slices := slicesFor(t, "train-0", "atlas-800-910a")
	groups := linkGroups(slices)
	allocated := sets.New[structured.DeviceID]()
	for round := 0; round < 2; round++ {
		res := allocate(t, cls, slices, allocated, "train-0", loadTemplateClaim(t, "03-same-ring-4.yaml"))
		require.Len(t, res, 4, "round %d", round)
		ring := sets.New[string]()
		for _, r := range res {
			ring.Insert(groups[r.Device])
		}
		require.Equal(t, 1, ring.Len(), "devices %v span rings %v", res, ring)
	}
	require.Nil(t, allocate(t, cls, slices, allocated, "train-0", loadTemplateClaim(t, "03-same-ring-4.yaml")), "both rings are taken")
}

func TestFiveChipSameRingClaimIsUnsatisfiableOn910A(t *testing.T) {
	claim := loadTemplateClaim(t, "03-same-ring-4.yaml")
	claim.Spec.Devices.Requests[0].Exactly.Count = 5
	require.Nil(t, allocate(t, loadClasses(t), slicesFor(t, "train-0", "atlas-800-910a"), sets.New[structured.DeviceID](), "train-0", claim))
}

func TestFirstAvailableFallsBackToMLU370When910BIsExhausted(t *testing.T) {
	cls := loadClasses(t)
	slices := slicesFor(t, "mixed-0", "mixed-910b-mlu370")
	allocated := sets.New[structured.DeviceID]()
	var got []string
	for i := 0; i < 6; i++ {
		res := allocate(t, cls, slices, allocated, "mixed-0", loadTemplateClaim(t, "05-first-available.yaml"))
		require.Len(t, res, 1)
		got = append(got, res[0].Request+"="+res[0].Driver)
	}
	want := []string{}
	for i := 0; i < 4; i++ {
		want = append(want, "accel/ascend910b="+ascend.Driver)
	}
	want = append(want, "accel/mlu370="+cambricon.Driver, "accel/mlu370="+cambricon.Driver)
	require.Equal(t, want, got)
}

func TestMindSporeTrainingFitsOnlyAnHCCSDomainOfEight(t *testing.T) {
	cls := loadClasses(t)
	claim := loadTemplateClaim(t, "01-mindspore-training.yaml")
	require.Nil(t, allocate(t, cls, slicesFor(t, "train-0", "atlas-800-910a"), sets.New[structured.DeviceID](), "train-0", claim), "910A rings hold 4")
	res := allocate(t, cls, slicesFor(t, "a2-0", "atlas-800t-a2"), sets.New[structured.DeviceID](), "a2-0", claim)
	require.Len(t, res, 8)
}

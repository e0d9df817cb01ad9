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

package chipview_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
)

// inSuperPod gives every device of slices the super pod sp.
func inSuperPod(slices []resourceapi.ResourceSlice, sp string) []resourceapi.ResourceSlice {
	for i := range slices {
		for j := range slices[i].Spec.Devices {
			slices[i].Spec.Devices[j].Attributes[fabric.AttrSuperPod] = resourceapi.DeviceAttribute{StringValue: ptr.To(sp)}
		}
	}
	return slices
}

func TestTheSummaryGroupsChipsBySuperPod(t *testing.T) {
	slices := append(append(inSuperPod(nodeSlices(t, "a3-0", "atlas-800t-a2", ""), "1"), inSuperPod(nodeSlices(t, "a3-1", "atlas-800t-a2", ""), "2")...),
		nodeSlices(t, "infer-0", "mlu370-x8", "")...)
	claims := []resourceapi.ResourceClaim{
		claim("ml", "train", []resourceapi.DeviceRequestAllocationResult{result(ascend, "a3-1", "npu-0")}, prepared),
	}
	v, err := chipview.Build(&livecluster.Snapshot{Slices: slices, Claims: claims}, chipview.Options{Registry: registry})
	require.NoError(t, err)
	rows := chipview.Summarize(v.Chips, false)
	require.Equal(t, []chipview.ModelSummary{
		{Model: "MLU370-X8", Total: 8, Free: 8},
		{SuperPod: "1", Model: "Ascend910B3", Total: 8, Free: 8},
		{SuperPod: "2", Model: "Ascend910B3", Total: 8, Allocated: 1, Free: 7},
	}, rows)
	var out bytes.Buffer
	require.NoError(t, chipview.PrintSummary(&out, rows, false))
	require.Equal(t, `SUPER POD  MODEL        TOTAL  ALLOCATED  FREE  UNHEALTHY
-          MLU370-X8    8      0          8     0
1          Ascend910B3  8      0          8     0
2          Ascend910B3  8      1          7     0
`, out.String())
}

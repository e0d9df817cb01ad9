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

package ascend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePhyIDRemap(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       PhyIDRemap
		err        string
	}{
		{
			// npu_chip_info.c:935-938.
			name: "the four lines of npu-smi",
			text: readFile(t, "testdata/atlas-300i-duo/npu-smi/npu-smi_info_-t_phyid-remap_-p_3.txt"),
			want: PhyIDRemap{PhysicalID: 3, LogicID: 3, NPU: 2, Chip: 1},
		},
		{
			// npu_chip_info.c:951-954: no logic id, a slot id.
			name: "an NPU_SMI_V2 build",
			text: "\tChip Phy-ID                   :5\n\tNPU ID                        :4\n\tSlot ID                       :1\n\tChip ID                       :1\n",
			want: PhyIDRemap{PhysicalID: 5, LogicID: -1, NPU: 4, Chip: 1},
		},
		{name: "no chip id", text: "\tChip Physical ID              :3\n\tNPU ID                        :2\n", err: "no Chip ID line"},
		{name: "a negative id", text: "\tChip Physical ID              :3\n\tNPU ID                        :-2\n", err: `NPU ID "-2" is not a non-negative integer`},
		{name: "an error message", text: "Usage: npu-smi info <watch|proc-mem|-h|-m|-l|-t type> [Options...]\n", err: "no Chip Physical ID line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePhyIDRemap("npu-smi info -t phyid-remap -p 3", []byte(tc.text))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

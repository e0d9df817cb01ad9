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

package ranktable_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/ranktable"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// a3Chip is chip i of an Atlas A3 server: SDID after the DCMI layout
// (server index in bits 22-31, chip 18-21, die 16-17, device 0-15).
func a3Chip(server int64, i int, sp string) ranktable.Chip {
	sdid := server<<22 | int64(i/2)<<18 | int64(i%2)<<16 | int64(i)
	return ranktable.Chip{Claim: "ml/claim", Device: fmt.Sprintf("npu-%d", i), Data: v1alpha1.DeviceStatusData{
		Model: "Ascend910C", Index: ptr.To(i), DeviceIP: fmt.Sprintf("10.%s.%d.%d/24", sp, server, 10+i),
		SuperPodID: sp, SuperDeviceID: ptr.To(sdid), ServerIndex: ptr.To(server)}}
}

func b3Chip(host, i int) ranktable.Chip {
	return ranktable.Chip{Claim: "ml/claim", Device: fmt.Sprintf("npu-%d", i), Data: v1alpha1.DeviceStatusData{
		Model: "Ascend910B3", Index: ptr.To(i), DeviceIP: fmt.Sprintf("192.168.%d.%d/24", host, 100+i)}}
}

func member(n int, chips ...ranktable.Chip) ranktable.Member {
	return ranktable.Member{Pod: fmt.Sprintf("ml/train-%d", n), HostIP: fmt.Sprintf("10.1.0.%d", n+1), PodIP: fmt.Sprintf("10.244.%d.5", n), Chips: chips}
}

func TestTheRankTableVersionFollowsTheChipGeneration(t *testing.T) {
	tests := []struct {
		golden  string
		members []ranktable.Member
	}{
		{"ranktable-910b.json", []ranktable.Member{
			member(0, b3Chip(0, 1), b3Chip(0, 0)), // listed out of order: ranked by index
			member(1, b3Chip(1, 0), b3Chip(1, 1)),
		}},
		{"ranktable-a3.json", []ranktable.Member{
			member(0, a3Chip(0, 0, "1"), a3Chip(0, 1, "1")),
			member(1, a3Chip(1, 0, "1"), a3Chip(1, 1, "1")),
			member(2, a3Chip(0, 0, "2"), a3Chip(0, 1, "2")),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			table, err := ranktable.Build(tc.members)
			require.NoError(t, err)
			got, err := json.MarshalIndent(table, "", "    ")
			require.NoError(t, err)
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))
		})
	}
}

func TestARankTableThatCannotBeWrittenSaysWhichPodAndChip(t *testing.T) {
	noIP := b3Chip(1, 0)
	noIP.Data.DeviceIP = ""
	noSDID := a3Chip(1, 0, "1")
	noSDID.Data.SuperDeviceID = nil
	sameNode := member(1, b3Chip(1, 0))
	sameNode.HostIP = "10.1.0.1"
	tests := []struct {
		name    string
		members []ranktable.Member
		err     string
	}{
		{"no pods", nil, "no pods: the job has none to rank"},
		{"a pod without chips", []ranktable.Member{member(0, b3Chip(0, 0)), member(1)},
			"pod ml/train-1 has no prepared chip of accel-dra: every pod of the job must hold chips"},
		{"mixed generations", []ranktable.Member{member(0, a3Chip(0, 0, "1")), member(1, b3Chip(1, 0))},
			"mixed generations: pod ml/train-0 has npu-0 (Ascend910C) in super pod 1, pod ml/train-1 has npu-0 (Ascend910B3) in none: one rank table holds chips of one generation"},
		{"a missing device IP", []ranktable.Member{member(0, b3Chip(0, 0)), member(1, noIP)},
			"pod ml/train-1, claim ml/claim, device npu-0: no device IP in the claim status (deviceIP): HCCL needs the address of each chip's RoCE port (hccn_tool -i 0 -ip -s ...)"},
		{"a super pod chip without its SDID", []ranktable.Member{member(0, noSDID)},
			"pod ml/train-0, claim ml/claim, device npu-0: no super device ID in the claim status (superDeviceID) of a chip in super pod 1"},
		{"two pods on one node", []ranktable.Member{member(0, b3Chip(0, 0)), sameNode},
			"pods ml/train-0 and ml/train-1 are on one node (host IP 10.1.0.1): a rank table has one server per node; keep the job's pods on separate nodes (podAntiAffinity on kubernetes.io/hostname)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ranktable.Build(tc.members)
			require.EqualError(t, err, tc.err)
		})
	}
}

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
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	kptr "k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// sdid is the SDID of the die on card, device of server as the 910_93
// DCMI reference lays it out: server index in bits 22-31, chip id 18-21,
// die id 16-17, chip × 2 + die in 0-15.
func sdid(server, card, device int64) int64 {
	return server<<22 | card<<18 | device<<16 | (card*2 + device)
}

// The super pod of every A3 chip is DCMI's SPOD_INFO, published only where
// every chip answers it with valid fields that agree; chips that answer
// "not supported" (910B here) have none, without a word.
func TestDiscoverReadsTheSuperPodOfA3Chips(t *testing.T) {
	const inPod = "spod 7 384 3 0 1"
	for _, tc := range []struct {
		name, fixture string
		lines         []string
		published     bool
		log           string
	}{
		{name: "an A3 node in super pod 7 as its server 3", fixture: "atlas-a3-24", lines: []string{inPod}, published: true},
		{name: "an A3 node in no super pod: not supported", fixture: "atlas-a3-24"},
		{name: "a 910B node: not supported", fixture: "atlas-800t-a2", lines: []string{inPod}},
		{name: "an invalid super pod id", fixture: "atlas-a3-24", lines: []string{inPod, "spod-chip 1 super_pod_id 0xFFFFFFFF"},
			log: `"The super-pod identity of an Ascend chip is invalid, publishing none for the node" npu=0 chip=1 field="super_pod_id"`},
		{name: "a server index that is not the SDID's", fixture: "atlas-a3-24", lines: []string{inPod, "spod-chip 0 sdid 0"},
			log: `field="server_index (not bits 22-31 of sdid)"`},
		{name: "chips in two super pods", fixture: "atlas-a3-24", lines: []string{inPod, "spod-chip 2 super_pod_id 8"},
			log: `"The node's Ascend chips disagree on their super pod, publishing none for the node" npu=1 chip=0 field="super_pod_id" first=7 this=8`},
		{name: "a chip's query fails", fixture: "atlas-a3-24", lines: []string{inPod, "fail-chip 3 dcmi_get_device_info -8005"},
			log: `"Cannot read the super pod of an Ascend chip, publishing none for the node" npu=1 chip=1 err="dcmi_get_device_info returned -8005"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
			lib := buildMockDCMI(t, tc.fixture, tc.lines...)
			root, runner := fakeRoot(t, a3Buses, "0xd803"), discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}
			if tc.fixture == "atlas-800t-a2" {
				root, _ = fixture(tc.fixture)
				runner = recordings(t, tc.fixture)
			}
			inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, inv.Chips)
			published := publishedFabric(t, inv)
			for i, c := range inv.Chips {
				if !tc.published {
					require.Equal(t, fabricAttrs{}, published[i], "chip %d", i)
					require.Empty(t, c.SuperPod, "chip %d", i)
					continue
				}
				require.Equal(t, fabricAttrs{superPod: "7", serverIndex: kptr.To[int64](3), sdid: kptr.To(sdid(3, int64(i/2), int64(i%2)))}, published[i], "chip %d", i)
				// The claim status (rank tables) reads the same fields.
				require.Equal(t, "7", c.SuperPod)
				require.NotNil(t, c.ServerIndex)
				require.NotNil(t, c.SuperDeviceID)
				require.Equal(t, int64(3), *c.ServerIndex)
				require.Equal(t, sdid(3, int64(i/2), int64(i%2)), *c.SuperDeviceID, "chip %d", i)
				require.Equal(t, "libdcmi.so dcmi_get_device_info (CHIP_INF, SPOD_INFO)", c.Sources[SourceSuperPod])
			}
			if tc.log != "" {
				require.Contains(t, logs.String(), tc.log)
			} else {
				require.NotContains(t, logs.String(), "publishing none")
			}
		})
	}
}

// A chip whose SDID the super pod's fabric records as abnormal
// (SPOD_NODE_STATUS 1) is unhealthy for that reason alone, under its own
// taint, and keeps its super pod; records of other NPUs, status 0 and a
// failing status query leave every chip as it was.
func TestDiscoverMarksAChipTheSuperPodCallsAbnormal(t *testing.T) {
	const inPod = "spod 7 384 3 0 1"
	chip2 := sdid(3, 1, 0)
	for _, tc := range []struct {
		name      string
		lines     []string
		unhealthy int // -1: none
		log       string
	}{
		{name: "chip 2 abnormal", lines: []string{inPod, fmt.Sprintf("spod-node-status %d 1", chip2)}, unhealthy: 2},
		{name: "chip 2 normal again", lines: []string{inPod, fmt.Sprintf("spod-node-status %d 0", chip2)}, unhealthy: -1},
		{name: "an NPU of another server abnormal", lines: []string{inPod, fmt.Sprintf("spod-node-status %d 1", sdid(4, 1, 0))}, unhealthy: -1},
		{name: "dcmi_get_device_info fails on chip 2: no super pod, no taint", lines: []string{inPod, fmt.Sprintf("spod-node-status %d 1", chip2), "fail-chip 2 dcmi_get_device_info -8005"},
			unhealthy: -1, log: `"Cannot read the super pod of an Ascend chip, publishing none for the node" npu=1 chip=0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
			lib := buildMockDCMI(t, "atlas-a3-24", tc.lines...)
			root, runner := fakeRoot(t, a3Buses, "0xd803"), discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}
			inv, err := New(Config{Root: root, Runner: runner, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, 4)
			for i, c := range inv.Chips {
				if i != tc.unhealthy {
					require.True(t, c.Healthy, "chip %d: %s", i, c.HealthMessage)
					continue
				}
				require.False(t, c.Healthy)
				require.Equal(t, []string{inventory.ReasonSuperPodLinkAbnormal}, c.Reasons())
				require.Contains(t, c.HealthMessage, fmt.Sprintf("SDID %d", chip2))
				require.Equal(t, "7", c.SuperPod, "the abnormal chip keeps its super pod")
			}
			if tc.log != "" {
				require.Contains(t, logs.String(), tc.log)
			}
		})
	}
}

// A link that degrades while the agent runs is seen at the next health
// read, by the same loaded library: the status is asked at every read,
// not once at start.
func TestASuperPodLinkThatDegradesIsSeenAtTheNextRead(t *testing.T) {
	lib := buildMockDCMI(t, "atlas-a3-24", "spod 7 384 3 0 1")
	root, runner := fakeRoot(t, a3Buses, "0xd803"), discoverytest.MapRunner{cmdVNPUMode: "vnpu-mode : docker\n"}
	b := New(Config{Root: root, Runner: runner, Library: lib})
	inv, err := b.Discover(t.Context())
	require.NoError(t, err)
	for i, c := range inv.Chips {
		require.True(t, c.Healthy, "chip %d before the link degrades", i)
	}

	f, err := os.OpenFile(os.Getenv("ACCEL_DRA_DCMI_FIXTURE"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "spod-node-status %d 1\n", sdid(3, 0, 1))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	inv, err = b.Discover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{inventory.ReasonSuperPodLinkAbnormal}, inv.Chips[1].Reasons())
	for _, i := range []int{0, 2, 3} {
		require.True(t, inv.Chips[i].Healthy, "chip %d", i)
	}
}

// spodOutput is `npu-smi info -t spod-info` of a 910_93 chip in the
// layout of testdata/spod/a3-die.txt (print_npu_spod_info).
func spodOutput(sdid, size, id, server int64) string {
	return fmt.Sprintf("\t%-30s : %d\n\t%-30s : %d\n\t%-30s : %d\n\t%-30s : %d\n",
		"SDID", sdid, "Super Pod Size", size, "Super Pod ID", id, "Server Index", server)
}

// Without DCMI, the identity of 910_93 chips is `npu-smi info -t
// spod-info`, checked the same way; other chips are not asked.
func TestDiscoverReadsTheSuperPodThroughNpuSmi(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a3        bool
		drop      int
		published bool
		log       string
	}{
		{name: "eight A3 dies of server 3", a3: true, drop: -1, published: true},
		{name: "a chip's query fails", a3: true, drop: 5,
			log: `"Cannot read the super pod of an Ascend chip, publishing none for the node" npu=5 chip=0`},
		{name: "910B chips are not asked", drop: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
			root, _ := fixture("atlas-800t-a2")
			runner := recordings(t, "atlas-800t-a2")
			for npu := range 8 {
				if tc.a3 {
					runner[cmdInfo] = discoverytest.ReplaceOnce(t, runner[cmdInfo], fmt.Sprintf("| %d     910B3 ", npu), fmt.Sprintf("| %d     Ascend910 ", npu))
				}
				if npu != tc.drop {
					runner[fmt.Sprintf("npu-smi info -t spod-info -i %d -c 0", npu)] = spodOutput(sdid(3, int64(npu), 0), 384, 7, 3)
				}
			}
			inv, err := New(Config{Root: root, Runner: runner}).Discover(ctx)
			require.NoError(t, err)
			require.Len(t, inv.Chips, 8)
			published := publishedFabric(t, inv)
			for i, c := range inv.Chips {
				if !tc.published {
					require.Equal(t, fabricAttrs{}, published[i], "chip %d", i)
					continue
				}
				require.Equal(t, fabricAttrs{superPod: "7", serverIndex: kptr.To[int64](3), sdid: kptr.To(sdid(3, int64(i), 0))}, published[i], "chip %d", i)
				require.Equal(t, "7", c.SuperPod)
				require.NotNil(t, c.SuperDeviceID)
				require.Equal(t, sdid(3, int64(i), 0), *c.SuperDeviceID)
				require.Equal(t, fmt.Sprintf("npu-smi info -t spod-info -i %d -c 0", i), c.Sources[SourceSuperPod])
			}
			if tc.log != "" {
				require.Contains(t, logs.String(), tc.log)
			}
		})
	}
}

// fabricAttrs are a chip's place in its super pod.
type fabricAttrs struct {
	superPod          string
	serverIndex, sdid *int64
}

// publishedFabric is the place of each of inv's chips as its own fields
// say it: pkg/resourceslices publishes those as the fabric attributes
// (its TestDiscoveredSuperPodIsPublished), so discovery sets them and no
// vendor extra of the same name.
func publishedFabric(t *testing.T, inv inventory.Inventory) []fabricAttrs {
	t.Helper()
	out := make([]fabricAttrs, len(inv.Chips))
	for i, c := range inv.Chips {
		out[i] = fabricAttrs{superPod: c.SuperPod, serverIndex: c.ServerIndex, sdid: c.SuperDeviceID}
		for _, k := range []string{string(names.AttrSuperPod), string(names.AttrServerIndex), string(names.AttrSuperDeviceID)} {
			require.NotContains(t, c.Extra, k, "chip %d: the fabric is the chip's own fields, not a vendor extra", i)
		}
	}
	return out
}

func TestParseSpodInfo(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     dcmiSpodInfo
		err      string
	}{
		{name: "the recording", in: readFile(t, filepath.Join("testdata", "spod", "a3-die.txt")),
			want: dcmiSpodInfo{SDID: uint32(sdid(3, 1, 1)), SuperPodSize: 384, SuperPodID: 7, ServerIndex: 3}},
		{name: "a line missing", in: spodOutput(1, 2, 3, 4)[:40], err: `no "super pod size" line`},
		{name: "not a number", in: "\tSDID                           : NA\n", err: "SDID is not an unsigned 32-bit number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSpodInfo("npu-smi info -t spod-info", []byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

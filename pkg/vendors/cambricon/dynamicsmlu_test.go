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

package cambricon

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// sized are the Sources of a chip read through a libcndev with the
// dynamic sMLU calls.
var sized = map[string]string{SourceSizedSMLU: CNDevLibrary + " cndevCreateSMluProfileInfo"}

// The grid of a Shared chip's shares is what the driver carves: memory in
// 1% of the chip (the device plugin's unit), cores in the smallest step
// whose quota is a whole percent; none without sMLU or without the
// library's dynamic calls.
func TestTheShareGridIsWhatTheDriverCarves(t *testing.T) {
	for _, tc := range []struct {
		name string
		chip inventory.Chip
		want vendors.ShareGrid
		ok   bool
	}{
		{name: "MLU370-X8: 4 of 16 cores are 25%", chip: inventory.Chip{Model: "MLU370-X8", Cores: 16, MemoryBytes: 23308 << 20, Sources: sized},
			want: vendors.ShareGrid{MemoryStep: 233 << 20, MaxMemory: 23300 << 20, CoresStep: 4, MaxCores: 16}, ok: true},
		{name: "MLU590-M9: 12 of 48", chip: inventory.Chip{Model: "MLU590-M9", Cores: 48, MemoryBytes: 98304 << 20, Sources: sized},
			want: vendors.ShareGrid{MemoryStep: 983 << 20, MaxMemory: 98300 << 20, CoresStep: 12, MaxCores: 48}, ok: true},
		{name: "MLU590-M9C: 2 of 40 are 5%", chip: inventory.Chip{Model: "MLU590-M9C", Cores: 40, MemoryBytes: 65536 << 20, Sources: sized},
			want: vendors.ShareGrid{MemoryStep: 655 << 20, MaxMemory: 65500 << 20, CoresStep: 2, MaxCores: 40}, ok: true},
		{name: "MLU270 has no sMLU", chip: inventory.Chip{Model: "MLU270-S4", Cores: 16, MemoryBytes: 16384 << 20, Sources: sized}},
		{name: "read with cnmon: no dynamic profiles", chip: inventory.Chip{Model: "MLU370-X8", Cores: 16, MemoryBytes: 23308 << 20}},
		{name: "cores unknown", chip: inventory.Chip{Model: "MLU370-X8", MemoryBytes: 23308 << 20, Sources: sized}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SMLUs{}.ShareGrid(tc.chip)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// stateLines are the mock's state file lines that start with prefix
// ("p " for dynamic profiles).
func stateLines(t *testing.T, prefix string) []string {
	t.Helper()
	raw, err := os.ReadFile(os.Getenv(cndevtest.EnvState))
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// A share becomes an sMLU of its size: a dynamic profile made with
// cndevCreateSMluProfileInfo (quota in percent, memory in bytes), reused
// by a second share of that size, and removed with the last instance
// that uses it.
func TestDynamicSMLUsAreMadeToTheShareSize(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvRoot, t.TempDir())
	l, err := OpenCNDev("/", lib)
	require.NoError(t, err)
	tool := &PartitionTool{Runner: failingRunner{t}, Library: l}
	c := inventory.Chip{Vendor: Vendor, Model: "MLU370-X8", Index: 3, Cores: 16, MemoryBytes: 23308 << 20,
		DeviceNodes: []string{"/dev/cambricon_dev3"}, Sources: sized}

	quarter, err := SMLUs{}.SizedTemplate(c, 25*(233<<20), 4)
	require.NoError(t, err)
	require.Equal(t, vendors.Template{Name: "25p.5825mb", Type: PartitionType, Slug: "smlu-25p-5825mb", Cores: 4, MemoryBytes: 25 * (233 << 20)}, quarter)
	_, err = SMLUs{}.SizedTemplate(c, 1<<30, 4)
	require.ErrorContains(t, err, "a dynamic sMLU of chip 3: memory 1073741824 bytes is not a multiple of 244318208 bytes from 244318208 to 24431820800")
	_, err = SMLUs{}.SizedTemplate(c, 233<<20, 3)
	require.ErrorContains(t, err, "3 cores is not a multiple of 4 from 4 to 16")

	a, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, vendors.Instance{Type: PartitionType, Chip: 3, Template: "25p.5825mb", ID: 1,
		DeviceNode: "/dev/cambricon-caps/cap_dev3_mi1", UUID: "MLU-54010003-2311-0000-0000-000000000001"}, a)
	require.Equal(t, []string{fmt.Sprintf("p 3 3 25 %d", 25*(233<<20))}, stateLines(t, "p "), "profile 3, after the driver's 0-2")
	b, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, 2, b.ID)
	require.Len(t, stateLines(t, "p "), 1, "the second share of that size reuses the profile")

	require.NoError(t, tool.Destroy(ctx, c, a))
	require.Len(t, stateLines(t, "p "), 1, "the other instance still uses it")
	require.NoError(t, tool.Destroy(ctx, c, b))
	require.Empty(t, stateLines(t, "p "), "removed with its last instance")
}

// The mock refuses what the driver refuses (mock_cndev.c cites
// smlu/smlu_core.c and smlu/smlu_cgroup.c): a new profile's quota or
// memory out of range, more than 16 profiles, more instances than the
// driver allows, an instance the chip has no quota or memory left for.
func TestTheMockCNDevRefusesWhatTheDriverRefuses(t *testing.T) {
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	l, err := OpenCNDev("/", lib)
	require.NoError(t, err)
	chipMemory := uint64(23308) << 20
	newProfile := func(card int, quota uint32, memory uint64) (int32, error) {
		h, err := l.handle("test", card)
		require.NoError(t, err)
		set := cndevSMluSet{Version: cndevVersion6, MluQuota: quota, MemorySize: memory}
		var id int32
		err = l.call("test", "cndevCreateSMluProfileInfo", func() int32 { return l.newProfile(&set, &id, h) })
		return id, err
	}
	instance := func(card int, profile int32) error {
		h, err := l.handle("test", card)
		require.NoError(t, err)
		var mi int32
		name := []byte{0}
		return l.call("test", "cndevCreateSMluInstanceByProfileId", func() int32 { return l.create(&mi, uint32(profile), h, &name[0]) })
	}
	for _, tc := range []struct {
		name          string
		quota, memory uint64
		want          string
	}{
		{name: "quota 0", quota: 0, memory: 1 << 30, want: "cndev error 5 (invalid argument)"},
		{name: "quota over 100%", quota: 101, memory: 1 << 30, want: "cndev error 5 (invalid argument)"},
		{name: "no memory", quota: 10, memory: 0, want: "cndev error 5 (invalid argument)"},
		{name: "more memory than the chip", quota: 10, memory: chipMemory + 1, want: "cndev error 5 (invalid argument)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newProfile(0, uint32(tc.quota), tc.memory)
			require.ErrorContains(t, err, "libcndev.so cndevCreateSMluProfileInfo: "+tc.want)
		})
	}

	// 16 profiles at most: the driver's 3 and 13 more.
	for i := range 13 {
		id, err := newProfile(1, uint32(i+1), 1<<20)
		require.NoError(t, err)
		require.Equal(t, int32(3+i), id)
	}
	_, err = newProfile(1, 50, 1<<20)
	require.ErrorContains(t, err, "cndevCreateSMluProfileInfo: cndev error 7 (unknown error)")

	// 65 instances at most (the driver checks "more than 64"), however
	// small: profile 3 of card 1 is 1% and 1 MiB.
	for range 65 {
		require.NoError(t, instance(1, 3))
	}
	require.ErrorContains(t, instance(1, 3), "cndevCreateSMluInstanceByProfileId: cndev error 9 (insufficient space)")

	// No quota left, and no memory left.
	big, err := newProfile(2, 60, 1<<20)
	require.NoError(t, err)
	require.NoError(t, instance(2, big))
	require.ErrorContains(t, instance(2, big), "cndev error 9 (insufficient space)", "120% of the IPU")
	roomy, err := newProfile(4, 1, chipMemory*6/10)
	require.NoError(t, err)
	require.NoError(t, instance(4, roomy))
	require.ErrorContains(t, instance(4, roomy), "cndev error 9 (insufficient space)", "120% of the memory")
}

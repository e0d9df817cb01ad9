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

package plugin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// smluStep is the memory step of an MLU370-X8 chip of the fixture (23308
// MiB): 1% of it, in whole MiB.
const smluStep = int64(233) << 20

// enforcedNode serves the MLU370-X8 fixture node read through the mock
// libcndev (its fixture with extra lines), chips 4 and 5 Shared: the
// library has the dynamic sMLU calls, so their shares are sMLUs. It
// returns the node and the mock's state file.
func enforcedNode(t *testing.T, extra ...string) (*node, string) {
	t.Helper()
	needsRoot(t, "mknod of the node's fake device nodes")
	dir := t.TempDir()
	lib := cndevtest.Build(t)
	text, err := os.ReadFile(cndevtest.Fixture("mlu370-x8"))
	require.NoError(t, err)
	fixture := filepath.Join(dir, "mlu370-x8.txt")
	require.NoError(t, os.WriteFile(fixture, []byte(string(text)+strings.Join(extra, "\n")+"\n"), 0o644))
	state := filepath.Join(dir, "smlu-state")
	t.Setenv(cndevtest.EnvFixture, fixture)
	t.Setenv(cndevtest.EnvState, state)

	_, ctx := ktesting.NewTestContext(t)
	inv, err := cambricon.New(cambricon.Config{Root: "../../pkg/vendors/cambricon/testdata/mlu370-x8/root", Runner: noTools{t}, Library: lib}).Discover(ctx)
	require.NoError(t, err)
	require.Equal(t, "libcndev.so cndevCreateSMluProfileInfo", inv.Chips[5].Sources[cambricon.SourceSizedSMLU])
	l, err := cambricon.OpenCNDev("/", lib)
	require.NoError(t, err)
	n := startNode(t, nodeOptions{Inventory: inv, Vendor: cambricon.Vendor, ChipModes: "mlu-4=Shared,mlu-5=Shared", Runner: noTools{t}, Setup: func(n *node) {
		t.Setenv(cndevtest.EnvRoot, n.root)
		n.configure = func(cfg *driver.Config) { cfg.PartitionTool = &cambricon.PartitionTool{Runner: noTools{t}, Library: l} }
	}})
	return n, state
}

// smluShare is a share of device of memory steps and cores, as the
// scheduler allocates it under the chip's request policy.
func (n *node) smluShare(device, id string, steps, cores int64) resourceapi.DeviceRequestAllocationResult {
	r := n.share(device, id, *resource.NewQuantity(steps*smluStep, resource.BinarySI))
	r.ConsumedCapacity[names.CapCores] = *resource.NewQuantity(cores, resource.DecimalSI)
	return r
}

// mockState is the mock libcndev's state: its dynamic profile lines and
// its instance lines.
func mockState(t *testing.T, path string) (profiles, instances []string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "p "):
			profiles = append(profiles, l)
		default:
			instances = append(instances, l)
		}
	}
	return profiles, instances
}

// TestSharesOfAnEnforcedSharedChipAreSMLUsOfTheirSize: two claims share
// MLU370 chip 5, a quarter each; each container gets only its own sMLU's
// capability node, the library made one dynamic profile of 25% and a
// quarter of the memory and two instances of it; a restart reuses them
// and unprepare destroys them and the profile.
func TestSharesOfAnEnforcedSharedChipAreSMLUsOfTheirSize(t *testing.T) {
	n, state := enforcedNode(t)
	published := n.waitPublished(func(d map[string]resourceapi.Device) bool { _, ok := d["mlu-5"]; return ok }, "mlu-5 is published")["mlu-5"]
	require.Equal(t, partitions.EnforcementHardware, *published.Attributes[partitions.AttrShareEnforcement].StringValue)

	a := n.claimWithResults("a", []resourceapi.DeviceRequestAllocationResult{n.smluShare("mlu-5", "share-a", 25, 4)})
	b := n.claimWithResults("b", []resourceapi.DeviceRequestAllocationResult{n.smluShare("mlu-5", "share-b", 25, 4)})
	idsA, idsB := n.mustPrepare(a), n.mustPrepare(b)
	profiles, instances := mockState(t, state)
	require.Equal(t, []string{fmt.Sprintf("p 5 3 25 %d", 25*smluStep)}, profiles, "one profile of a 25 percent quota and 25 steps, after the driver's 0-2")
	require.Equal(t, []string{fmt.Sprintf("5 1 3 smlu5-1 25 %d", 25*smluStep), fmt.Sprintf("5 2 3 smlu5-2 25 %d", 25*smluStep)}, instances)

	for i, ids := range [][]string{idsA, idsB} {
		ctr := n.container(ids)
		want := append([]string{fmt.Sprintf("/dev/cambricon-caps/cap_dev5_mi%d", i+1), "/dev/cambricon_dev5", "/dev/cambricon_ipcm5"},
			n.inv.SharedDeviceNodes[cambricon.Vendor]...)
		sort.Strings(want)
		require.Equal(t, want, devicePaths(ctr), "its own sMLU only, as the device plugin gives an sMLU container")
		env := envMap(ctr)
		require.Equal(t, "25p.5825mb", env["DRA_DEVICE_MLU_5_PARTITION"])
		require.Equal(t, fmt.Sprint(25*smluStep), env["DRA_DEVICE_MLU_5_MEMORY"])
		require.Equal(t, "4", env["DRA_DEVICE_MLU_5_CORES"])
		require.NotContains(t, env, "CAMBRICON_VISIBLE_DEVICES")
	}

	n.restart()
	require.Equal(t, idsA, n.mustPrepare(a), "a restarted plugin reuses the sMLU the checkpoint records")
	_, again := mockState(t, state)
	require.Equal(t, instances, again, "none made twice, none removed at start-up")

	n.unprepare(a)
	_, instances = mockState(t, state)
	require.Len(t, instances, 1)
	n.unprepare(b)
	profiles, instances = mockState(t, state)
	require.Empty(t, instances)
	require.Empty(t, profiles, "the dynamic profile goes with its last instance")
	require.Empty(t, n.cdiFiles())
}

// TestAWholeShareOfAnEnforcedChipGetsTheChip: a claim that asks for the
// chip's whole capacity, or none (the request policy's default), gets
// the whole chip and no sMLU.
func TestAWholeShareOfAnEnforcedChipGetsTheChip(t *testing.T) {
	n, state := enforcedNode(t)
	for _, r := range []resourceapi.DeviceRequestAllocationResult{
		n.smluShare("mlu-5", "all", 100, 16),
		n.smluShare("mlu-5", "default", 100, 4),
	} {
		c := n.claimWithResults("whole-"+string(*r.ShareID), []resourceapi.DeviceRequestAllocationResult{r})
		ctr := n.container(n.mustPrepare(c))
		_, instances := mockState(t, state)
		require.Empty(t, instances, "no sMLU for the whole chip")
		require.Contains(t, devicePaths(ctr), "/dev/commu5", "the whole card's nodes")
		require.Equal(t, "5", envMap(ctr)["CAMBRICON_VISIBLE_DEVICES"])
		n.unprepare(c)
	}
}

// TestAnEnforcedShareTheDriverCannotMakeFailsNamingClaimAndChip: a share
// off the published grid, a library that refuses the dynamic call and a
// chip at the library's instance limit each fail the claim's prepare with
// an error naming the claim and the chip; the claim prepared before keeps
// its sMLU, and the failed claim leaves nothing behind.
func TestAnEnforcedShareTheDriverCannotMakeFailsNamingClaimAndChip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		// good is the chip of the claim prepared first.
		good  string
		share func(n *node) resourceapi.DeviceRequestAllocationResult
		want  []string
	}{
		{name: "memory off the grid", share: func(n *node) resourceapi.DeviceRequestAllocationResult {
			return n.share("mlu-5", "off", *resource.NewQuantity(1<<30, resource.BinarySI))
		}, want: []string{"claim default/bad", "the share of mlu-5 (1Gi memory, 0 cores) does not fit the request policy",
			"memory 1073741824 bytes is not a multiple of 244318208 bytes"}},
		{name: "the library refuses the dynamic call", extra: []string{"fail fn=cndevCreateSMluProfileInfo dev=5 code=10"}, good: "mlu-4",
			share: func(n *node) resourceapi.DeviceRequestAllocationResult { return n.smluShare("mlu-5", "refused", 50, 8) },
			want:  []string{"claim default/bad", "creating a 50p.11650mb sMLU instance on chip 5", "cndevCreateSMluProfileInfo: cndev error 10 (not supported)"}},
		// The library's instance limit comes back the same way (the
		// mock's test in pkg/vendors/cambricon reaches it).
		{name: "no quota left on the chip", share: func(n *node) resourceapi.DeviceRequestAllocationResult { return n.smluShare("mlu-5", "full", 10, 16) },
			want: []string{"claim default/bad", "creating a 100p.2330mb sMLU instance on chip 5", "cndevCreateSMluInstanceByProfileId: cndev error 9 (insufficient space)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, state := enforcedNode(t, tc.extra...)
			if tc.good == "" {
				tc.good = "mlu-5"
			}
			good := n.claimWithResults("good", []resourceapi.DeviceRequestAllocationResult{n.smluShare(tc.good, "good", 10, 4)})
			n.mustPrepare(good)
			_, before := mockState(t, state)
			require.Len(t, before, 1)

			bad := n.claimWithResults("bad", []resourceapi.DeviceRequestAllocationResult{tc.share(n)})
			msg := n.prepare(bad)[string(bad.UID)].Error
			for _, w := range tc.want {
				require.Contains(t, msg, w)
			}
			_, after := mockState(t, state)
			require.Equal(t, before, after, "the good claim keeps its sMLU, the bad one left none")
			require.Equal(t, []types.UID{good.UID}, n.driver.PreparedClaims())
			n.unprepare(good)
		})
	}
}

// cambriconLibraryAgent prepares an agent on the MLU370-X8 fixture node
// read through the mock libcndev, chips published as chipModes says.
func cambriconLibraryAgent(t *testing.T, chipModes string) *agent {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	out, err := exec.Command("cp", "-a", cambriconTestdata+"/mlu370-x8/root/.", root).CombinedOutput()
	require.NoError(t, err, "copying the fixture root: %s", out)
	cfg := agentConfig{Root: root, ChipModes: chipModes,
		Libraries: map[string]string{cambricon.Option: mockCNDevFor(t, dir, root)},
		Tools:     map[string]string{cambricon.Cnmon: libraryOnlyTool(t, dir)}}
	inv, err := source.Discover(ctx, cfg.discovery())
	require.NoError(t, err)
	return newAgentOf(t, inv, cfg)
}

// cndevInstances are the sMLU instances in the mock libcndev's state
// (mock_cndev.c save: "<card> <id> <profile> <name> <quota> <bytes>").
func cndevInstances(t testing.TB) []vendors.Instance {
	t.Helper()
	raw, err := os.ReadFile(os.Getenv(cndevtest.EnvState))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []vendors.Instance
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var card, id, profile int
		var name string
		var quota, memory int64
		if n, _ := fmt.Sscanf(l, "%d %d %d %s %d %d", &card, &id, &profile, &name, &quota, &memory); n != 6 {
			continue // a profile line, or none
		}
		out = append(out, vendors.Instance{Type: cambricon.PartitionType, Chip: card, ID: id, Template: fmt.Sprintf("%dp.%dmb", quota, memory>>20),
			DeviceNode: fmt.Sprintf("/dev/cambricon-caps/cap_dev%d_mi%d", card, id)})
	}
	return out
}

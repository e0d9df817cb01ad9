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
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func chipNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func indices(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return strings.Join(parts, ",")
}

const ro = "ro,nosuid,nodev,rbind,rprivate"

func TestPrepareGivesTheContainerExactlyTheClaimedChips(t *testing.T) {
	vendors := []struct {
		profile string
		vendor  inventory.Vendor
		prefix  string
		// nodes are the device files of chip i; shared the vendor's shared ones.
		nodes   func(i int) []string
		shared  []string
		mounts  []string
		visible string
		// env are the vendor's own variables (vendors.CDIEdits.Env).
		env map[string]string
	}{
		{
			profile: "atlas-800t-a2", vendor: ascend.Vendor, prefix: "npu",
			nodes:  func(i int) []string { return []string{fmt.Sprintf("/dev/davinci%d", i)} },
			shared: []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"},
			mounts: []string{
				"/etc/ascend_install.info <- /etc/ascend_install.info " + ro,
				"/usr/local/Ascend/driver/include <- /usr/local/Ascend/driver/include " + ro,
				"/usr/local/Ascend/driver/lib64 <- /usr/local/Ascend/driver/lib64 " + ro,
				"/usr/local/Ascend/driver/version.info <- /usr/local/Ascend/driver/version.info " + ro,
				"/usr/local/bin/npu-smi <- /usr/local/bin/npu-smi " + ro,
				"/usr/local/dcmi <- /usr/local/dcmi " + ro,
			},
			visible: "ASCEND_VISIBLE_DEVICES",
		},
		{
			profile: "mlu370-x8", vendor: cambricon.Vendor, prefix: "mlu",
			nodes: func(i int) []string {
				return []string{fmt.Sprintf("/dev/cambricon_dev%d", i), fmt.Sprintf("/dev/cambricon_ipcm%d", i)}
			},
			shared:  []string{"/dev/cambricon_ctl"},
			mounts:  []string{"/usr/bin/cnmon <- /usr/bin/cnmon " + ro},
			visible: "CAMBRICON_VISIBLE_DEVICES",
		},
	}
	for _, v := range vendors {
		n := startNode(t, nodeOptions{Profile: v.profile, Vendor: v.vendor})
		for _, count := range []int{1, 4, 8} {
			t.Run(fmt.Sprintf("%s %d chips", v.vendor, count), func(t *testing.T) {
				c := n.claim(fmt.Sprintf("job-%d", count), chipNames(v.prefix, count))
				ids := n.mustPrepare(c)
				require.Len(t, ids, count, "one CDI device per chip")
				for _, id := range ids {
					require.Contains(t, id, string(c.UID), "CDI names carry the claim UID so runtimes never hit a stale cache entry")
				}
				ctr := n.container(ids)

				want := append([]string{}, v.shared...)
				for i := 0; i < count; i++ {
					want = append(want, v.nodes(i)...)
				}
				sort.Strings(want)
				require.Equal(t, want, devicePaths(ctr))
				for _, d := range ctr.Linux.Devices {
					require.Equal(t, "c", d.Type, d.Path)
					require.Equal(t, int64(1), d.Major, "%s is the fake root's null clone", d.Path)
					require.Equal(t, int64(3), d.Minor, d.Path)
				}
				require.Equal(t, v.mounts, mountPaths(ctr, n.root))

				wantEnv := map[string]string{
					v.visible:       indices(count),
					"DRA_DRIVER":    n.driverName,
					"DRA_CLAIM_UID": string(c.UID),
					"DRA_CLAIM":     "default/" + c.Name,
				}
				maps.Copy(wantEnv, v.env)
				for i := 0; i < count; i++ {
					chip := n.inv.ChipsOf(v.vendor)[i]
					key := fmt.Sprintf("DRA_DEVICE_%s_%d", strings.ToUpper(v.prefix), i)
					wantEnv[key+"_UUID"] = chip.UUID
					wantEnv[key+"_MODEL"] = chip.Model
					wantEnv[key+"_DRIVER"] = n.driverName
					wantEnv[key+"_CLAIM_UID"] = string(c.UID)
				}
				require.Equal(t, wantEnv, envMap(ctr))
				n.unprepare(c)
			})
		}
	}
}

func TestRePrepareIsIdempotentAcrossRestarts(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800-910a", Vendor: ascend.Vendor})
	c := n.claim("train", []string{"npu-0", "npu-1"})
	first := n.mustPrepare(c)
	require.Equal(t, first, n.mustPrepare(c))
	require.Len(t, n.cdiFiles(), 1)
	n.restart()
	require.Equal(t, first, n.mustPrepare(c), "a restarted plugin answers the same for a claim it prepared")
	require.Len(t, n.cdiFiles(), 1)
}

func TestUnprepareLeavesNothingBehind(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu590", Vendor: cambricon.Vendor})
	a, b := n.claim("a", []string{"mlu-0"}), n.claim("b", []string{"mlu-1", "mlu-2"})
	n.mustPrepare(a)
	n.mustPrepare(b)
	require.Len(t, n.cdiFiles(), 2)
	n.unprepare(a, b)
	require.Empty(t, n.cdiFiles())
	require.Empty(t, n.driver.PreparedClaims())
	n.unprepare(a) // kubelet may repeat it
	n.restart()
	require.Empty(t, n.driver.PreparedClaims(), "the checkpoint forgot the claims too")
	// The chips are free again.
	n.mustPrepare(n.claim("c", []string{"mlu-0", "mlu-1", "mlu-2"}))
}

func TestARestartBetweenPrepareAndUnprepareKeepsTheClaim(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor})
	c := n.claim("serve", []string{"npu-3"})
	n.mustPrepare(c)
	n.restart()
	require.Equal(t, []types.UID{c.UID}, n.driver.PreparedClaims())
	r := n.prepare(n.claim("thief", []string{"npu-3"}))
	require.Len(t, r, 1)
	for _, resp := range r {
		require.Contains(t, resp.Error, "device npu-3 is already prepared for claim default/serve", "the restarted plugin still protects the chip")
	}
	n.unprepare(c)
	require.Empty(t, n.cdiFiles())
}

func TestACorruptCheckpointIsSetAsideAndThePreparedClaimsRecovered(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor})
	c := n.claim("train", []string{"npu-0", "npu-1"})
	ids := n.mustPrepare(c)
	n.stop()
	path := filepath.Join(n.stateDir, driver.CheckpointFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"version": "accel-dra.dev/checkpoint/v1", "checksum": "sha256:00", "data": {"claims": {}}}`), 0o600))
	n.start()

	require.FileExists(t, path+".corrupt", "the corrupt file is kept for the operator")
	require.Equal(t, []types.UID{c.UID}, n.driver.PreparedClaims(), "the claim is rebuilt from its CDI spec")
	thief := n.claim("thief", []string{"npu-1"})
	require.Contains(t, n.prepare(thief)[string(thief.UID)].Error, "device npu-1 is already prepared for claim default/train")
	require.Equal(t, ids, n.mustPrepare(c))
	n.unprepare(c)
	require.Empty(t, n.cdiFiles())
}

func TestABadOpaqueConfigFailsOnlyItsClaimAndNamesTheField(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor})
	good := n.claim("good", []string{"npu-0"},
		n.opaque(resourceapi.AllocationConfigSourceClass, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"600","FROM":"class"}}`),
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"FROM":"claim"}}`),
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"OTHER":"x"}}`, "some-other-request"),
	)
	unknownField := n.claim("typo", []string{"npu-1"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`))
	wrongKind := n.claim("wrong-kind", []string{"npu-2"},
		n.opaque(resourceapi.AllocationConfigSourceClass, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`))
	reserved := n.claim("reserved", []string{"npu-3"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"ASCEND_VISIBLE_DEVICES":"0-7"}}`))

	resp := n.prepare(good, unknownField, wrongKind, reserved)
	require.Empty(t, resp[string(good.UID)].Error)
	env := envMap(n.container(resp[string(good.UID)].Devices[0].CdiDeviceIds))
	require.Equal(t, "600", env["HCCL_CONNECT_TIMEOUT"])
	require.Equal(t, "claim", env["FROM"], "claim configs override class configs")
	require.NotContains(t, env, "OTHER", "a config for another request does not apply")

	require.Equal(t, `claim default/typo (`+string(unknownField.UID)+`): status.allocation.devices.config[0].opaque.parameters (from the claim): decoding: strict decoding error: unknown field "envs" (want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig)`,
		resp[string(unknownField.UID)].Error)
	require.Contains(t, resp[string(wrongKind.UID)].Error, "claim default/wrong-kind")
	require.Contains(t, resp[string(wrongKind.UID)].Error, "status.allocation.devices.config[0].opaque.parameters (from the DeviceClass): kind CambriconConfig is not for this driver: want AscendConfig")
	require.Contains(t, resp[string(reserved.UID)].Error, "env[ASCEND_VISIBLE_DEVICES]: Forbidden")
	require.Equal(t, []types.UID{good.UID}, n.driver.PreparedClaims())
	require.Len(t, n.cdiFiles(), 1, "failed claims write no CDI spec")
}

func TestTheDriverRefusesDevicesItCannotOrMustNotGive(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu370-x8", Vendor: cambricon.Vendor})
	holder := n.claim("holder", []string{"mlu-0", "mlu-1"})
	n.mustPrepare(holder)

	other := n.claim("other-pool", nil)
	other.Status.Allocation.Devices.Results = []resourceapi.DeviceRequestAllocationResult{{Request: "accel", Driver: n.driverName, Pool: "node-1", Device: "mlu-2"}}
	_, err := n.client.ResourceV1().ResourceClaims("default").UpdateStatus(n.ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)

	tests := []struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{n.claim("double", []string{"mlu-2", "mlu-1"}), "device mlu-1 is already prepared for claim default/holder (" + string(holder.UID) + "): refusing to give it to two claims"},
		{n.claim("unknown", []string{"mlu-9"}), `status.allocation.devices.results[0]: device "mlu-9" is not a chip of cambricon.accel-dra.dev on node node-0`},
		{n.claim("twice", []string{"mlu-3", "mlu-3"}), "status.allocation.devices.results[1]: device mlu-3 is allocated twice in this claim"},
		{other, `status.allocation.devices.results[0]: device mlu-2 is in pool "node-1", but this is node "node-0"`},
	}
	for _, tt := range tests {
		t.Run(tt.claim.Name, func(t *testing.T) {
			resp := n.prepare(tt.claim)[string(tt.claim.UID)]
			require.Contains(t, resp.Error, "claim default/"+tt.claim.Name+" (")
			require.Contains(t, resp.Error, tt.want)
			require.Empty(t, resp.Devices)
		})
	}
	require.Equal(t, []types.UID{holder.UID}, n.driver.PreparedClaims(), "the holder is untouched")
	require.Len(t, n.cdiFiles(), 1)
}

func TestFiftyConcurrentClaimsLeaveNoStaleCDIFile(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "testdata/64-npu.yaml", Vendor: ascend.Vendor})
	claims := make([]*resourceapi.ResourceClaim, 50)
	for i := range claims {
		claims[i] = n.claim(fmt.Sprintf("c%d", i), []string{fmt.Sprintf("npu-%d", i)})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(claims))
	for _, c := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := n.ctx
			resp, err := n.kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(c)})
			if err == nil && resp.Claims[string(c.UID)].Error != "" {
				err = fmt.Errorf("%s", resp.Claims[string(c.UID)].Error)
			}
			if err != nil {
				errs <- err
				return
			}
			if _, err := n.kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(c)}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, n.cdiFiles())
	require.Empty(t, n.driver.PreparedClaims())
}

func TestPublishedSlicesAreTheFoundationCodesSlices(t *testing.T) {
	for _, tt := range []struct {
		profile string
		vendor  inventory.Vendor
	}{{"atlas-800-910a", ascend.Vendor}, {"mixed-910b-mlu370", cambricon.Vendor}} {
		t.Run(tt.profile, func(t *testing.T) {
			n := startNode(t, nodeOptions{Profile: tt.profile, Vendor: tt.vendor, ChipModes: string(partitions.ModePartitioned)})
			var want []resourceapi.ResourceSliceSpec
			for _, s := range resourceslices.SlicesFor(registry, nodeName, n.inv, resourceslices.Options{Policy: n.policy}) {
				if s.Spec.Driver == n.driverName {
					want = append(want, s.Spec)
				}
			}
			require.NotEmpty(t, want)
			var got []resourceapi.ResourceSliceSpec
			require.Eventually(t, func() bool {
				list, err := n.client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
				require.NoError(t, err)
				got = nil
				for _, s := range list.Items {
					require.Equal(t, n.driverName, s.Spec.Driver, "a driver publishes only its own vendor's chips")
					require.Equal(t, "Node", s.OwnerReferences[0].Kind)
					got = append(got, s.Spec)
				}
				return len(got) == len(want)
			}, 30*time.Second, 50*time.Millisecond, "the resourceslice controller publishes the slices")
			require.Equal(t, want, got)
		})
	}
}

// A DeviceClass config with enforced set is final: a claim's config may
// repeat its variables but not change them, may not loosen its Exclusive
// sharing, and may not be enforced itself.
func TestAnEnforcedDeviceClassConfigCannotBeOverriddenByTheClaim(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "npu-0=Shared", VNPUsOff: true})
	class := func() resourceapi.DeviceAllocationConfiguration {
		return n.opaque(resourceapi.AllocationConfigSourceClass, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","enforced":true,"env":{"HCCL_IF_IP":"10.0.0.1"},"sharing":{"strategy":"Exclusive"}}`)
	}
	same := n.claim("same", []string{"npu-1"}, class(),
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_IF_IP":"10.0.0.1","MODEL":"qwen"}}`))
	other := n.claim("other", []string{"npu-2"}, class(),
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_IF_IP":"192.168.0.9"}}`))
	selfEnforced := n.claim("self-enforced", []string{"npu-3"},
		n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","enforced":true}`))
	// The claim asks for Shared on a share of npu-0: the class's enforced
	// Exclusive stays, so the share is refused.
	looser := n.claimWithResults("looser", []resourceapi.DeviceRequestAllocationResult{n.share("npu-0", "55555555-5555-5555-5555-555555555555", gi(8))},
		class(), n.opaque(resourceapi.AllocationConfigSourceClaim, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Shared"}}`))

	resp := n.prepare(same, other, selfEnforced, looser)
	require.Empty(t, resp[string(same.UID)].Error)
	env := envMap(n.container(resp[string(same.UID)].Devices[0].CdiDeviceIds))
	require.Equal(t, "10.0.0.1", env["HCCL_IF_IP"])
	require.Equal(t, "qwen", env["MODEL"], "the claim adds what the class does not set")
	require.Equal(t, `claim default/other (`+string(other.UID)+`): status.allocation.devices.config[1].opaque.parameters (from the claim): env[HCCL_IF_IP]: "192.168.0.9" may not override "10.0.0.1", which the DeviceClass config status.allocation.devices.config[0].opaque.parameters enforces`,
		resp[string(other.UID)].Error)
	require.Equal(t, `claim default/self-enforced (`+string(selfEnforced.UID)+`): status.allocation.devices.config[0].opaque.parameters (from the claim): enforced: Forbidden: only a DeviceClass's config can be enforced, not a claim's`,
		resp[string(selfEnforced.UID)].Error)
	require.Contains(t, resp[string(looser.UID)].Error, `device npu-0 is a share (8Gi of 64Gi memory) of a shared chip, but the config of request "accel" says sharing.strategy: Exclusive`)
	require.Equal(t, []types.UID{same.UID}, n.driver.PreparedClaims())
}

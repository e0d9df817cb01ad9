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

package cdi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	v1alpha1 "github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

const uid = types.UID("9d6c1b2a-5e4f-4a3b-9c8d-7e6f5a4b3c2d")

var roBind = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}

// nullDev is how an injected fake node (devicefaker: 1:3, 0666) looks.
func nullDev(path string) oci.LinuxDevice {
	mode := os.FileMode(0o666)
	return oci.LinuxDevice{Path: path, Type: "c", Major: 1, Minor: 3, FileMode: &mode}
}

func TestInjectingAClaimGivesTheContainerExactlyItsNodesMountsAndEnv(t *testing.T) {
	tests := []struct {
		name        string
		profile     string
		adjust      func(*inventory.Inventory)
		vendor      inventory.Vendor
		indices     []int
		wantDevices []string
		wantMounts  []string
		wantEnv     func(n node) []string
	}{
		{
			name:    "two 910B chips get their davinci nodes, the shared nodes and the driver mounts",
			profile: "atlas-800t-a2", vendor: ascend.Vendor, indices: []int{3, 1},
			wantDevices: []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/davinci3", "/dev/davinci1"},
			// Sorted by depth by the CDI library, as runtimes mount them.
			wantMounts: []string{
				"/etc/ascend_install.info",
				"/usr/local/dcmi",
				"/usr/local/bin/npu-smi",
				"/usr/local/Ascend/driver/lib64",
				"/usr/local/Ascend/driver/include",
				"/usr/local/Ascend/driver/version.info",
			},
			wantEnv: func(n node) []string {
				chips := n.inv.ChipsOf(ascend.Vendor)
				return []string{
					"PATH=/usr/bin:/bin",
					"DRA_DRIVER=ascend.accel-dra.dev",
					"DRA_CLAIM_UID=" + string(uid),
					"DRA_CLAIM=default/claim-9d6c1b2a",
					"ASCEND_VISIBLE_DEVICES=1,3",
					"DRA_DEVICE_NPU_3_DRIVER=ascend.accel-dra.dev",
					"DRA_DEVICE_NPU_3_CLAIM_UID=" + string(uid),
					"DRA_DEVICE_NPU_3_UUID=" + chips[3].UUID,
					"DRA_DEVICE_NPU_3_MODEL=Ascend910B3",
					"DRA_DEVICE_NPU_1_DRIVER=ascend.accel-dra.dev",
					"DRA_DEVICE_NPU_1_CLAIM_UID=" + string(uid),
					"DRA_DEVICE_NPU_1_UUID=" + chips[1].UUID,
					"DRA_DEVICE_NPU_1_MODEL=Ascend910B3",
				}
			},
		},
		{
			// As Huawei's device plugin sets it for a 950 and its runtime
			// mounts the driver's topology directory.
			name:    "a 950DT chip gets the node's HCCL topology file and the driver's topology directory",
			profile: "atlas-850", vendor: ascend.Vendor, indices: []int{2},
			wantDevices: []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/davinci2"},
			wantMounts: []string{
				"/etc/ascend_install.info",
				"/usr/local/dcmi",
				"/usr/local/bin/npu-smi",
				"/usr/local/Ascend/driver/lib64",
				"/usr/local/Ascend/driver/include",
				"/usr/local/Ascend/driver/version.info",
				"/usr/local/Ascend/driver/topo",
			},
			wantEnv: func(n node) []string {
				return []string{
					"PATH=/usr/bin:/bin",
					"DRA_DRIVER=ascend.accel-dra.dev",
					"DRA_CLAIM_UID=" + string(uid),
					"DRA_CLAIM=default/claim-9d6c1b2a",
					"ASCEND_VISIBLE_DEVICES=2",
					"HCCL_TOPO_FILE_PATH=/usr/local/Ascend/driver/topo/950/atlas_850_1.json",
					"DRA_DEVICE_NPU_2_DRIVER=ascend.accel-dra.dev",
					"DRA_DEVICE_NPU_2_CLAIM_UID=" + string(uid),
					"DRA_DEVICE_NPU_2_UUID=" + n.inv.ChipsOf(ascend.Vendor)[2].UUID,
					"DRA_DEVICE_NPU_2_MODEL=Ascend950DT",
				}
			},
		},
		{
			name:    "an MLU590 chip gets its dev, ipcm, commu and cmsg nodes, cambricon_ctl and cnmon",
			profile: "mlu590", adjust: withMLU590Nodes, vendor: cambricon.Vendor, indices: []int{5},
			wantDevices: []string{"/dev/cambricon_ctl", "/dev/cambricon_dev5", "/dev/cambricon_ipcm5", "/dev/commu5", "/dev/cmsg_ctrl5"},
			wantMounts:  []string{"/usr/bin/cnmon"},
			wantEnv: func(n node) []string {
				return []string{
					"PATH=/usr/bin:/bin",
					"DRA_DRIVER=cambricon.accel-dra.dev",
					"DRA_CLAIM_UID=" + string(uid),
					"DRA_CLAIM=default/claim-9d6c1b2a",
					"CAMBRICON_VISIBLE_DEVICES=5",
					"DRA_DEVICE_MLU_5_DRIVER=cambricon.accel-dra.dev",
					"DRA_DEVICE_MLU_5_CLAIM_UID=" + string(uid),
					"DRA_DEVICE_MLU_5_UUID=" + n.inv.ChipsOf(cambricon.Vendor)[5].UUID,
					"DRA_DEVICE_MLU_5_MODEL=MLU590",
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, tt.profile, tt.adjust)
			w, dir := n.writer(t)
			c := n.claim(uid, tt.vendor, tt.indices...)
			ids, err := w.Write(context.Background(), c)
			require.NoError(t, err)

			got := inject(t, dir, flatten(c, ids)...)

			var wantDevices []oci.LinuxDevice
			var wantCgroup []oci.LinuxDeviceCgroup
			access := map[inventory.Vendor]string{ascend.Vendor: "rwm", cambricon.Vendor: "rw"}[tt.vendor]
			for _, p := range tt.wantDevices {
				wantDevices = append(wantDevices, nullDev(p))
				major, minor := int64(1), int64(3)
				wantCgroup = append(wantCgroup, oci.LinuxDeviceCgroup{Allow: true, Type: "c", Major: &major, Minor: &minor, Access: access})
			}
			require.Equal(t, wantDevices, got.Linux.Devices)
			require.Equal(t, wantCgroup, got.Linux.Resources.Devices)

			var wantMounts []oci.Mount
			for _, p := range tt.wantMounts {
				wantMounts = append(wantMounts, oci.Mount{Source: filepath.Join(n.root, p), Destination: p, Options: roBind})
			}
			require.Equal(t, wantMounts, got.Mounts)
			require.Equal(t, tt.wantEnv(n), got.Process.Env)
		})
	}
}

func TestEachDeviceGetsOneIDNamedAfterTheClaimAndDevice(t *testing.T) {
	n := newNode(t, "atlas-800-910a", nil)
	w, _ := n.writer(t)
	ids, err := w.Write(context.Background(), n.claim(uid, ascend.Vendor, 0, 2))
	require.NoError(t, err)
	require.Equal(t, map[string][]string{
		"npu-0": {"accel-dra.dev/ascend=" + string(uid) + "-npu-0"},
		"npu-2": {"accel-dra.dev/ascend=" + string(uid) + "-npu-2"},
	}, ids)
}

func TestAContainerGetsOnlyTheNodesOfTheDevicesItWasGiven(t *testing.T) {
	// A container that references one request of a claim gets only that
	// request's IDs; the claim-wide edits still come with them.
	n := newNode(t, "atlas-800t-a2", nil)
	w, dir := n.writer(t)
	c := n.claim(uid, ascend.Vendor, 0, 1)
	ids, err := w.Write(context.Background(), c)
	require.NoError(t, err)

	got := inject(t, dir, ids["npu-1"]...)
	var paths []string
	for _, d := range got.Linux.Devices {
		paths = append(paths, d.Path)
	}
	require.Equal(t, []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/davinci1"}, paths)
	require.Contains(t, got.Process.Env, "ASCEND_VISIBLE_DEVICES=0,1", "the visible list is claim-wide")
}

func TestInjectingTheSameIDTwiceGivesTheSameContainer(t *testing.T) {
	// kubelet does not de-duplicate CDI IDs (cdiDevicesAsList appends every
	// device's IDs). The CDI library replaces device nodes by path, mounts
	// by destination and env by name, so repeats only add duplicate,
	// identical cgroup allow rules.
	n := newNode(t, "mlu370-x8", nil)
	w, dir := n.writer(t)
	c := n.claim(uid, cambricon.Vendor, 0, 1)
	ids, err := w.Write(context.Background(), c)
	require.NoError(t, err)
	once := inject(t, dir, flatten(c, ids)...)
	twice := inject(t, dir, append(flatten(c, ids), flatten(c, ids)...)...)

	require.Equal(t, once.Linux.Devices, twice.Linux.Devices)
	require.Equal(t, once.Mounts, twice.Mounts)
	require.Equal(t, once.Process.Env, twice.Process.Env)
	require.Len(t, twice.Linux.Resources.Devices, len(once.Linux.Resources.Devices)+4, "the two chips' nodes are allowed twice")
}

func TestOneClaimWithAnAscendAndACambriconRequestGivesBothVisibleLists(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	w, dir := n.writer(t)
	ascend := n.claim(uid, ascend.Vendor, 2)
	cambricon := n.claim(uid, cambricon.Vendor, 1)
	aIDs, err := w.Write(context.Background(), ascend)
	require.NoError(t, err)
	cIDs, err := w.Write(context.Background(), cambricon)
	require.NoError(t, err)

	got := inject(t, dir, append(flatten(ascend, aIDs), flatten(cambricon, cIDs)...)...)
	require.Contains(t, got.Process.Env, "ASCEND_VISIBLE_DEVICES=2")
	require.Contains(t, got.Process.Env, "CAMBRICON_VISIBLE_DEVICES=1")
	require.Contains(t, got.Process.Env, "DRA_CLAIM_UID="+string(uid))
	var paths []string
	for _, d := range got.Linux.Devices {
		paths = append(paths, d.Path)
	}
	require.Subset(t, paths, []string{"/dev/davinci2", "/dev/davinci_manager", "/dev/cambricon_dev1", "/dev/cambricon_ctl"})

	require.NoError(t, w.Delete(context.Background(), ascend.Vendor, uid))
	require.Equal(t, []string{"accel-dra.dev-cambricon_" + string(uid) + ".json"}, specFiles(t, dir),
		"deleting one vendor's spec leaves the other's")
}

// A device the vendor's visible-devices variable does not list (an sMLU)
// is left out of it: a claim of a whole chip and an sMLU lists the chip
// only, a claim of only an sMLU gets no variable, as Cambricon's device
// plugin sets none for an sMLU.
func TestDevicesNotVisibleAreLeftOutOfTheVisibleDevicesList(t *testing.T) {
	n := newNode(t, "mlu370-x8", nil)
	w, dir := n.writer(t)
	for _, tc := range []struct {
		name    string
		indices []int
		want    string // "" for no variable
	}{
		{name: "a chip and an sMLU", indices: []int{1, 2}, want: "CAMBRICON_VISIBLE_DEVICES=1"},
		{name: "an sMLU only", indices: []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := n.claim(uid, cambricon.Vendor, tc.indices...)
			smlu := &c.Devices[len(c.Devices)-1]
			smlu.NotVisible = true
			ids, err := w.Write(context.Background(), c)
			require.NoError(t, err)
			got := inject(t, dir, flatten(c, ids)...)
			var visible []string
			for _, e := range got.Process.Env {
				if strings.HasPrefix(e, "CAMBRICON_VISIBLE_DEVICES=") {
					visible = append(visible, e)
				}
			}
			if tc.want == "" {
				require.Empty(t, visible)
			} else {
				require.Equal(t, []string{tc.want}, visible)
			}
		})
	}
}

// Agents before wrote the specs as YAML. After an upgrade the claims they
// prepared still have one: it must be listed (start-up cleanup), read
// (rebuilding a lost checkpoint), replaced when the claim is prepared
// again, and removed by unprepare.
func TestSpecsInYAMLOfEarlierAgentsAreListedReadReplacedAndDeleted(t *testing.T) {
	n := newNode(t, "atlas-800t-a2", nil)
	w, dir := n.writer(t)
	ctx := context.Background()
	c := n.claim(uid, ascend.Vendor, 0, 1)
	ids, err := w.Write(ctx, c)
	require.NoError(t, err)
	jsonName, yamlName := "accel-dra.dev-ascend_"+string(uid)+".json", "accel-dra.dev-ascend_"+string(uid)+".yaml"
	spec, err := cdiapi.ReadSpec(filepath.Join(dir, jsonName), 0)
	require.NoError(t, err)
	// The earlier agent's spec, as the CDI library wrote it then.
	old, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	writeOld := func() {
		t.Helper()
		require.NoError(t, old.WriteSpec(spec.Spec, yamlName))
	}
	writeOld()
	require.NoError(t, os.Remove(filepath.Join(dir, jsonName)))
	raw, err := os.ReadFile(filepath.Join(dir, yamlName))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(raw), "---\n"), "a YAML spec")

	uids, err := w.ClaimUIDs(ascend.Ascend{})
	require.NoError(t, err)
	require.Equal(t, []types.UID{uid}, uids)
	got, err := w.ReadClaim(ascend.Ascend{}, uid)
	require.NoError(t, err)
	require.Equal(t, ids, got.Devices)

	again, err := w.Write(ctx, c)
	require.NoError(t, err)
	require.Equal(t, ids, again)
	require.Equal(t, []string{jsonName}, specFiles(t, dir), "the claim's spec replaced, not doubled")
	requireValidSpecs(t, dir)

	writeOld()
	uids, err = w.ClaimUIDs(ascend.Ascend{})
	require.NoError(t, err)
	require.Equal(t, []types.UID{uid}, uids, "listed once with both")
	require.NoError(t, w.Delete(ctx, ascend.Ascend{}, uid))
	require.Empty(t, specFiles(t, dir))
}

func TestWritingTheSameClaimTwiceLeavesTheSameSingleSpec(t *testing.T) {
	n := newNode(t, "atlas-800t-a2", nil)
	w, dir := n.writer(t)
	c := n.claim(uid, ascend.Vendor, 0, 1, 2, 3)

	first, err := w.Write(context.Background(), c)
	require.NoError(t, err)
	files := specFiles(t, dir)
	require.Len(t, files, 1)
	before, err := os.ReadFile(filepath.Join(dir, files[0]))
	require.NoError(t, err)

	second, err := w.Write(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, first, second)
	require.Equal(t, files, specFiles(t, dir), "no temporary file is left behind")
	after, err := os.ReadFile(filepath.Join(dir, files[0]))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}

func TestRewritingAClaimReplacesItsSpec(t *testing.T) {
	n := newNode(t, "atlas-800t-a2", nil)
	w, dir := n.writer(t)
	_, err := w.Write(context.Background(), n.claim(uid, ascend.Vendor, 0, 1))
	require.NoError(t, err)
	ids, err := w.Write(context.Background(), n.claim(uid, ascend.Vendor, 5))
	require.NoError(t, err)

	require.Len(t, specFiles(t, dir), 1)
	cache := requireValidSpecs(t, dir)
	require.Equal(t, ids["npu-5"], cache.ListDevices())
}

func TestDeleteRemovesTheSpecAndASecondDeleteIsFine(t *testing.T) {
	n := newNode(t, "mlu590", nil)
	w, dir := n.writer(t)
	_, err := w.Write(context.Background(), n.claim(uid, cambricon.Vendor, 0))
	require.NoError(t, err)

	require.NoError(t, w.Delete(context.Background(), cambricon.Cambricon{}, uid))
	require.Empty(t, specFiles(t, dir))
	require.NoError(t, w.Delete(context.Background(), cambricon.Cambricon{}, uid))
	uids, err := w.ClaimUIDs(cambricon.Cambricon{})
	require.NoError(t, err)
	require.Empty(t, uids)
}

func TestClaimUIDsListsTheVendorsClaimsWithSpecs(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	w, dir := n.writer(t)
	npuUIDs := []types.UID{"c0000000-0000-4000-8000-000000000003", "a0000000-0000-4000-8000-000000000001", "b0000000-0000-4000-8000-000000000002"}
	for _, u := range npuUIDs {
		_, err := w.Write(context.Background(), n.claim(u, ascend.Vendor, 0))
		require.NoError(t, err)
	}
	mluUID := types.UID("d0000000-0000-4000-8000-000000000004")
	_, err := w.Write(context.Background(), n.claim(mluUID, cambricon.Vendor, 0))
	require.NoError(t, err)
	// Other vendors' specs and leftovers share the directory.
	for _, f := range []string{"nvidia.com-gpu.yaml", "k8s.gpu.nvidia.com-claim_e0000000.yaml", "spec.123.tmp"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}

	uids, err := w.ClaimUIDs(ascend.Ascend{})
	require.NoError(t, err)
	require.Equal(t, []types.UID{npuUIDs[1], npuUIDs[2], npuUIDs[0]}, uids)
	uids, err = w.ClaimUIDs(cambricon.Cambricon{})
	require.NoError(t, err)
	require.Equal(t, []types.UID{mluUID}, uids)
}

func TestDriverFilesAreMountedOnlyWhereTheyExistOnTheHost(t *testing.T) {
	tests := []struct {
		name       string
		profile    string
		vendor     inventory.Vendor
		remove     []string
		add        []string
		wantMounts []string
	}{
		{
			name: "a host without dcmi and version.info but with sbin/npu-smi", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			remove: []string{"/usr/local/dcmi", "/usr/local/Ascend/driver/version.info", "/usr/local/bin/npu-smi"},
			add:    []string{"/usr/local/sbin/npu-smi"},
			wantMounts: []string{
				"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/include",
				"/usr/local/sbin/npu-smi", "/etc/ascend_install.info",
			},
		},
		{
			// The chart mounts nothing of the host's /etc: the file comes
			// with the driver's lib64, which the agent sees.
			name: "ascend_install.info the agent does not see is mounted with the driver", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			remove: []string{"/etc/ascend_install.info"},
			wantMounts: []string{
				"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/include", "/usr/local/dcmi",
				"/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/version.info", "/etc/ascend_install.info",
			},
		},
		{
			name: "an Ascend host without any driver files", profile: "atlas-800-910a", vendor: ascend.Vendor,
			remove: []string{"/usr/local/Ascend", "/usr/local/dcmi", "/usr/local/bin/npu-smi", "/etc/ascend_install.info"},
		},
		{
			name: "a Cambricon host without cnmon", profile: "mlu370-x8", vendor: cambricon.Vendor,
			remove: []string{"/usr/bin/cnmon"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, tt.profile, nil)
			for _, p := range tt.remove {
				require.NoError(t, os.RemoveAll(filepath.Join(n.root, p)))
			}
			for _, p := range tt.add {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(n.root, p)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(n.root, p), []byte("#!/bin/sh\n"), 0o755))
			}
			w, dir := n.writer(t)
			_, err := w.Write(context.Background(), n.claim(uid, tt.vendor, 0))
			require.NoError(t, err)

			specs := requireValidSpecs(t, dir).GetVendorSpecs("accel-dra.dev")
			require.Len(t, specs, 1)
			var mounts []string
			for _, m := range specs[0].ContainerEdits.Mounts {
				require.Equal(t, filepath.Join(n.root, m.ContainerPath), m.HostPath)
				mounts = append(mounts, m.ContainerPath)
			}
			require.Equal(t, tt.wantMounts, mounts)
		})
	}
}

func TestWithTheDefaultHostRootHostPathsAreTheContainerPaths(t *testing.T) {
	n := newNode(t, "mlu270", nil)
	dir := t.TempDir()
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: dir})
	require.NoError(t, err)
	_, err = w.Write(context.Background(), n.claim(uid, cambricon.Vendor, 1))
	require.NoError(t, err)

	specs := requireValidSpecs(t, dir).GetVendorSpecs("accel-dra.dev")
	require.Len(t, specs, 1)
	for _, d := range specs[0].Devices {
		for _, dn := range d.ContainerEdits.DeviceNodes {
			require.Equal(t, dn.Path, dn.HostPath)
		}
	}
}

func TestAPluginInAContainerChecksFilesUnderItsMountButWritesNodePaths(t *testing.T) {
	// As in the DaemonSet: the node's / is mounted at n.root in the
	// plugin's container, the runtime sees it at /.
	n := newNode(t, "atlas-800t-a2", nil)
	// This node has the AI CPU queue scheduler's directory.
	require.NoError(t, os.MkdirAll(filepath.Join(n.root, "var/queue_schedule"), 0o755))
	dir := t.TempDir()
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: dir, HostRoot: "/", VisibleRoot: n.root})
	require.NoError(t, err)
	_, err = w.Write(context.Background(), n.claim(uid, ascend.Vendor, 0))
	require.NoError(t, err)

	specs := requireValidSpecs(t, dir).GetVendorSpecs("accel-dra.dev")
	require.Len(t, specs, 1)
	var mounts []string
	for _, m := range specs[0].ContainerEdits.Mounts {
		require.Equal(t, m.ContainerPath, m.HostPath)
		mounts = append(mounts, m.HostPath)
	}
	require.Contains(t, mounts, "/usr/local/Ascend/driver/lib64", "driver files that exist under the visible root are mounted")
	require.Contains(t, mounts, "/var/queue_schedule", "where the node has it")
	require.NotContains(t, mounts, "/usr/local/sbin/npu-smi", "files missing there are not")
	require.Equal(t, "/dev/davinci0", specs[0].Devices[0].ContainerEdits.DeviceNodes[0].HostPath)
}

func TestUserEnvironmentIsSetPerDeviceButCannotOverrideTheDriversVariables(t *testing.T) {
	tests := []struct {
		name    string
		vendor  inventory.Vendor
		env     map[string]string
		wantErr string
	}{
		{
			name: "ordinary variables are accepted", vendor: ascend.Vendor,
			env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200", "ASCEND_GLOBAL_LOG_LEVEL": "3"},
		},
		{
			name: "the claim variable is refused", vendor: ascend.Vendor, env: map[string]string{"DRA_CLAIM": "other/claim"},
			wantErr: `building CDI spec of claim default/claim-9d6c1b2a (` + string(uid) + `): device "npu-0": configuration: env[DRA_CLAIM]: Forbidden: ` +
				`ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices`,
		},
		{
			name: "any DRA_ variable is refused", vendor: cambricon.Vendor, env: map[string]string{"DRA_DEVICE_MLU_0_UUID": "x"},
			wantErr: `env[DRA_DEVICE_MLU_0_UUID]: Forbidden: CAMBRICON_VISIBLE_DEVICES and DRA_* are set by the driver`,
		},
		{
			name: "the vendor's visible devices are refused", vendor: ascend.Vendor, env: map[string]string{"ASCEND_VISIBLE_DEVICES": "0-7"},
			wantErr: `env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver`,
		},
		{
			name: "the other vendor's visible devices are refused too", vendor: ascend.Vendor, env: map[string]string{"CAMBRICON_VISIBLE_DEVICES": "0"},
			wantErr: `env[CAMBRICON_VISIBLE_DEVICES]: Forbidden: CAMBRICON_VISIBLE_DEVICES is set by its vendor's driver`,
		},
		{
			name: "a name with '=' is refused", vendor: cambricon.Vendor, env: map[string]string{"A=B": "c"},
			wantErr: `env[A=B]: Invalid value: "A=B": a valid environment variable name`,
		},
		{
			name: "an empty name is refused", vendor: cambricon.Vendor, env: map[string]string{"": "c"},
			wantErr: `env[]: Invalid value: "": a valid environment variable name`,
		},
		{
			name: "a NUL byte in a value is refused", vendor: ascend.Vendor, env: map[string]string{"HCCL_IF_IP": "10.0.0.1\x00rm"},
			wantErr: `env[HCCL_IF_IP]: Invalid value: "10.0.0.1\x00rm": must not contain a NUL byte`,
		},
	}
	n := newNode(t, "mixed-910b-mlu370", nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir := n.writer(t)
			c := n.claim(uid, tt.vendor, 0, 1)
			c.Devices[0].Env = tt.env
			ids, err := w.Write(context.Background(), c)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Empty(t, specFiles(t, dir), "nothing is written")
				return
			}
			require.NoError(t, err)
			withEnv := inject(t, dir, ids[c.Devices[0].Name]...)
			without := inject(t, dir, ids[c.Devices[1].Name]...)
			for k, v := range tt.env {
				require.Contains(t, withEnv.Process.Env, k+"="+v)
				require.NotContains(t, without.Process.Env, k+"="+v, "user env is per device")
			}
		})
	}
}

func TestInvalidClaimsAreRefusedWithoutWritingAnything(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	tests := []struct {
		name    string
		claim   func() cdi.Claim
		wantErr string
	}{
		{name: "an empty UID", claim: func() cdi.Claim { c := n.claim(uid, ascend.Vendor, 0); c.UID = ""; return c }, wantErr: "claim UID is empty"},
		{name: "no devices", claim: func() cdi.Claim { c := n.claim(uid, ascend.Vendor); return c }, wantErr: "claim has no devices"},
		{name: "no vendor", claim: func() cdi.Claim { c := n.claim(uid, ascend.Vendor, 0); c.Vendor = nil; return c }, wantErr: `no vendor`},
		{
			name: "a device listed twice",
			claim: func() cdi.Claim {
				c := n.claim(uid, ascend.Vendor, 0)
				c.Devices = append(c.Devices, c.Devices[0])
				return c
			},
			wantErr: `device "npu-0" appears twice`,
		},
		{
			name: "a Cambricon chip in an Ascend claim",
			claim: func() cdi.Claim {
				c := n.claim(uid, ascend.Vendor, 0)
				c.Devices[0].Chip = n.inv.ChipsOf(cambricon.Vendor)[0]
				return c
			},
			wantErr: `device "npu-0": chip 0 is a cambricon chip, not huawei`,
		},
		{
			name: "a chip without device nodes",
			claim: func() cdi.Claim {
				c := n.claim(uid, ascend.Vendor, 0)
				c.Devices[0].Chip.DeviceNodes = nil
				return c
			},
			wantErr: `device "npu-0": chip 0 has no device nodes`,
		},
		{
			name: "a relative device node path",
			claim: func() cdi.Claim {
				c := n.claim(uid, ascend.Vendor, 0)
				c.SharedDeviceNodes = []string{"dev/davinci_manager"}
				return c
			},
			wantErr: `shared device nodes: device node path "dev/davinci_manager" is not an absolute, clean path`,
		},
		{
			name: "a device name CDI does not allow",
			claim: func() cdi.Claim {
				c := n.claim(uid, ascend.Vendor, 0)
				c.Devices[0].Name = "npu/0"
				return c
			},
			wantErr: `invalid character '/' in device name`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir := n.writer(t)
			_, err := w.Write(context.Background(), tt.claim())
			require.ErrorContains(t, err, tt.wantErr)
			require.Empty(t, specFiles(t, dir))
		})
	}
}

func TestFiftyClaimsWrittenAndDeletedConcurrentlyLeaveExactlyTheirSpecs(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	w, dir := n.writer(t)
	const count = 50
	claims := make([]cdi.Claim, count)
	for i := range claims {
		vendor := []inventory.Vendor{ascend.Vendor, cambricon.Vendor}[i%2]
		claims[i] = n.claim(types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)), vendor, i%4, (i+1)%4)
	}

	parallel := func(f func(c cdi.Claim) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, count)
		for i, c := range claims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(c)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}

	parallel(func(c cdi.Claim) error { _, err := w.Write(context.Background(), c); return err })
	require.Len(t, specFiles(t, dir), count, "one spec per claim and no temporary files")
	cache := requireValidSpecs(t, dir)
	require.Len(t, cache.ListDevices(), 2*count)
	npuUIDs, err := w.ClaimUIDs(ascend.Ascend{})
	require.NoError(t, err)
	mluUIDs, err := w.ClaimUIDs(cambricon.Cambricon{})
	require.NoError(t, err)
	require.Len(t, append(npuUIDs, mluUIDs...), count)

	parallel(func(c cdi.Claim) error { return w.Delete(context.Background(), c.Vendor, c.UID) })
	require.Empty(t, specFiles(t, dir))
}

// TestAWriteThatFailsLeavesNoFileBehindAndTheRetrySucceeds: as root only a
// full or read-only file system makes a write fail. The failed write names
// the claim and its spec file, leaves no temporary file (the CDI library
// leaves its spec.*.tmp when writing it fails) and keeps what was there:
// another claim's spec and a temporary file of another writer. Once there
// is room, or the directory is writable, the same write succeeds.
func TestAWriteThatFailsLeavesNoFileBehindAndTheRetrySucceeds(t *testing.T) {
	n := newNode(t, "atlas-800t-a2", nil)
	tests := []struct {
		name string
		// breakDir makes writes to dir fail; it returns what repairs it.
		breakDir func(t *testing.T, dir string) (repair func())
		wantErr  string
	}{
		{
			name: "a full file system",
			breakDir: func(t *testing.T, dir string) func() {
				filler := filepath.Join(dir, "filler")
				f, err := os.Create(filler)
				require.NoError(t, err)
				defer f.Close()
				for err == nil {
					_, err = f.Write(make([]byte, 4096))
				}
				require.ErrorIs(t, err, unix.ENOSPC)
				return func() { require.NoError(t, os.Remove(filler)) }
			},
			wantErr: "no space left on device",
		},
		{
			name: "a read-only file system",
			breakDir: func(t *testing.T, dir string) func() {
				remount(t, dir, unix.MS_RDONLY)
				return func() { remount(t, dir, 0) }
			},
			wantErr: "read-only file system",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
			// Registered after TempDir, so it runs before the removal.
			t.Cleanup(func() { require.NoError(t, unix.Unmount(dir, 0)) })
			w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: dir, HostRoot: n.root})
			require.NoError(t, err)
			const otherUID = types.UID("0a1b2c3d-0000-4000-8000-000000000001")
			_, err = w.Write(context.Background(), n.claim(otherUID, ascend.Vendor, 0))
			require.NoError(t, err)
			// A temporary file of a write by another program.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "spec.12345.tmp"), nil, 0o600))
			repair := tt.breakDir(t, dir)
			want := specFiles(t, dir)

			c := n.claim(uid, ascend.Vendor, 1)
			_, err = w.Write(context.Background(), c)
			require.ErrorContains(t, err, "writing CDI spec of claim default/claim-9d6c1b2a ("+string(uid)+") to "+
				filepath.Join(dir, "accel-dra.dev-ascend_"+string(uid)+".json")+": ")
			require.ErrorContains(t, err, tt.wantErr)
			require.Equal(t, want, specFiles(t, dir), "nothing added, nothing removed")

			repair()
			ids, err := w.Write(context.Background(), c)
			require.NoError(t, err)
			require.NoError(t, os.Remove(filepath.Join(dir, "spec.12345.tmp")))
			require.NotEmpty(t, inject(t, dir, flatten(c, ids)...).Linux.Devices)
			uids, err := w.ClaimUIDs(ascend.Ascend{})
			require.NoError(t, err)
			require.Equal(t, []types.UID{otherUID, uid}, uids)
		})
	}
}

// remount remounts the file system at dir with flags (MS_RDONLY or 0).
func remount(t *testing.T, dir string, flags uintptr) {
	t.Helper()
	require.NoError(t, unix.Mount("", dir, "", unix.MS_REMOUNT|flags, ""))
}

// Which visible-devices variable a claim's spec sets, by mode and by
// whether ascend-docker-runtime is on the node: the vendor runtimes inject
// chips for any container whose spec carries it (vendorruntime.go). The
// pod sets both variables itself to every chip of the node; where the
// spec does not list the claim's chips, Ascend's runtime must still see
// its neutral value, not the pod's list.
func TestVisibleDevicesEnvFollowsTheModeAndTheVendorRuntime(t *testing.T) {
	const absent = "<absent>"
	tests := []struct {
		name          string
		mode          string
		ascendRuntime bool
		wantAscend    string
		wantCambricon string
	}{
		{name: "auto without a vendor runtime lists both", mode: cdi.VisibleDevicesAuto, wantAscend: "0,1", wantCambricon: "0,1"},
		{name: "the default is auto", mode: "", wantAscend: "0,1", wantCambricon: "0,1"},
		{name: "auto with the Ascend runtime installed sets the Ascend variable to the neutral empty value", mode: cdi.VisibleDevicesAuto, ascendRuntime: true, wantAscend: "", wantCambricon: "0,1"},
		{name: "set lists both even with the Ascend runtime", mode: cdi.VisibleDevicesSet, ascendRuntime: true, wantAscend: "0,1", wantCambricon: "0,1"},
		{name: "omit lists neither: Ascend's is neutral, Cambricon's (no known runtime) left as the pod set it", mode: cdi.VisibleDevicesOmit, wantAscend: "", wantCambricon: absent},
	}
	podEnv := []string{ascend.EnvVisibleDevices + "=0-7", cambricon.EnvVisibleDevices + "=0,1,2,3,4,5,6,7"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, "mixed-910b-mlu370", nil)
			if tt.ascendRuntime {
				n.installAscendRuntime(t)
			}
			w, dir := n.writerWith(t, tt.mode)
			uid := types.UID("0a1b2c3d-0000-4000-8000-000000000002")
			var ids []string
			for _, v := range []inventory.Vendor{ascend.Vendor, cambricon.Vendor} {
				c := n.claim(uid, v, 0, 1)
				got, err := w.Write(context.Background(), c)
				require.NoError(t, err)
				ids = append(ids, flatten(c, got)...)
			}
			spec := injectWithEnv(t, dir, podEnv, ids...)
			got := map[string][]string{}
			for _, e := range spec.Process.Env {
				k, val, _ := strings.Cut(e, "=")
				got[k] = append(got[k], val)
			}
			// The per-device facts are there in every mode.
			require.Contains(t, got, "DRA_DEVICE_NPU_1_UUID")
			require.Contains(t, got, "DRA_DEVICE_MLU_1_UUID")
			requireVar := func(name, want string) {
				if want == absent {
					require.Equal(t, []string{podEnv[1][len(name)+1:]}, got[name], "%s is the pod's own", name)
					return
				}
				require.Equal(t, []string{want}, got[name], "%s once, the spec's value", name)
			}
			requireVar(ascend.EnvVisibleDevices, tt.wantAscend)
			requireVar(cambricon.EnvVisibleDevices, tt.wantCambricon)

			// A container with only the Cambricon claim: where Ascend's
			// chips are not listed, its runtime gets the neutral value
			// here too, so the pod cannot name Ascend chips either.
			cOnly := n.claim(uid, cambricon.Vendor, 0, 1)
			got2, err := w.Write(context.Background(), cOnly)
			require.NoError(t, err)
			only := map[string][]string{}
			for _, e := range injectWithEnv(t, dir, podEnv, flatten(cOnly, got2)...).Process.Env {
				k, val, _ := strings.Cut(e, "=")
				only[k] = append(only[k], val)
			}
			if tt.wantAscend == "" {
				require.Equal(t, []string{""}, only[ascend.EnvVisibleDevices], "the Ascend runtime's neutral value in a Cambricon-only container")
			} else {
				require.Equal(t, []string{"0-7"}, only[ascend.EnvVisibleDevices], "no runtime to neutralize: the pod's own value")
			}
		})
	}
}

func TestAscendRuntimeIsFoundByItsBinary(t *testing.T) {
	tests := []struct {
		name, path, content string
		want                bool
	}{
		{name: "nothing installed"},
		{name: "the binary at the installer's default path", path: "usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime", content: "x", want: true},
		// The chart mounts nothing of the host's /etc: a runtime named
		// only in containerd's configuration is not a marker.
		{name: "containerd configured, binary elsewhere", path: "etc/containerd/config.toml",
			content: "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.ascend.options]\n  BinaryName = \"/opt/adr/ascend-docker-runtime\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.path != "" {
				p := filepath.Join(root, tt.path)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(tt.content), 0o644))
			}
			found, marker := cdi.RuntimeFound(ascend.Ascend{}, root)
			require.Equal(t, tt.want, found)
			if tt.want {
				require.Equal(t, "/"+tt.path, marker)
			}
		})
	}
}

func TestAnUnknownVisibleDevicesEnvModeIsAnError(t *testing.T) {
	_, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: t.TempDir(), HostRoot: t.TempDir(), VisibleDevicesEnv: "sometimes"})
	require.EqualError(t, err, `visible-devices env mode "sometimes" is not one of [auto set omit]`)
}

// A writer without vendors would reserve no visible-devices variable, so
// a config could name chips the claim was not given: it is refused.
func TestAWriterWithoutVendorsIsAnError(t *testing.T) {
	_, err := cdi.NewWriter(context.Background(), cdi.Config{SpecDir: t.TempDir(), HostRoot: t.TempDir()})
	require.EqualError(t, err, "creating the CDI writer: Config.Registry has no vendors (main builds it from pkg/vendors/all)")
}

// The config decoder (which the admission webhook runs at apply) and the
// writer (at prepare) refuse the same env, so a config the agent would
// refuse never gets past apply: both run v1alpha1.ValidateEnv with the
// registry's variables reserved.
func TestTheAPIAndTheWriterRefuseTheSameEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		refused bool
	}{
		{name: "ordinary", env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{name: "a NUL byte in a value", env: map[string]string{"HCCL_IF_IP": "10.0.0.1\x00"}, refused: true},
		{name: "its own visible-devices variable", env: map[string]string{ascend.EnvVisibleDevices: "0-7"}, refused: true},
		{name: "another vendor's visible-devices variable", env: map[string]string{cambricon.EnvVisibleDevices: "0"}, refused: true},
		{name: "a DRA_ variable", env: map[string]string{"DRA_DEVICE_NPU_0_UUID": "x"}, refused: true},
		{name: "a bad name", env: map[string]string{"1X": "y"}, refused: true},
	}
	n := newNode(t, "mixed-910b-mlu370", nil)
	uid := types.UID("0a1b2c3d-0000-4000-8000-000000000004")
	configs, err := registry.ConfigDecoder()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(map[string]any{"apiVersion": v1alpha1.GroupVersion, "kind": ascend.ConfigKind, "env": tt.env})
			require.NoError(t, err)
			_, apiErr := configs.DecodeConfig(raw, ascend.ConfigKind)
			w, _ := n.writer(t)
			c := n.claim(uid, ascend.Vendor, 0)
			c.Devices[0].Env = tt.env
			_, writeErr := w.Write(context.Background(), c)
			require.Equal(t, tt.refused, apiErr != nil, "refused at apply: %v", apiErr)
			require.Equal(t, tt.refused, writeErr != nil, "refused at prepare: %v", writeErr)
		})
	}
}

// Where ascend-docker-runtime is found the agent warns, in every mode: the
// runtime is a way around DRA for containers the specs do not reach.
func TestTheAgentWarnsWhereTheAscendRuntimeIsInstalled(t *testing.T) {
	for _, mode := range []string{cdi.VisibleDevicesAuto, cdi.VisibleDevicesSet, cdi.VisibleDevicesOmit} {
		t.Run(mode, func(t *testing.T) {
			var buf bytes.Buffer
			ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))))
			n := newNode(t, "atlas-800t-a2", nil)
			_, err := cdi.NewWriter(ctx, cdi.Config{Registry: registry, SpecDir: t.TempDir(), HostRoot: n.root, VisibleDevicesEnv: mode})
			require.NoError(t, err)
			require.NotContains(t, buf.String(), "Warning:", "no runtime, no warning")
			n.installAscendRuntime(t)
			_, err = cdi.NewWriter(ctx, cdi.Config{Registry: registry, SpecDir: t.TempDir(), HostRoot: n.root, VisibleDevicesEnv: mode})
			require.NoError(t, err)
			require.Contains(t, buf.String(), "Warning: ascend-docker-runtime is installed on this node and injects every chip a container's ASCEND_VISIBLE_DEVICES names, claimed or not; remove its device injection from the node")
			require.Contains(t, buf.String(), `found="/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"`)
		})
	}
}

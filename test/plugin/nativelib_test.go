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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

const (
	dcmiTestdata      = "../../pkg/vendors/ascend/testdata"
	cambriconTestdata = "../../pkg/vendors/cambricon/testdata"
)

// nativeProfile is one mock-library node: a vendor fixture file read by the
// mock libdcmi/libcndev, the host root the agent sees, and what the agent
// must publish and prepare on it.
type nativeProfile struct {
	name    string
	option  string // vendors' --vendors option, the key of the library flag
	driver  string
	fixture string // the mock's fixture file
	root    func(t *testing.T) string

	chips  int
	model  string
	memMiB int64
	// chipMemMiB, when set, is the memory of each chip instead of memMiB.
	chipMemMiB []int64
	cores      int64
	// library is the name the chips' Sources give for the library.
	library string
	// coresFromTable: the library has no core count call for the model.
	coresFromTable bool

	// whole is a chip prepared whole; wholeNode its device node (host and
	// container path under /dev) and visible its visible-devices value.
	whole     int
	wholeNode string
	visible   string
	// partition is a partition device prepared, made is the mock's state
	// file after it was made (empty: the profile has no partitions on).
	partition string
	made      string
	// partitionNode is the partition's device node under the root.
	partitionNode string
	// wholeOnly are chips published without partitions: the model has no
	// templates or the fixture has the chip's partition mode off.
	wholeOnly []int
	// unhealthy is the chip the test makes unhealthy in the fixture.
	unhealthy int
}

// a3Root writes a host root for the A3 DCMI fixtures, which have no npu-smi
// node under testdata: four die device files and their PCI functions
// (bus ids and device id as in testdata/dcmi/atlas-a3-*.txt).
func a3Root(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "bus", "pci", "devices"), 0o755))
	for i, bus := range []string{"0000:9d:00.0", "0000:9f:00.0", "0000:99:00.0", "0000:9b:00.0"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", fmt.Sprintf("davinci%d", i)), nil, 0o644))
		dir := filepath.Join(root, "sys", "devices", "pci0000:00", bus)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, value := range map[string]string{"vendor": "0x19e5", "device": "0xd803", "class": "0x120000", "numa_node": "0"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(value+"\n"), 0o644))
		}
		require.NoError(t, os.Symlink("../../../devices/pci0000:00/"+bus, filepath.Join(root, "sys", "bus", "pci", "devices", bus)))
	}
	for _, n := range []string{"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", n), nil, 0o644))
	}
	return root
}

func copyRoot(dir string) func(t *testing.T) string {
	return func(t *testing.T) string { return discoverytest.CopyTree(t, dir) }
}

func nativeProfiles() []nativeProfile {
	dcmi := func(name string) string { return filepath.Join(dcmiTestdata, "dcmi", name+".txt") }
	asc := func(p nativeProfile) nativeProfile {
		p.option, p.driver, p.library = ascend.Option, ascend.Driver, "libdcmi.so"
		return p
	}
	cam := func(p nativeProfile) nativeProfile {
		p.option, p.driver, p.library = cambricon.Option, cambricon.Driver, "libcndev.so"
		return p
	}
	return []nativeProfile{
		asc(nativeProfile{name: "910A", fixture: dcmi("atlas-800-910a"), root: copyRoot(dcmiTestdata + "/atlas-800-910a/root"),
			chips: 8, model: "Ascend910A", memMiB: 32768, cores: 30,
			whole: 3, wholeNode: "davinci3", visible: "3",
			partition: "npu-2-vir16-0", made: "2 132 vir16\n", partitionNode: "dev/vdavinci132", unhealthy: 5}),
		asc(nativeProfile{name: "910B3", fixture: dcmi("atlas-800t-a2"), root: copyRoot(dcmiTestdata + "/atlas-800t-a2/root"),
			chips: 8, model: "Ascend910B3", memMiB: 65536, cores: 20,
			whole: 0, wholeNode: "davinci0", visible: "0",
			partition: "npu-7-vir10-3c-32g-0", made: "7 212 vir10_3c_32g\n", partitionNode: "dev/vdavinci212", unhealthy: 1}),
		// The 910B4 fixture has the 910B3 node's bus ids and device id.
		asc(nativeProfile{name: "910B4", fixture: dcmi("atlas-800t-a2-910b4"), root: copyRoot(dcmiTestdata + "/atlas-800t-a2/root"),
			chips: 8, model: "Ascend910B4", memMiB: 32768, cores: 20,
			whole: 6, wholeNode: "davinci6", visible: "6",
			partition: "npu-0-vir05-1c-8g-0", made: "0 100 vir05_1c_8g\n", partitionNode: "dev/vdavinci100", unhealthy: 4}),
		asc(nativeProfile{name: "310P3 Duo", fixture: dcmi("atlas-300i-duo"), root: copyRoot(dcmiTestdata + "/atlas-300i-duo/root"),
			// The two chips of a card differ in DDR.
			chips: 4, model: "Ascend310P3", chipMemMiB: []int64{44280, 43693, 44280, 43693}, cores: 8,
			whole: 2, wholeNode: "davinci2", visible: "2",
			partition: "npu-1-vir04-3c-0", made: "1 116 vir04_3c\n", partitionNode: "dev/vdavinci116", unhealthy: 3}),
		asc(nativeProfile{name: "A3-20", fixture: dcmi("atlas-a3-20"), root: a3Root,
			chips: 4, model: "Ascend910_9372", memMiB: 65536, cores: 20,
			whole: 1, wholeNode: "davinci1", visible: "1",
			wholeOnly: []int{0, 1, 2, 3}, unhealthy: 2}),
		asc(nativeProfile{name: "A3-24", fixture: dcmi("atlas-a3-24"), root: a3Root,
			chips: 4, model: "Ascend910_9392", memMiB: 65536, cores: 24,
			whole: 0, wholeNode: "davinci0", visible: "0",
			wholeOnly: []int{0, 1, 2, 3}, unhealthy: 3}),
		// An Atlas 850 (950DT), read through DCMI v2: no PCIe address on
		// its unified-bus board, so the A2's root's device files serve.
		asc(nativeProfile{name: "950DT", fixture: dcmi("atlas-850"), root: copyRoot(dcmiTestdata + "/atlas-800t-a2/root"),
			chips: 8, model: "Ascend950DT", memMiB: 147456, cores: 32,
			whole: 2, wholeNode: "davinci2", visible: "2",
			wholeOnly: []int{0, 1, 2, 3, 4, 5, 6, 7}, unhealthy: 5}),
		cam(nativeProfile{name: "MLU270", fixture: cndevtest.Fixture("mlu270"), root: copyRoot(cambriconTestdata + "/mlu270/root"),
			chips: 3, model: "MLU270-S4", memMiB: 16384, cores: 16, coresFromTable: true,
			whole: 1, wholeNode: "cambricon_dev1", visible: "1",
			wholeOnly: []int{0, 1, 2}, unhealthy: 2}),
		cam(nativeProfile{name: "MLU370-X8", fixture: cndevtest.Fixture("mlu370-x8"), root: copyRoot(cambriconTestdata + "/mlu370-x8/root"),
			chips: 8, model: "MLU370-X8", memMiB: 23308, cores: 16,
			whole: 0, wholeNode: "cambricon_dev0", visible: "0",
			partition: "mlu-5-smlu-50p-0", made: fmt.Sprintf("5 1 1 smlu5-1 50 %d\n", int64(11654)<<20), partitionNode: "dev/cambricon-caps/cap_dev5_mi1", unhealthy: 7}),
		// sMLU is off on card 6 and unsupported by card 7's driver.
		cam(nativeProfile{name: "MLU590", fixture: cndevtest.Fixture("mlu590"), root: copyRoot(cambriconTestdata + "/mlu590/root"),
			chips: 8, model: "MLU590-M9", memMiB: 98304, cores: 48,
			whole: 7, wholeNode: "cambricon_dev7", visible: "7",
			partition: "mlu-2-smlu-25p-0", made: fmt.Sprintf("2 1 2 smlu2-1 25 %d\n", int64(24)<<30), partitionNode: "dev/cambricon-caps/cap_dev2_mi1", wholeOnly: []int{6, 7}, unhealthy: 4}),
	}
}

// withUnhealthyChip writes a copy of a mock fixture in which chip i
// reports itself unhealthy, the way each mock reads it: a DCMI "health"
// line (2, major) or a CNDev device line's health=problem.
func withUnhealthyChip(t *testing.T, p nativeProfile) string {
	t.Helper()
	raw, err := os.ReadFile(p.fixture)
	require.NoError(t, err)
	text := string(raw)
	if p.option == ascend.Option {
		text += fmt.Sprintf("health %d 2\n", p.unhealthy)
	} else {
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^(device index=%d .*)$`, p.unhealthy))
		require.True(t, line.MatchString(text), "fixture %s has device %d", p.fixture, p.unhealthy)
		text = line.ReplaceAllString(text, "$1 health=problem")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(p.fixture))
	require.NoError(t, os.WriteFile(out, []byte(text), 0o644))
	return out
}

// TestTheNodeAgentServesEveryProfileThroughTheMockLibraries runs the real
// node agent with --chip-modes Partitioned on each mock-library node, the
// vendor's library given as --dcmi-library / --cndev-library: it publishes
// the fixture's chips as the library reports them (one unhealthy chip
// tainted), prepares a whole chip, and makes and destroys a partition
// through the library where the fixture has the partition mode on.
func TestTheNodeAgentServesEveryProfileThroughTheMockLibraries(t *testing.T) {
	for _, p := range nativeProfiles() {
		t.Run(p.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			dir := t.TempDir()
			root := p.root(t)
			state := filepath.Join(dir, "partitions.state")
			var lib string
			if p.option == ascend.Option {
				lib = filepath.Join(dir, "libdcmi.so")
				out, err := exec.Command("gcc", "-shared", "-fPIC", "-I", dcmiTestdata+"/dcmi", "-o", lib, dcmiTestdata+"/dcmi/mock_dcmi.c").CombinedOutput()
				require.NoError(t, err, "building the mock libdcmi.so: %s", out)
				t.Setenv("ACCEL_DRA_DCMI_FIXTURE", withUnhealthyChip(t, p))
				t.Setenv("ACCEL_DRA_DCMI_STATE", state)
				// The host's vNPU lock directory and config the chart
				// mounts into the agent (ascend.VNPUHostFiles).
				host := filepath.Join(dir, "host")
				require.NoError(t, os.MkdirAll(filepath.Join(host, "run", "vnpu_cfg_lock"), 0o755))
				require.NoError(t, os.MkdirAll(filepath.Join(host, "etc"), 0o755))
				t.Setenv("ACCEL_DRA_DCMI_ROOT", host)
			} else {
				lib = cndevtest.Build(t)
				t.Setenv(cndevtest.EnvFixture, withUnhealthyChip(t, p))
				t.Setenv(cndevtest.EnvState, state)
				t.Setenv(cndevtest.EnvRoot, root)
			}
			tool := libraryOnlyTool(t, dir)
			disc := source.Options{Registry: registry, Root: root, NodeName: nodeName, Vendors: []string{p.option},
				Tools: map[string]string{ascend.NpuSmi: tool, cambricon.Cnmon: tool}, Libraries: map[string]string{p.option: lib}}

			// The facts the agent publishes were read through the library.
			inv, err := source.Discover(ctx, disc)
			require.NoError(t, err)
			require.Len(t, inv.Chips, p.chips)
			facts := []string{"model", "memory", "cores", "health"}
			if p.coresFromTable {
				facts = facts[:2:2]
				facts = append(facts, "health")
			}
			for _, c := range inv.Chips {
				for _, fact := range facts {
					require.True(t, strings.HasPrefix(c.Sources[fact], p.library+" "),
						"chip %d: %s read by %q, not %s", c.Index, fact, c.Sources[fact], p.library)
				}
				if p.coresFromTable {
					require.Equal(t, "model table (models.go)", c.Sources["cores"], "the library has no core count for %s", p.model)
				}
			}

			sockets, err := os.MkdirTemp("", "adra-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(sockets) })
			client := newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
			o := nodeagent.Options{
				Discovery:  disc,
				Publish:    nodeagent.PublishOptions{ChipModes: "Partitioned"},
				Plugin:     nodeagent.PluginOptions{RegistrarDir: filepath.Join(sockets, "reg"), PluginDir: filepath.Join(sockets, "plugins"), StateDir: filepath.Join(dir, "state")},
				CDI:        nodeagent.CDIOptions{Dir: filepath.Join(dir, "cdi")},
				KubeClient: client,
			}
			done := make(chan error)
			go func() { done <- nodeagent.Run(ctx, o) }()

			// The published devices, once the agent has published the chips.
			devices := map[string]resourceapi.Device{}
			require.Eventually(t, func() bool {
				slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
				require.NoError(t, err)
				clear(devices)
				for _, s := range slices.Items {
					for _, d := range s.Spec.Devices {
						devices[d.Name] = d
					}
				}
				// The slices are written one by one: wait for all chips.
				for i := 0; i < p.chips; i++ {
					if _, ok := devices[fmt.Sprintf("%s-%d", prefixOf(p), i)]; !ok {
						return false
					}
				}
				_, ok := devices[p.partition]
				return ok || p.partition == ""
			}, 30*time.Second, 20*time.Millisecond, "the agent publishes the chips")

			for i := 0; i < p.chips; i++ {
				name := fmt.Sprintf("%s-%d", prefixOf(p), i)
				d, ok := devices[name]
				require.True(t, ok, "%s published", name)
				require.Equal(t, p.model, *d.Attributes[names.AttrModel].StringValue, name)
				memory, cores := d.Capacity[names.CapMemory].Value, d.Capacity[names.CapCores].Value
				memMiB := p.memMiB
				if p.chipMemMiB != nil {
					memMiB = p.chipMemMiB[i]
				}
				require.Equal(t, memMiB<<20, memory.Value(), name)
				require.Equal(t, p.cores, cores.Value(), name)
				healthy := i != p.unhealthy
				require.Equal(t, healthy, *d.Attributes[names.AttrHealthy].BoolValue, name)
				require.Equal(t, healthy, len(d.Taints) == 0, "%s: tainted iff the library says unhealthy: %v", name, d.Taints)
			}
			for _, i := range p.wholeOnly {
				prefix := fmt.Sprintf("%s-%d-", prefixOf(p), i)
				for name := range devices {
					require.False(t, strings.HasPrefix(name, prefix), "chip %d is published whole only, not %s", i, name)
				}
			}

			kubelet := dialAgent(ctx, t, o.Plugin.RegistrarDir, p.driver)

			// A whole chip.
			whole := nativeClaim(p, "whole", fmt.Sprintf("%s-%d", prefixOf(p), p.whole))
			spec := prepareNative(ctx, t, client, kubelet, o.CDI.Dir, whole)
			require.Contains(t, spec, "hostPath: "+filepath.Join(root, "dev", p.wholeNode))
			require.Contains(t, spec, "path: /dev/"+p.wholeNode)
			visibleEnv := ascend.EnvVisibleDevices
			if p.option == cambricon.Option {
				visibleEnv = cambricon.EnvVisibleDevices
			}
			require.Contains(t, spec, "- "+visibleEnv+"="+p.visible+"\n")
			_, err = kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(whole)})
			require.NoError(t, err)
			require.NoFileExists(t, state, "a whole chip makes no partition")

			if p.partition != "" {
				part := nativeClaim(p, "part", p.partition)
				spec := prepareNative(ctx, t, client, kubelet, o.CDI.Dir, part)
				require.Contains(t, spec, "hostPath: "+filepath.Join(root, p.partitionNode))
				if p.option == ascend.Option {
					require.Contains(t, spec, "ASCEND_RUNTIME_OPTIONS=VIRTUAL", "a vNPU runs as a virtual device")
				} else {
					require.FileExists(t, filepath.Join(root, p.partitionNode), "the library made the instance's capability node")
				}
				made, err := os.ReadFile(state)
				require.NoError(t, err)
				require.Equal(t, p.made, string(made), "the mock library made the partition")
				_, err = kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(part)})
				require.NoError(t, err)
				left, err := os.ReadFile(state)
				require.NoError(t, err)
				require.Empty(t, strings.TrimSpace(string(left)), "unprepare destroyed the partition through the library")
				if p.option == cambricon.Option {
					require.NoFileExists(t, filepath.Join(root, p.partitionNode))
				}
			}

			cancel()
			require.NoError(t, <-done)
		})
	}
}

// libraryOnlyTool writes a vendor tool into dir that answers only what
// the libraries have no call for (npu-smi's vNPU mode); anything else
// fails, so discovery must read the chips through the libraries.
func libraryOnlyTool(t *testing.T, dir string) string {
	t.Helper()
	tool := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\n[ \"$*\" = \"info -t vnpu-mode\" ] && echo 'vnpu-mode : docker' && exit 0\necho \"unexpected: $0 $*\" >&2\nexit 1\n"), 0o755))
	return tool
}

func prefixOf(p nativeProfile) string {
	if p.option == ascend.Option {
		return "npu"
	}
	return "mlu"
}

func nativeClaim(p nativeProfile, name, device string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: p.driver, Pool: nodeName, Device: device}},
		}}},
	}
}

// prepareNative stores the claim, prepares it and returns its CDI spec,
// as YAML.
func prepareNative(ctx context.Context, t *testing.T, client kubernetes.Interface, kubelet drapb.DRAPluginClient, cdiDir string, claim *resourceapi.ResourceClaim) string {
	t.Helper()
	_, err := client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	require.Empty(t, resp.Claims[string(claim.UID)].Error, "preparing %s", claim.Name)
	specs, err := filepath.Glob(filepath.Join(cdiDir, "*"+string(claim.UID)+"*"))
	require.NoError(t, err)
	require.Len(t, specs, 1, "the CDI spec of %s", claim.Name)
	spec, err := os.ReadFile(specs[0])
	require.NoError(t, err)
	// The spec is JSON; as YAML, one field or list item per line.
	spec, err = yaml.JSONToYAML(spec)
	require.NoError(t, err)
	return string(spec)
}

// dialAgent connects to the agent's DRA service the way the kubelet finds
// it: through the registration socket.
func dialAgent(ctx context.Context, t *testing.T, registrarDir, driverName string) drapb.DRAPluginClient {
	t.Helper()
	regSock := filepath.Join(registrarDir, driverName+"-reg.sock")
	require.Eventually(t, func() bool { _, err := os.Stat(regSock); return err == nil }, 30*time.Second, 20*time.Millisecond)
	reg, err := grpc.NewClient("unix://"+regSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { reg.Close() })
	// The socket file exists a moment before it is served.
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err)
	conn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return drapb.NewDRAPluginClient(conn)
}

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
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// simulatedAgent returns the options of a node agent for a simulated node
// of profile with fake devices, as the binary gets them, in directories
// removed after the test (the sockets in a short one: unix socket paths are
// limited to 108 bytes), and the fake API server it talks to.
func simulatedAgent(t *testing.T, profile string) (nodeagent.Options, *fake.Clientset) {
	t.Helper()
	needsRoot(t, "the node agent's --fake-devices makes device nodes with mknod")
	sockets, err := os.MkdirTemp("", "adra-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	dir := t.TempDir()
	client := newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
	return nodeagent.Options{
		Discovery:   source.Options{Registry: registry, Profile: profile, NodeName: nodeName, Root: filepath.Join(dir, "root")},
		FakeDevices: true,
		Plugin:      nodeagent.PluginOptions{RegistrarDir: filepath.Join(sockets, "reg"), PluginDir: filepath.Join(sockets, "plugins"), StateDir: filepath.Join(dir, "state")},
		CDI:         nodeagent.CDIOptions{Dir: filepath.Join(dir, "cdi")},
		KubeClient:  client,
	}, client
}

// runWithProbes runs the node agent with its probe server on a free port
// and returns the server's address, once it listens, and the agent's result.
func runWithProbes(ctx context.Context, t *testing.T, o nodeagent.Options) (net.Addr, <-chan error) {
	t.Helper()
	o.Health.Addr = "127.0.0.1:0"
	healthAddr := make(chan net.Addr, 1)
	o.Health.OnServing = func(a net.Addr) { healthAddr <- a }
	done := make(chan error, 1)
	go func() { done <- nodeagent.Run(ctx, o) }()
	select {
	case addr := <-healthAddr:
		return addr, done
	case err := <-done:
		t.Fatalf("node agent stopped before serving its probes: %v", err)
		return nil, nil
	}
}

// TestTheNodeAgentServesBothVendorsOfAMixedNode runs the node agent as the
// binary does on the mixed profile with fake devices: both drivers
// register, one claim with an Ascend and a Cambricon device is prepared by
// each driver for its own device, and cancelling (SIGTERM) stops it cleanly.
func TestTheNodeAgentServesBothVendorsOfAMixedNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, client := simulatedAgent(t, "mixed-910b-mlu370")
	addr, done := runWithProbes(ctx, t, o)

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ascend-plus-mlu", UID: "uid-mixed"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "npu", Driver: ascend.Driver, Pool: nodeName, Device: "npu-2"},
				{Request: "mlu", Driver: cambricon.Driver, Pool: nodeName, Device: "mlu-1"},
			},
		}}},
	}
	_, err := client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)

	// Serving means: both drivers published their slices.
	require.Eventually(t, func() bool {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		drivers := map[string]bool{}
		for _, s := range list.Items {
			drivers[s.Spec.Driver] = true
		}
		return len(drivers) == 2
	}, 30*time.Second, 20*time.Millisecond, "both drivers publish their slices")

	probe := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr.String() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, _ := probe("/livez")
	require.Equal(t, http.StatusOK, code)
	code, body := probe("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready before the kubelet confirms the registration")
	require.Contains(t, body, "not yet registered with the kubelet: cambricon.accel-dra.dev, ascend.accel-dra.dev")

	var ids []string
	for _, driverName := range []string{ascend.Driver, cambricon.Driver} {
		regSock := filepath.Join(o.Plugin.RegistrarDir, driverName+"-reg.sock")
		require.Eventually(t, func() bool { _, err := os.Stat(regSock); return err == nil }, 30*time.Second, 20*time.Millisecond, "%s registers", driverName)
		reg, err := grpc.NewClient("unix://"+regSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer reg.Close()
		info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
		require.NoError(t, err)
		_, err = registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
		require.NoError(t, err)
		conn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		resp, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claim)})
		require.NoError(t, err)
		r := resp.Claims[string(claim.UID)]
		require.Empty(t, r.Error)
		require.Len(t, r.Devices, 1, "%s prepares only its own device of the claim", driverName)
		ids = append(ids, r.Devices[0].CdiDeviceIds...)
	}

	code, _ = probe("/readyz")
	require.Equal(t, http.StatusOK, code, "ready once both drivers are registered")

	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(o.CDI.Dir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	_, err = cache.InjectDevices(spec, ids...)
	require.NoError(t, err)
	require.Equal(t, []string{"/dev/cambricon_ctl", "/dev/cambricon_dev1", "/dev/cambricon_ipcm1",
		"/dev/davinci2", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, devicePaths(spec))
	env := envMap(spec)
	require.Equal(t, "2", env["ASCEND_VISIBLE_DEVICES"])
	require.Equal(t, "1", env["CAMBRICON_VISIBLE_DEVICES"])

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "a cancelled (SIGTERM) node agent stops without error")
	case <-time.After(time.Minute):
		t.Fatal("node agent did not stop")
	}
}

func TestTheNodeAgentRefusesToStartWithoutChipsOrANodeName(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	err := nodeagent.Run(ctx, nodeagent.Options{Discovery: source.Options{Registry: registry, Root: t.TempDir(), NodeName: "n"}})
	require.ErrorContains(t, err, "no ascend or cambricon chips found under")
	err = nodeagent.Run(ctx, nodeagent.Options{Discovery: source.Options{Registry: registry, Profile: "mlu270"}})
	require.ErrorContains(t, err, "node name is required (--node-name or NODE_NAME)")
	err = nodeagent.Run(ctx, nodeagent.Options{Discovery: source.Options{Registry: registry, NodeName: "n", Root: t.TempDir()}, FakeDevices: true})
	require.ErrorContains(t, err, "--fake-devices needs --profile")
}

// TestTheNodeAgentMakesPartitionsOnASimulatedNodeWithItsFakeTool runs the
// node agent on a simulated MLU590 node with fake devices: a claim for an
// sMLU instance gets one, kept in the fake tool's state file in the
// driver's state directory with its device node under the fake root, and
// unpreparing removes both.
func TestTheNodeAgentMakesPartitionsOnASimulatedNodeWithItsFakeTool(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, client := simulatedAgent(t, "mlu590")
	o.Publish.ChipModes = "Partitioned,mlu-0=Shared"
	done := make(chan error)
	go func() { done <- nodeagent.Run(ctx, o) }()

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "quarter", UID: "uid-quarter"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "mlu", Driver: cambricon.Driver, Pool: nodeName, Device: "mlu-3-smlu-25p-0"}},
		}}},
	}
	_, err := client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)

	kubelet := dialAgent(ctx, t, o.Plugin.RegistrarDir, cambricon.Driver)

	resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	require.Empty(t, resp.Claims[string(claim.UID)].Error)
	fake := &profilenode.PartitionTool{StatePath: filepath.Join(o.Plugin.StateDir, cambricon.Driver, profilenode.PartitionStateFile)}
	list, err := fake.Instances()
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "/dev/cambricon-caps/cap_dev3_mi1", list[0].DeviceNode)
	require.FileExists(t, filepath.Join(o.Discovery.Root, list[0].DeviceNode))

	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(o.CDI.Dir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	_, err = cache.InjectDevices(spec, resp.Claims[string(claim.UID)].Devices[0].CdiDeviceIds...)
	require.NoError(t, err)
	require.Equal(t, []string{"/dev/cambricon-caps/cap_dev3_mi1", "/dev/cambricon_ctl", "/dev/cambricon_dev3", "/dev/cambricon_ipcm3"}, devicePaths(spec))

	require.Eventually(t, func() bool {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range slices.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == "mlu-0" {
					return d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
				}
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the chip modes reach the published slices")

	_, err = kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	list, err = fake.Instances()
	require.NoError(t, err)
	require.Empty(t, list)
	require.NoFileExists(t, filepath.Join(o.Discovery.Root, "/dev/cambricon-caps/cap_dev3_mi1"))

	cancel()
	require.NoError(t, <-done)
}

func TestTheNodeAgentRefusesChipModesItDoesNotKnow(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	err := nodeagent.Run(ctx, nodeagent.Options{Discovery: source.Options{Registry: registry, Profile: "mlu270", NodeName: "n"}, Publish: nodeagent.PublishOptions{ChipModes: "mlu-0=Sliced"}})
	require.EqualError(t, err, `--chip-modes: chip modes entry 1 "mlu-0=Sliced": mode "Sliced" is not one of Partitioned, Shared, Whole`)
}

// TestLivenessFailsWhileTheDriversCallsAreStuck: /livez makes the calls
// the kubelet makes. While another process holds the Ascend driver's
// serialize.lock (an old pod wedged inside a prepare), an empty prepare
// cannot get through and /livez fails (after the cached result of the
// last check expires), naming the driver; once the lock
// is free it answers again.
func TestLivenessFailsWhileTheDriversCallsAreStuck(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, _ := simulatedAgent(t, "atlas-800t-a2")
	o.Plugin.PodUID, o.Health.LivenessTimeout = "pod-live", time.Second
	addr, done := runWithProbes(ctx, t, o)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr.String() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	livez := func() (int, string) { return get("/livez") }
	lock := filepath.Join(o.Plugin.PluginDir, ascend.Driver, driver.SerializeLockFile)
	require.Eventually(t, func() bool {
		_, body := get("/readyz")
		return strings.Contains(body, "not yet registered with the kubelet")
	}, 30*time.Second, 20*time.Millisecond, "the driver has started")
	code, body := livez()
	require.Equal(t, http.StatusOK, code, body)

	held, err := fileutil.LockFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	// The last check's result answers for nodeagent.LiveCacheTTL.
	require.Eventually(t, func() bool { code, body = livez(); return code == http.StatusServiceUnavailable }, 30*time.Second, 50*time.Millisecond,
		"/livez fails once a check finds the calls stuck")
	require.Contains(t, body, "ascend.accel-dra.dev: an empty NodePrepareResources on ")
	require.NoError(t, held.Close())
	require.Eventually(t, func() bool { code, _ := livez(); return code == http.StatusOK }, 30*time.Second, 50*time.Millisecond,
		"live again once the calls get through")
	cancel()
	require.NoError(t, <-done)
}

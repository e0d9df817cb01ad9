package plugin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/discovery/source"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

const dcmiTestdata = "../../pkg/vendors/ascend/testdata"

// TestTheNodeAgentPreparesAVNPUThroughDCMI runs the node agent on a real
// (fixture) Atlas 300I Duo node whose chips it reads through the mock
// libdcmi.so (--dcmi-library): with --chip-modes Partitioned and the node
// in vNPU docker mode it publishes vNPU devices, prepares one by creating
// the vNPU through dcmi_create_vdevice and unprepares it by destroying it.
func TestTheNodeAgentPreparesAVNPUThroughDCMI(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "libdcmi.so")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-I", dcmiTestdata+"/dcmi", "-o", lib, dcmiTestdata+"/dcmi/mock_dcmi.c").CombinedOutput()
	require.NoError(t, err, "building the mock libdcmi.so: %s", out)
	state := filepath.Join(dir, "vnpus.state")
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", dcmiTestdata+"/dcmi/atlas-300i-duo.txt")
	t.Setenv("ACCEL_DRA_DCMI_STATE", state)
	// npu-smi answers only what DCMI has no call for: the vNPU mode.
	npuSmi := filepath.Join(dir, "npu-smi")
	require.NoError(t, os.WriteFile(npuSmi, []byte("#!/bin/sh\n[ \"$*\" = \"info -t vnpu-mode\" ] && echo 'vnpu-mode : docker' && exit 0\necho \"unexpected: npu-smi $*\" >&2\nexit 1\n"), 0o755))

	sockets, err := os.MkdirTemp("", "adra-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	client := newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
	o := nodeagent.Options{
		Discovery: source.Options{Root: discoverytest.CopyTree(t, dcmiTestdata+"/atlas-300i-duo/root"), NodeName: nodeName,
			NpuSmi: npuSmi, Libraries: map[string]string{ascend.Option: lib}},
		ChipModes:    "Partitioned",
		RegistrarDir: filepath.Join(sockets, "reg"),
		PluginDir:    filepath.Join(sockets, "plugins"),
		CDIDir:       filepath.Join(dir, "cdi"),
		StateDir:     filepath.Join(dir, "state"),
		KubeClient:   client,
	}
	done := make(chan error)
	go func() { done <- nodeagent.Run(ctx, o) }()

	const device = "npu-1-vir04-3c-0"
	require.Eventually(t, func() bool {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range slices.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == device {
					return true
				}
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "vNPUs are published: DCMI read the chips, the node is in vNPU docker mode")

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vnpu", UID: "uid-vnpu"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "npu", Driver: ascend.Driver, Pool: nodeName, Device: device}},
		}}},
	}
	_, err = client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	regSock := filepath.Join(o.RegistrarDir, ascend.Driver+"-reg.sock")
	require.Eventually(t, func() bool { _, err := os.Stat(regSock); return err == nil }, 30*time.Second, 20*time.Millisecond)
	reg, err := grpc.NewClient("unix://"+regSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer reg.Close()
	// The socket file exists a moment before it is served.
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err)
	conn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	kubelet := drapb.NewDRAPluginClient(conn)

	resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	require.Empty(t, resp.Claims[string(claim.UID)].Error)
	// Chip 1 has physical id 1: its first vNPU id is 1*16+100.
	made, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Equal(t, "1 116 vir04_3c\n", string(made), "the mock library made the vNPU")
	specs, err := filepath.Glob(filepath.Join(o.CDIDir, "*uid-vnpu*"))
	require.NoError(t, err)
	require.Len(t, specs, 1)
	spec, err := os.ReadFile(specs[0])
	require.NoError(t, err)
	require.Contains(t, string(spec), "hostPath: "+filepath.Join(o.Discovery.Root, "dev/vdavinci116"))
	require.Contains(t, string(spec), "path: /dev/davinci116")
	require.Contains(t, string(spec), "ASCEND_RUNTIME_OPTIONS=VIRTUAL")

	_, err = kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	left, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(left)), "unprepare destroyed the vNPU through the library")

	cancel()
	require.NoError(t, <-done)
}

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

// Package plugin_test is tier 3 of docs/architecture.md: the real kubelet plugin,
// started in-process on temporary unix sockets against a fake clientset,
// driven by a test that speaks the kubelet's plugin registration and DRA
// v1 gRPC APIs, with CDI specs checked by injecting them into OCI specs
// with the CDI library.
package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/devicefaker"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

const nodeName = "node-0"

// node is one simulated node: its chips, a fake host root with real
// (null) device nodes, and the plugin's directories.
type node struct {
	t                                         testing.TB
	vendor                                    inventory.Vendor
	driverName                                string
	inv                                       inventory.Inventory
	root, cdiDir, stateDir, regDir, pluginDir string
	client                                    *fake.Clientset

	// policy is the node agent's chip modes; fake stands in for npu-smi and
	// cnmon, keeping partitions in the state directory; commands logs every
	// partition command the plugin runs.
	policy   partitions.Policy
	fake     *profilenode.PartitionTool
	commands *commandLog
	// runner, when set before start, answers the partition commands
	// instead of fake.
	runner discovery.CommandRunner
	// metrics outlive restarts, as in one agent process.
	metrics *metrics.Metrics
	// configure, when set, changes the driver's config at each start;
	// logs, when set, is the config of the plugin's test logger.
	configure func(*driver.Config)
	logs      *ktesting.Config
	// logger, when set, is the plugin's logger instead of the test
	// logger (a benchmark's, which must not keep all it logs in memory).
	logger *klog.Logger
	// visibleDevicesEnv is the node agent's --visible-devices-env.
	visibleDevicesEnv string

	ctx     context.Context
	cancel  context.CancelFunc
	driver  *driver.Driver
	kubelet drapb.DRAPluginClient
	draConn *grpc.ClientConn
	conns   []*grpc.ClientConn
	uids    atomic.Int64
}

// nodeOptions say what node a test starts; a zero field is the default.
type nodeOptions struct {
	// Profile is the hardware profile whose profile node is served
	// (simulatedNode); without it, Inventory is.
	Profile string
	// Inventory is the node's chips when there is no Profile (e.g.
	// discovered from a fixture root).
	Inventory inventory.Inventory
	// Vendor is the vendor whose driver runs.
	Vendor inventory.Vendor
	// ChipModes is the node agent's --chip-modes (partitions.ParsePolicy
	// syntax); default every chip Whole.
	ChipModes string
	// Runner, when set, answers the partition commands (recorded vendor
	// tool output) instead of the profile node's partition tool.
	Runner discovery.CommandRunner
	// Setup, when set, changes the node before its plugin starts.
	Setup func(*node)
	// VNPUsOff switches the node's vNPUs off (the declared partition mode
	// off): its Shared Ascend chips' shares are accounting only, asked for
	// in memory and cores rather than vNPU template units.
	VNPUsOff bool
}

// needsRoot skips t, saying why, unless the test runs as root (make test
// does, as CI does): most plugin tests fake the chips' device nodes with
// mknod, which only root may do.
func needsRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s (run the plugin tests as root, as make test does)", why)
	}
}

// simulatedNode is what discovery finds on a simulated node of profile,
// for a test that fakes its device nodes (mknod: root only).
func simulatedNode(t testing.TB, profileName string) inventory.Inventory {
	t.Helper()
	needsRoot(t, "mknod of the simulated chips' fake device nodes")
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, nodeName, p).Discover(context.Background())
	require.NoError(t, err)
	return inv
}

// startNode starts the plugin of a node as o says, stopped when t ends.
func startNode(t testing.TB, o nodeOptions) *node {
	t.Helper()
	inv, vendor := o.Inventory, o.Vendor
	if o.Profile != "" {
		inv = simulatedNode(t, o.Profile)
	}
	if o.VNPUsOff {
		for i := range inv.Chips {
			inv.Chips[i].PartitionModeOff = "vNPUs are switched off for this node"
		}
	}
	// Unix socket paths are limited to 108 bytes: keep them short.
	sockets, err := os.MkdirTemp("", "adra-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	dir := t.TempDir()
	n := &node{
		t: t, vendor: vendor, driverName: registry.DriverFor(vendor), inv: inv,
		root: filepath.Join(dir, "root"), cdiDir: filepath.Join(dir, "cdi"), stateDir: filepath.Join(dir, "state"),
		regDir: filepath.Join(sockets, "reg"), pluginDir: filepath.Join(sockets, "plugins"),
		client: newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}),
	}
	n.policy, err = partitions.ParsePolicy(registry, o.ChipModes)
	require.NoError(t, err)
	n.fake = &profilenode.PartitionTool{StatePath: filepath.Join(n.stateDir, profilenode.PartitionStateFile),
		Vendors: []vendors.Vendor{vendorOf(t, vendor)}, Chips: inv.ChipsOf(vendor), Root: n.root}
	n.commands = &commandLog{}
	n.runner = o.Runner
	n.metrics = metrics.New()
	needsRoot(t, "mknod of the node's fake device nodes")
	require.NoError(t, devicefaker.Create(context.Background(), registry, n.root, inv))
	if o.Setup != nil {
		o.Setup(n)
	}
	n.start()
	t.Cleanup(n.stop)
	return n
}

// start runs the plugin and registers it the way the kubelet does: find
// the registration socket, GetInfo, connect to the endpoint it names and
// confirm with NotifyRegistrationStatus.
func (n *node) start() {
	t := n.t
	t.Helper()
	// Buffered, so tests can check what was logged (see logOf); a test
	// may set its own logger config in n.logs.
	logs := n.logs
	if logs == nil {
		logs = ktesting.NewConfig(ktesting.BufferLogs(true))
	}
	logger := ktesting.NewLogger(t, logs)
	if n.logger != nil {
		logger = *n.logger
	}
	ctx := klog.NewContext(context.Background(), logger)
	n.ctx, n.cancel = context.WithCancel(ctx)
	writer, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: n.cdiDir, HostRoot: n.root, VisibleDevicesEnv: n.visibleDevicesEnv})
	require.NoError(t, err)
	n.commands.runner = n.fake
	if n.runner != nil {
		n.commands.runner = n.runner
	}
	v := vendorOf(t, n.vendor)
	cfg := driver.Config{
		Policy: n.policy, PartitionTool: v.Partitions().NewTool(vendors.BackendConfig{Runner: n.commands, Library: vendors.LibraryNone}),
		Vendor: v, NodeName: nodeName, Inventory: n.inv, CDI: writer, Configs: configs,
		StateDir: n.stateDir, KubeClient: n.client,
		OnFatal:      func(err error) { t.Errorf("fatal driver error: %v", err) },
		RegistrarDir: n.regDir, PluginDataDir: filepath.Join(n.pluginDir, n.driverName),
		Metrics: n.metrics,
	}
	if n.configure != nil {
		n.configure(&cfg)
	}
	n.driver, err = driver.Start(n.ctx, cfg)
	require.NoError(t, err)

	reg := n.dial(filepath.Join(n.regDir, n.driverName+"-reg.sock"))
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(n.ctx, &registerapi.InfoRequest{})
	require.NoError(t, err)
	require.Equal(t, registerapi.DRAPlugin, info.Type)
	require.Equal(t, n.driverName, info.Name)
	require.Contains(t, info.SupportedVersions, drapb.DRAPluginService)
	n.draConn = n.dial(info.Endpoint)
	n.kubelet = drapb.NewDRAPluginClient(n.draConn)
	_, err = registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(n.ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	require.NoError(t, err)
}

func (n *node) dial(path string) *grpc.ClientConn {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(n.t, err)
	n.conns = append(n.conns, conn)
	return conn
}

func (n *node) stop() {
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
	if n.driver != nil {
		n.driver.Stop()
		n.driver = nil
	}
	if n.cancel != nil {
		n.cancel()
	}
}

// restart stops the plugin process and starts a new one on the same
// directories, as after a crash or an upgrade.
func (n *node) restart() {
	n.stop()
	n.start()
}

// claim creates a ResourceClaim allocated to devices of this node's
// driver in the fake API server, as the scheduler would leave it.
func (n *node) claim(name string, devices []string, configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	n.t.Helper()
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%d", name, n.uids.Add(1)))},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Config: configs},
		}},
	}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: n.driverName, Pool: nodeName, Device: d})
	}
	c, err := n.client.ResourceV1().ResourceClaims(c.Namespace).Create(n.ctx, c, metav1.CreateOptions{})
	require.NoError(n.t, err)
	return c
}

// claimWithResults creates a ResourceClaim with these allocation results
// (the scheduler's output, e.g. from test/allocation) in the fake API server.
func (n *node) claimWithResults(name string, results []resourceapi.DeviceRequestAllocationResult, configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	n.t.Helper()
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%d", name, n.uids.Add(1)))},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results, Config: configs},
		}},
	}
	c, err := n.client.ResourceV1().ResourceClaims(c.Namespace).Create(n.ctx, c, metav1.CreateOptions{})
	require.NoError(n.t, err)
	return c
}

// partitionsOnChips lists the partitions that exist on the node's chips.
func (n *node) partitionsOnChips() []vendors.Instance {
	n.t.Helper()
	list, err := n.fake.Instances()
	require.NoError(n.t, err)
	return list
}

// commandLog records the vendor tool commands run through it.
type commandLog struct {
	runner discovery.CommandRunner
	mu     sync.Mutex
	lines  []string
}

func (l *commandLog) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	l.mu.Lock()
	l.lines = append(l.lines, discovery.CommandLine(name, args...))
	l.mu.Unlock()
	return l.runner.Run(ctx, name, args...)
}

// changes returns, and forgets, the commands that change partitions
// (create, destroy) since the last call.
func (l *commandLog) changes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.lines {
		// npu-smi spells the change out; cnmon smlu uses -C and -D.
		if strings.Contains(c, "create") || strings.Contains(c, "destroy") || strings.Contains(c, " -C ") || strings.Contains(c, " -D ") {
			out = append(out, c)
		}
	}
	l.lines = nil
	return out
}

// opaque is an allocation config for this node's driver.
func (n *node) opaque(source resourceapi.AllocationConfigSource, params string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: source, Requests: requests, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: n.driverName, Parameters: runtime.RawExtension{Raw: []byte(params)}},
	}}
}

func pbClaims(claims ...*resourceapi.ResourceClaim) []*drapb.Claim {
	out := make([]*drapb.Claim, 0, len(claims))
	for _, c := range claims {
		out = append(out, &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)})
	}
	return out
}

// prepare calls NodePrepareResources like the kubelet and returns the
// per-claim responses.
func (n *node) prepare(claims ...*resourceapi.ResourceClaim) map[string]*drapb.NodePrepareResourceResponse {
	n.t.Helper()
	resp, err := n.kubelet.NodePrepareResources(n.ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claims...)})
	require.NoError(n.t, err)
	require.Len(n.t, resp.Claims, len(claims))
	return resp.Claims
}

// mustPrepare prepares one claim and returns its CDI device IDs.
func (n *node) mustPrepare(c *resourceapi.ResourceClaim) []string {
	n.t.Helper()
	r := n.prepare(c)[string(c.UID)]
	require.Empty(n.t, r.Error)
	var ids []string
	for _, d := range r.Devices {
		require.Equal(n.t, nodeName, d.PoolName)
		require.Equal(n.t, []string{"accel"}, d.RequestNames)
		ids = append(ids, d.CdiDeviceIds...)
	}
	return ids
}

func (n *node) unprepare(claims ...*resourceapi.ResourceClaim) {
	n.t.Helper()
	resp, err := n.kubelet.NodeUnprepareResources(n.ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(claims...)})
	require.NoError(n.t, err)
	for _, c := range claims {
		require.Empty(n.t, resp.Claims[string(c.UID)].Error, "unprepare %s", c.Name)
	}
}

// cdiFiles lists the spec files in the CDI directory.
func (n *node) cdiFiles() []string {
	n.t.Helper()
	entries, err := os.ReadDir(n.cdiDir)
	require.NoError(n.t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// container injects CDI device IDs into an empty OCI spec the way a
// container runtime does, from the specs on disk.
func (n *node) container(ids []string) *oci.Spec {
	n.t.Helper()
	return containerOf(n.t, n.cdiDir, ids)
}

// containerOf is node.container for the CDI specs in cdiDir.
func containerOf(t testing.TB, cdiDir string, ids []string) *oci.Spec {
	t.Helper()
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(cdiDir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	require.Empty(t, cache.GetErrors(), "every spec in the CDI directory must be valid")
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	unresolved, err := cache.InjectDevices(spec, ids...)
	require.NoError(t, err)
	require.Empty(t, unresolved)
	return spec
}

func devicePaths(s *oci.Spec) []string {
	var out []string
	for _, d := range s.Linux.Devices {
		out = append(out, d.Path)
	}
	sort.Strings(out)
	return out
}

func mountPaths(s *oci.Spec, root string) []string {
	var out []string
	for _, m := range s.Mounts {
		out = append(out, m.Destination+" <- "+strings.TrimPrefix(m.Source, root)+" "+strings.Join(m.Options, ","))
	}
	sort.Strings(out)
	return out
}

func envMap(s *oci.Spec) map[string]string {
	out := map[string]string{}
	for _, e := range s.Process.Env {
		k, v, _ := strings.Cut(e, "=")
		out[k] = v
	}
	return out
}

// publishedDevices are the devices of the node's ResourceSlices in the
// fake API server, by name.
func (n *node) publishedDevices() map[string]resourceapi.Device {
	n.t.Helper()
	list, err := n.client.ResourceV1().ResourceSlices().List(n.ctx, metav1.ListOptions{})
	require.NoError(n.t, err)
	out := map[string]resourceapi.Device{}
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			out[d.Name] = d
		}
	}
	return out
}

// waitPublished waits until the published devices satisfy ok and returns them.
func (n *node) waitPublished(ok func(map[string]resourceapi.Device) bool, msg string) map[string]resourceapi.Device {
	n.t.Helper()
	var got map[string]resourceapi.Device
	require.Eventually(n.t, func() bool {
		got = n.publishedDevices()
		return ok(got)
	}, time.Minute, 10*time.Millisecond, msg)
	return got
}

// mknodNull makes path a /dev/null clone (1:3), replacing what is there.
func mknodNull(t testing.TB, path string) {
	t.Helper()
	needsRoot(t, "mknod of a fake device node")
	_ = os.Remove(path)
	require.NoError(t, unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
}

// hostPathOf is the host path the CDI device ids give the container's
// device node at path.
func (n *node) hostPathOf(ids []string, path string) string {
	n.t.Helper()
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(n.cdiDir), cdiapi.WithAutoRefresh(false))
	require.NoError(n.t, err)
	for _, id := range ids {
		dev := cache.GetDevice(id)
		require.NotNil(n.t, dev, id)
		for _, d := range dev.ContainerEdits.DeviceNodes {
			if d.Path == path {
				return d.HostPath
			}
		}
	}
	return ""
}

// vendorOf is the registered vendor of inventory value v.
func vendorOf(t testing.TB, v inventory.Vendor) vendors.Vendor {
	t.Helper()
	x, ok := registry.Lookup(v)
	require.True(t, ok, "vendor %s is registered", v)
	return x
}

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
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// agentEnv, set to a JSON agentConfig, makes the test binary the node
// agent (TestMain runs childAgent instead of the tests): the crash and
// soak tests need a process they can SIGKILL.
const agentEnv = "ACCEL_DRA_TEST_AGENT"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(agentEnv); cfg != "" {
		os.Exit(childAgent(cfg))
	}
	if cfg := os.Getenv(floorEnv); cfg != "" {
		os.Exit(childFloor(cfg))
	}
	os.Exit(m.Run())
}

// agentBinaryEnv names the node agent with failpoints the child agents
// run: this package's test binary built with -tags failpoint, which make
// test builds (make failpoint-agent). Production code, and so a plain go
// test, has no failpoints (see package failpoint).
const agentBinaryEnv = "ACCEL_DRA_FAILPOINT_AGENT"

// agentBinary is this test binary when it was built with -tags failpoint,
// else the one agentBinaryEnv names; without either the test is skipped.
func agentBinary(t testing.TB) string {
	t.Helper()
	if failpoint.Enabled {
		return os.Args[0]
	}
	bin := os.Getenv(agentBinaryEnv)
	if bin == "" {
		t.Skipf("needs the node agent with failpoints: run make test (it builds one and sets %s), or go test -tags failpoint", agentBinaryEnv)
	}
	bin, err := filepath.Abs(bin)
	require.NoError(t, err)
	require.FileExists(t, bin, "%s names the node agent with failpoints (make failpoint-agent)", agentBinaryEnv)
	return bin
}

// agentConfig is what the parent tells the child agent.
type agentConfig struct {
	Profile, ChipModes                              string
	Root, RegistrarDir, PluginDir, CDIDir, StateDir string
	// ClaimsDir holds the ResourceClaims the fake API server serves, one
	// JSON file each (claimFile), read at every get so the parent can add
	// claims while the child runs.
	ClaimsDir string
	// PublishedFile, when set, is created once the fake API server holds
	// every ResourceSlice of the node (see waitPublished): registration
	// comes before publication.
	PublishedFile string
	// ChipMetrics runs the chip metrics every ChipMetricsInterval, and
	// MetricsAddrFile, when set, serves /metrics on a loopback port whose
	// address the child writes to that file (the chip metrics benchmark).
	ChipMetrics         bool
	ChipMetricsInterval time.Duration
	MetricsAddrFile     string
	// PodUID, when set, makes the agent one pod of a rolling update
	// (nodeagent.PluginOptions.PodUID).
	PodUID types.UID
	// DeviceMetadata is nodeagent.CDIOptions.DeviceMetadata.
	DeviceMetadata bool
	// Without a Profile the agent discovers the chips under Root through
	// these vendor libraries and tools (source.Options), re-reading them
	// every HealthInterval.
	Libraries, Tools   map[string]string
	LibraryCallTimeout time.Duration
	HealthInterval     time.Duration
	// LibraryHangLimit is nodeagent.HealthOptions.LibraryHangLimit.
	LibraryHangLimit time.Duration
	// HealthAddrFile, when set, serves /livez and /readyz on a loopback
	// port whose address the child writes to that file.
	HealthAddrFile string
}

// discovery is the child's source.Options.
func (cfg agentConfig) discovery() source.Options {
	return source.Options{Registry: registry, Profile: cfg.Profile, NodeName: nodeName, Root: cfg.Root,
		Libraries: cfg.Libraries, Tools: cfg.Tools, LibraryCallTimeout: cfg.LibraryCallTimeout}
}

func claimFile(dir, namespace, name string) string {
	return filepath.Join(dir, namespace+"_"+name+".json")
}

// childAgent runs nodeagent.Run, as the binary does, on a simulated node
// with fake devices against a fake API server, until SIGTERM.
func childAgent(raw string) int {
	var cfg agentConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child agent:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if path := os.Getenv(heapProfileEnv); path != "" {
		ctx = heapProfileAtStop(ctx, path)
	}
	client := newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
	client.PrependReactor("get", "resourceclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		get := action.(k8stesting.GetAction)
		data, err := os.ReadFile(claimFile(cfg.ClaimsDir, get.GetNamespace(), get.GetName()))
		if errors.Is(err, os.ErrNotExist) {
			return true, nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), get.GetName())
		}
		if err != nil {
			return true, nil, err
		}
		c := &resourceapi.ResourceClaim{}
		return true, c, json.Unmarshal(data, c)
	})
	if cfg.PublishedFile != "" {
		go reportPublished(ctx, cfg, client)
	}
	err := nodeagent.Run(klog.NewContext(ctx, klog.Background()), nodeagent.Options{
		Discovery:   cfg.discovery(),
		FakeDevices: cfg.Profile != "",
		Publish:     nodeagent.PublishOptions{ChipModes: cfg.ChipModes},
		Plugin: nodeagent.PluginOptions{RegistrarDir: cfg.RegistrarDir, PluginDir: cfg.PluginDir, StateDir: cfg.StateDir,
			PodUID: cfg.PodUID},
		CDI:        nodeagent.CDIOptions{Dir: cfg.CDIDir, DeviceMetadata: cfg.DeviceMetadata},
		KubeClient: client,

		Metrics: nodeagent.MetricsOptions{Chips: cfg.ChipMetrics, ChipInterval: cfg.ChipMetricsInterval, Addr: metricsAddr(cfg),
			OnServing: func(a net.Addr) {
				if err := os.WriteFile(cfg.MetricsAddrFile, []byte(a.String()), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "child agent:", err)
				}
			}},
		Health: nodeagent.HealthOptions{Interval: cfg.HealthInterval, Addr: healthAddr(cfg), LibraryHangLimit: cfg.LibraryHangLimit,
			OnServing: func(a net.Addr) {
				if err := os.WriteFile(cfg.HealthAddrFile, []byte(a.String()), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "child agent:", err)
				}
			}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child agent:", err)
		return 1
	}
	return 0
}

// metricsAddr is the child's --metrics-addr: a free loopback port when
// the parent wants to scrape it.
func metricsAddr(cfg agentConfig) string {
	if cfg.MetricsAddrFile == "" {
		return ""
	}
	return "127.0.0.1:0"
}

// healthAddr is the child's --healthz-addr: a free loopback port when
// the parent probes it.
func healthAddr(cfg agentConfig) string {
	if cfg.HealthAddrFile == "" {
		return ""
	}
	return "127.0.0.1:0"
}

// heapProfileEnv, set for the child agents, names a file each writes
// its heap profile to when told to stop, before it stops: the state the
// memory benchmark measures (go tool pprof -sample_index=inuse_space).
const heapProfileEnv = "ACCEL_DRA_AGENT_HEAP_PROFILE"

// heapProfileAtStop returns a context that ends after ctx does and the
// heap profile is written to path.
func heapProfileAtStop(ctx context.Context, path string) context.Context {
	agentCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer cancel()
		<-ctx.Done()
		goruntime.GC()
		f, err := os.Create(path)
		if err == nil {
			err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child agent: writing the heap profile:", err)
		}
	}()
	return agentCtx
}

// reportPublished creates cfg.PublishedFile once client holds as many
// ResourceSlices as the node publishes with cfg's profile and chip modes.
func reportPublished(ctx context.Context, cfg agentConfig, client *fake.Clientset) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child agent: waiting for the slices to be published:", err)
	}
	want, err := nodeSlices(ctx, cfg)
	if err != nil {
		fail(err)
		return
	}
	for ctx.Err() == nil {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == want {
			if err := os.WriteFile(cfg.PublishedFile, nil, 0o644); err != nil {
				fail(err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nodeSlices is how many ResourceSlices the node publishes with cfg's
// profile (or chips read through its libraries) and chip modes.
func nodeSlices(ctx context.Context, cfg agentConfig) (int, error) {
	var inv inventory.Inventory
	if cfg.Profile != "" {
		p, err := profile.Load(registry, cfg.Profile)
		if err != nil {
			return 0, err
		}
		if inv, err = profilenode.New(registry, nodeName, p).Discover(ctx); err != nil {
			return 0, err
		}
	} else {
		// The node's chips as the agent reads them (the same libraries,
		// loaded once per process).
		var err error
		if inv, err = source.Discover(ctx, cfg.discovery()); err != nil {
			return 0, err
		}
	}
	policy, err := partitions.ParsePolicy(registry, cfg.ChipModes)
	if err != nil {
		return 0, err
	}
	want := 0
	for _, r := range resourceslices.DriverResourcesFor(registry, nodeName, inv, resourceslices.Options{Policy: policy}) {
		want += len(r.Pools[nodeName].Slices)
	}
	return want, nil
}

// agent is a node agent in a child process and the kubelet's side of it:
// the directories it keeps its state in survive its restarts.
type agent struct {
	t   testing.TB
	cfg agentConfig
	// inv is the simulated node's chips, vendors their vendors.
	inv     inventory.Inventory
	vendors []inventory.Vendor
	log     *os.File // the child's stderr, shown when the test fails
	starts  int

	// surged: another agent serves on the same directories (surge), so
	// start leaves their sockets.
	surged bool
	// env is added to the child's environment.
	env []string
	// argv, when set, is the command the agent runs as instead of this
	// test binary (a real binary: kubelet_bench_test.go), talking to api
	// rather than to a fake API server of its own; drivers, when set,
	// are its driver names instead of those of the node's vendors, and
	// slices how many ResourceSlices api holds once it has published.
	argv    []string
	api     *fakeAPIServer
	drivers []string
	slices  int

	cmd     *exec.Cmd
	exited  chan error
	conns   []*grpc.ClientConn
	kubelet map[string]drapb.DRAPluginClient // by driver name
}

// newAgent prepares the directories of a simulated node of profile; start
// runs the agent.
func newAgent(t testing.TB, profileName, chipModes string) *agent {
	t.Helper()
	return newAgentOf(t, simulatedNode(t, profileName), agentConfig{Profile: profileName, ChipModes: chipModes})
}

// newAgentOf prepares the directories of an agent serving inv as cfg
// says; a Root left empty is a new directory.
func newAgentOf(t testing.TB, inv inventory.Inventory, cfg agentConfig) *agent {
	t.Helper()
	sockets, err := os.MkdirTemp("", "adra-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	dir := t.TempDir()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(dir, "root")
	}
	cfg.CDIDir, cfg.StateDir, cfg.ClaimsDir = filepath.Join(dir, "cdi"), filepath.Join(dir, "state"), filepath.Join(dir, "claims")
	cfg.RegistrarDir, cfg.PluginDir = filepath.Join(sockets, "reg"), filepath.Join(sockets, "plugins")
	cfg.PublishedFile = filepath.Join(dir, "published")
	a := &agent{t: t, inv: inv, vendors: inv.Vendors(), cfg: cfg}
	require.NoError(t, os.MkdirAll(a.cfg.ClaimsDir, 0o755))
	a.log, err = os.Create(filepath.Join(dir, "agent.log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			out, _ := os.ReadFile(a.log.Name())
			t.Logf("agent log:\n%s", out)
		}
		a.log.Close()
	})
	return a
}

// surge is a second agent on a's node, as a DaemonSet's rolling update
// with maxSurge starts it beside the running one: the same directories,
// its own pod UID and log. a must be a rolling-update pod too (PodUID).
func (a *agent) surge(podUID types.UID) *agent {
	t := a.t
	t.Helper()
	require.NotEmpty(t, a.cfg.PodUID, "both pods of a rolling update have a pod UID")
	b := &agent{t: t, inv: a.inv, vendors: a.vendors, cfg: a.cfg, surged: true, env: a.env}
	b.cfg.PodUID = podUID
	b.cfg.PublishedFile = a.cfg.PublishedFile + "-" + string(podUID)
	var err error
	b.log, err = os.Create(a.log.Name() + "-" + string(podUID))
	require.NoError(t, err)
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			out, _ := os.ReadFile(b.log.Name())
			t.Logf("log of agent %s:\n%s", podUID, out)
		}
		b.log.Close()
	})
	return b
}

// start runs the agent with these failpoints armed (failpoint.EnvVar
// syntax, "" for none) and registers its drivers as the kubelet does.
func (a *agent) start(failpoints string) {
	a.t.Helper()
	a.launch(failpoints)
	a.register()
}

// launch runs the agent process with these failpoints armed.
func (a *agent) launch(failpoints string) {
	t := a.t
	t.Helper()
	require.Nil(t, a.cmd, "the agent is already running")
	if !a.surged {
		// A killed agent leaves its sockets; the kubelet would find them too,
		// but connecting to a dead one only slows the test down.
		require.NoError(t, os.RemoveAll(a.cfg.RegistrarDir))
		require.NoError(t, os.RemoveAll(a.cfg.PluginDir))
	}
	require.NoError(t, os.RemoveAll(a.cfg.PublishedFile))
	if a.cfg.HealthAddrFile != "" {
		// The last run's address is no longer served.
		require.NoError(t, os.RemoveAll(a.cfg.HealthAddrFile))
	}
	raw, err := json.Marshal(a.cfg)
	require.NoError(t, err)
	a.starts++
	fmt.Fprintf(a.log, "=== start %d, failpoints %q\n", a.starts, failpoints)
	if a.argv != nil {
		a.cmd = exec.Command(a.argv[0], a.argv[1:]...) //nolint:gosec // the binaries the benchmark built
		a.cmd.Env = append(os.Environ(), a.env...)
	} else {
		a.cmd = exec.Command(agentBinary(t), "-test.run=^$")
		a.cmd.Env = append(append(os.Environ(), agentEnv+"="+string(raw), failpoint.EnvVar+"="+failpoints), a.env...)
	}
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	require.NoError(t, a.cmd.Start())
	a.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan<- error) { exited <- cmd.Wait() }(a.cmd, a.exited)
}

// registrarSocket is the registration socket of the agent's driver name.
func (a *agent) registrarSocket(name string) string {
	if a.cfg.PodUID != "" {
		return filepath.Join(a.cfg.RegistrarDir, kubeletplugin.RollingUpdateRegistrarSocketFile(a.cfg.RegistrarDir, name, a.cfg.PodUID))
	}
	return filepath.Join(a.cfg.RegistrarDir, name+"-reg.sock")
}

// register registers the launched agent's drivers as the kubelet does.
func (a *agent) register() {
	t := a.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.kubelet = map[string]drapb.DRAPluginClient{}
	names := a.drivers
	for _, v := range a.vendors {
		if a.drivers == nil {
			names = append(names, registry.DriverFor(v))
		}
	}
	for _, name := range names {
		reg := a.dial(a.registrarSocket(name))
		info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
		require.NoError(t, err, "%s registers", name)
		_, err = registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
		require.NoError(t, err)
		a.kubelet[name] = drapb.NewDRAPluginClient(a.dial(info.Endpoint))
	}
}

// waitPublished waits until the running agent's fake API server holds
// all of the node's ResourceSlices.
func (a *agent) waitPublished() {
	a.t.Helper()
	if a.api != nil {
		a.api.waitSlices(a.t, a.slices)
		return
	}
	require.Eventually(a.t, func() bool {
		_, err := os.Stat(a.cfg.PublishedFile)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the node agent publishes its ResourceSlices")
}

// dial connects to a unix socket, retrying fast until it is served.
// MinConnectTimeout must be set with the fast backoff: ConnectParams
// leaves it zero otherwise, and gRPC then gives each connection attempt
// only the backoff delay (10 ms at first) to receive the server's
// preface, closing it after that ("error reading server preface: use of
// closed network connection"): under load a just-started agent answered
// too late and a call failed Unavailable although the agent was up.
// 20 s is gRPC's own default.
func (a *agent) dial(path string) *grpc.ClientConn {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.5, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: 20 * time.Second,
		}))
	require.NoError(a.t, err)
	a.conns = append(a.conns, conn)
	return conn
}

func (a *agent) closeConns() {
	for _, c := range a.conns {
		c.Close()
	}
	a.conns, a.kubelet = nil, nil
}

// wait waits for the agent process to end and returns how.
func (a *agent) wait() error {
	a.t.Helper()
	require.NotNil(a.t, a.cmd, "the agent is not running")
	defer func() { a.cmd = nil; a.closeConns() }()
	select {
	case err := <-a.exited:
		return err
	case <-time.After(2 * time.Minute):
		_ = a.cmd.Process.Kill()
		a.t.Fatal("the agent did not exit")
		return nil
	}
}

// alive reports whether the agent is still running after up to within:
// false as soon as it exits (wait still gets how).
func (a *agent) alive(within time.Duration) bool {
	select {
	case err := <-a.exited:
		a.exited <- err // for wait; the channel has room for it
		return false
	case <-time.After(within):
		return true
	}
}

// waitKilled asserts the agent ended by SIGKILL (a failpoint).
func (a *agent) waitKilled() {
	a.t.Helper()
	err := a.wait()
	var exit *exec.ExitError
	require.ErrorAs(a.t, err, &exit, "the agent must die at the failpoint")
	ws := exit.Sys().(syscall.WaitStatus)
	require.True(a.t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the agent must die by SIGKILL, not %v", err)
}

// stop ends the agent with SIGTERM, as the kubelet does, and asserts a
// clean exit.
func (a *agent) stop() {
	a.t.Helper()
	require.NoError(a.t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(a.t, a.wait(), "SIGTERM stops the agent cleanly")
}

// kill ends a running agent, if any, for cleanup.
func (a *agent) kill() {
	if a.cmd != nil {
		_ = a.cmd.Process.Kill()
		<-a.exited //nolint:errcheck // killed: its exit status says only that
		a.cmd = nil
	}
	a.closeConns()
}

// addClaim makes a claim known to the child's fake API server.
func (a *agent) addClaim(c *resourceapi.ResourceClaim) {
	a.t.Helper()
	if a.api != nil {
		a.api.addClaim(a.t, c)
		return
	}
	raw, err := json.Marshal(c)
	require.NoError(a.t, err)
	require.NoError(a.t, os.WriteFile(claimFile(a.cfg.ClaimsDir, c.Namespace, c.Name), raw, 0o644))
}

// prepare calls NodePrepareResources of one driver; an error is the
// call's (the agent died), per-claim errors are in the responses.
func (a *agent) prepare(driverName string, claims ...*resourceapi.ResourceClaim) (map[string]*drapb.NodePrepareResourceResponse, error) {
	resp, err := a.kubelet[driverName].NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claims...)})
	if err != nil {
		return nil, err
	}
	return resp.Claims, nil
}

// unprepare calls NodeUnprepareResources of one driver, like prepare.
func (a *agent) unprepare(driverName string, claims ...*resourceapi.ResourceClaim) (map[string]*drapb.NodeUnprepareResourceResponse, error) {
	resp, err := a.kubelet[driverName].NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(claims...)})
	if err != nil {
		return nil, err
	}
	return resp.Claims, nil
}

// nodeState is what the agent left on the node for one driver.
type nodeState struct {
	// checkpoint lists the prepared claims and their devices.
	checkpoint checkpoint.Data
	// specs are the claims with a CDI spec of the driver's vendor.
	specs []types.UID
	// partitions are those on the chips, in the fake tool's state (or
	// the mock libcndev's).
	partitions []vendors.Instance
}

func (a *agent) state(v inventory.Vendor) nodeState {
	a.t.Helper()
	dir := filepath.Join(a.cfg.StateDir, registry.DriverFor(v))
	data, err := checkpoint.New(dir, driver.CheckpointFile).Load()
	require.NoError(a.t, err)
	fake := &profilenode.PartitionTool{StatePath: filepath.Join(dir, profilenode.PartitionStateFile)}
	insts, err := fake.Instances()
	require.NoError(a.t, err)
	if v == cambricon.Vendor && a.cfg.Libraries[cambricon.Option] != "" {
		insts = cndevInstances(a.t) // made through the mock libcndev
	}
	if v == ascend.Vendor && a.cfg.Libraries[ascend.Option] != "" {
		insts = dcmiInstances(a.t) // made through the mock libdcmi
	}
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: a.cfg.CDIDir})
	require.NoError(a.t, err)
	x, _ := registry.Lookup(v)
	specs, err := w.ClaimUIDs(x)
	require.NoError(a.t, err)
	return nodeState{checkpoint: data, specs: specs, partitions: insts}
}

// requireConsistent asserts that the driver of v left nothing without an
// owner: the checkpoint lists exactly want, no other claim has a CDI spec,
// and every partition on the chips is one the checkpoint records.
func (a *agent) requireConsistent(v inventory.Vendor, want []types.UID, msgAndArgs ...any) nodeState {
	a.t.Helper()
	st := a.state(v)
	got := make([]types.UID, 0, len(st.checkpoint.Claims))
	owned := map[[2]int]types.UID{}
	for uid, c := range st.checkpoint.Claims {
		got = append(got, uid)
		for _, d := range c.Devices {
			if d.Partition != nil {
				owned[[2]int{d.Partition.Chip, d.Partition.ID}] = uid
			}
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	want = append([]types.UID{}, want...)
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	msg := fmt.Sprint(msgAndArgs...)
	require.Equal(a.t, want, got, "%s: the checkpoint; %s", v, msg)
	for _, uid := range st.specs {
		require.Contains(a.t, want, uid, "%s: a CDI spec without a prepared claim; %s", v, msg)
	}
	for _, p := range st.partitions {
		_, ok := owned[[2]int{p.Chip, p.ID}]
		require.True(a.t, ok, "%s: partition %s has no owner in the checkpoint; %s", v, p, msg)
	}
	return st
}

// cdiKind is the CDI kind of a vendor's specs.
func cdiKind(v inventory.Vendor) string {
	if v == cambricon.Vendor {
		return cambricon.CDIKind
	}
	return ascend.CDIKind
}

// cdiIDs is the CDI device IDs contract: one ID per device, named after
// the claim UID and the device, in the vendor's kind.
func cdiIDs(v inventory.Vendor, uid types.UID, devices ...string) []string {
	out := make([]string, 0, len(devices))
	for _, d := range devices {
		out = append(out, cdiKind(v)+"="+string(uid)+"-"+d)
	}
	return out
}

// cdiFiles lists every file in the CDI directory.
func (a *agent) cdiFiles() []string {
	a.t.Helper()
	entries, err := os.ReadDir(a.cfg.CDIDir)
	require.NoError(a.t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

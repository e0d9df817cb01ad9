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

// Prepare and memory as the kubelet sees them (docs/benchmarks.md): the
// node agent binary, built as the image builds it, runs as its own
// process on a simulated node, against the fake API server in another
// process (test/fakeapi/cmd/fakeapi-server), and this process is its
// kubelet, calling NodePrepareResources and NodeUnprepareResources over
// the DRA socket. The floor of the prepare's file writes runs in a third
// process, and the floor of the agent's memory is the simplest plugin
// built on the upstream helper (test/bench/minplugin). Nothing here
// asserts on time.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/test/scale"
)

// benchBinEnv names a directory holding the binaries below, built; without
// it the benchmarks build them into _output/bench (go build skips what is
// up to date).
const benchBinEnv = "ACCEL_DRA_BENCH_BIN"

// benchPackages are the binaries the benchmarks run: the node agent and
// the CDI hook it installs from next to itself, the fake API server and
// the minimal plugin.
var benchPackages = []string{"./cmd/accel-dra-kubeletplugin", "./cmd/accel-dra-cdi-hook", "./test/fakeapi/cmd/fakeapi-server", "./test/bench/minplugin"}

var benchBins struct {
	once sync.Once
	dir  string
	err  error
}

// benchBinaries is the directory of the benchmarks' binaries, built once
// per test process as the image builds them (Makefile's static: no cgo,
// -trimpath, -s -w).
func benchBinaries(tb testing.TB) string {
	tb.Helper()
	benchBins.once.Do(func() {
		if dir := os.Getenv(benchBinEnv); dir != "" {
			benchBins.dir = dir
			return
		}
		root, err := filepath.Abs("../..")
		if err != nil {
			benchBins.err = err
			return
		}
		benchBins.dir = filepath.Join(root, "_output", "bench")
		args := append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", benchBins.dir + "/"}, benchPackages...)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			benchBins.err = fmt.Errorf("building the benchmarks' binaries: %w\n%s", err, out)
		}
	})
	require.NoError(tb, benchBins.err)
	return benchBins.dir
}

// fakeAPIServer is test/fakeapi's fake clientset served over HTTP by a
// process of its own, and a client of it.
type fakeAPIServer struct {
	kubeconfig string
	client     kubernetes.Interface
}

// startFakeAPI runs the fake API server, stopped when tb ends.
func startFakeAPI(tb testing.TB) *fakeAPIServer {
	tb.Helper()
	dir := tb.TempDir()
	s := &fakeAPIServer{kubeconfig: filepath.Join(dir, "kubeconfig")}
	log, err := os.Create(filepath.Join(dir, "fakeapi.log"))
	require.NoError(tb, err)
	cmd := exec.Command(filepath.Join(benchBinaries(tb), "fakeapi-server"), "-node", nodeName, "-kubeconfig", s.kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if tb.Failed() {
			out, _ := os.ReadFile(log.Name())
			tb.Logf("fake API server log:\n%s", out)
		}
		log.Close()
	})
	require.Eventually(tb, func() bool {
		_, err := os.Stat(s.kubeconfig)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the fake API server writes its kubeconfig once it listens")
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	require.NoError(tb, err)
	s.client, err = kubernetes.NewForConfig(cfg)
	require.NoError(tb, err)
	return s
}

// waitSlices waits until the server holds want ResourceSlices.
func (s *fakeAPIServer) waitSlices(tb testing.TB, want int) {
	tb.Helper()
	require.Eventually(tb, func() bool {
		list, err := s.client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == want
	}, time.Minute, 10*time.Millisecond, "the plugin publishes its %d ResourceSlices", want)
}

func (s *fakeAPIServer) addClaim(tb testing.TB, c *resourceapi.ResourceClaim) {
	tb.Helper()
	_, err := s.client.ResourceV1().ResourceClaims(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{})
	require.NoError(tb, err)
}

// realAgent is the node agent binary serving bn's simulated node (chips
// Partitioned, the most devices a node publishes) against api, with env
// added to its environment (GOGC, GOMEMLIMIT), logging at the chart's
// default verbosity; start runs it.
func realAgent(tb testing.TB, bn benchNode, api *fakeAPIServer, env []string) *agent {
	tb.Helper()
	return realAgentIn(tb, bn, partitions.ModePartitioned, api, env)
}

// realAgentIn is realAgent with the chips in mode.
func realAgentIn(tb testing.TB, bn benchNode, mode partitions.Mode, api *fakeAPIServer, env []string) *agent {
	tb.Helper()
	a := newAgent(tb, bn.profile, string(mode))
	a.api, a.env = api, env
	var err error
	a.slices, err = nodeSlices(context.Background(), a.cfg)
	require.NoError(tb, err)
	a.argv = []string{filepath.Join(benchBinaries(tb), "accel-dra-kubeletplugin"),
		"--kubeconfig=" + api.kubeconfig, "--node-name=" + nodeName,
		"--root=" + a.cfg.Root, "--profile=" + bn.profile, "--fake-devices", "--chip-modes=" + a.cfg.ChipModes,
		"--registrar-dir=" + a.cfg.RegistrarDir, "--plugin-dir=" + a.cfg.PluginDir,
		"--state-dir=" + a.cfg.StateDir, "--cdi-dir=" + a.cfg.CDIDir,
		// No kubelet PodResources socket here: the chip metrics leave
		// out the pod labels instead of retrying it.
		"--pod-resources-socket=",
		fmt.Sprintf("-v=%d", benchLogVerbosity)}
	return a
}

// minDriver is the minimal plugin's driver name (its default).
const minDriver = "min.accel-dra.dev"

// minPlugin is test/bench/minplugin against api: one static device, no
// vendor code; start runs it.
func minPlugin(tb testing.TB, api *fakeAPIServer) *agent {
	tb.Helper()
	a := newAgentOf(tb, inventory.Inventory{}, agentConfig{})
	a.api, a.drivers, a.slices = api, []string{minDriver}, 1
	a.argv = []string{filepath.Join(benchBinaries(tb), "minplugin"), "-kubeconfig=" + api.kubeconfig,
		"-node-name=" + nodeName, "-driver-name=" + minDriver,
		"-registrar-dir=" + a.cfg.RegistrarDir, "-plugin-dir=" + a.cfg.PluginDir}
	return a
}

// benchClaim is a claim of these devices of driverName, allocated as the
// scheduler allocates them.
func benchClaim(name, driverName string, devices []string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
	}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "accel", Driver: driverName, Pool: nodeName, Device: d})
	}
	return c
}

// kubeletPrepare prepares c through driverName's socket, as the kubelet
// does, and fails on any error.
func (a *agent) kubeletPrepare(driverName string, c *resourceapi.ResourceClaim) {
	a.t.Helper()
	resp, err := a.prepare(driverName, c)
	require.NoError(a.t, err)
	require.Contains(a.t, resp, string(c.UID))
	require.Empty(a.t, resp[string(c.UID)].Error, "preparing %s", c.Name)
}

func (a *agent) kubeletUnprepare(driverName string, c *resourceapi.ResourceClaim) {
	a.t.Helper()
	resp, err := a.unprepare(driverName, c)
	require.NoError(a.t, err)
	require.Contains(a.t, resp, string(c.UID))
	require.Empty(a.t, resp[string(c.UID)].Error, "unpreparing %s", c.Name)
}

// floorEnv, set to the path of a floorConfig, makes the test binary the
// floor's writer (TestMain runs childFloor instead of the tests).
const floorEnv = "ACCEL_DRA_TEST_FLOOR"

// floorConfig is what the parent tells the floor's writer.
type floorConfig struct {
	Root  string
	Files []floorFile
}

// floorFile is preparedFile, exported for JSON.
type floorFile struct {
	Kind, Rel string
	Data      []byte
	Durable   bool
	NewDirs   []string
}

// childFloor writes the floor's files for each "write" line on stdin and
// removes them for each "clean" line, answering each with "ok" or the
// error: the floor in a process of its own, as the agent is, timed by
// the parent from its request to the answer, as a prepare is.
func childFloor(path string) int {
	raw, err := os.ReadFile(path)
	var cfg floorConfig
	if err == nil {
		err = json.Unmarshal(raw, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 2
	}
	files := make([]preparedFile, 0, len(cfg.Files))
	for _, f := range cfg.Files {
		files = append(files, preparedFile{kind: f.Kind, rel: f.Rel, data: f.Data, durable: f.Durable, newDirs: f.NewDirs})
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "write":
			err = writeFloor(cfg.Root, files)
		case "clean":
			err = cleanFloor(cfg.Root, files)
		default:
			err = fmt.Errorf("unknown request %q", in.Text())
		}
		answer := "ok"
		if err != nil {
			answer = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Fprintln(os.Stdout, answer)
	}
	return 0
}

// floorProcess is the floor's writer, a child process.
type floorProcess struct {
	t   testing.TB
	in  io.WriteCloser
	out *bufio.Reader
}

// startFloor runs the floor's writer of files (from preparedFilesOf) in a
// new directory, stopped when tb ends.
func startFloor(tb testing.TB, files []preparedFile) *floorProcess {
	tb.Helper()
	dir := tb.TempDir()
	cfg := floorConfig{Root: filepath.Join(dir, "root")}
	for _, f := range files {
		cfg.Files = append(cfg.Files, floorFile{Kind: f.kind, Rel: f.rel, Data: f.data, Durable: f.durable, NewDirs: f.newDirs})
	}
	raw, err := json.Marshal(cfg)
	require.NoError(tb, err)
	path := filepath.Join(dir, "floor.json")
	require.NoError(tb, os.WriteFile(path, raw, 0o644))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floorEnv+"="+path)
	cmd.Stderr = os.Stderr
	f := &floorProcess{t: tb}
	f.in, err = cmd.StdinPipe()
	require.NoError(tb, err)
	out, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	f.out = bufio.NewReader(out)
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		f.in.Close() // the child ends at the end of its input
		_ = cmd.Wait()
	})
	return f
}

func (f *floorProcess) do(request string) {
	f.t.Helper()
	_, err := fmt.Fprintln(f.in, request)
	require.NoError(f.t, err)
	answer, err := f.out.ReadString('\n')
	require.NoError(f.t, err)
	require.Equal(f.t, "ok\n", answer, "the floor's %s", request)
}

// round times writing the floor's files, then removes them, not timed.
func (f *floorProcess) round() time.Duration {
	start := time.Now()
	f.do("write")
	took := time.Since(start)
	f.do("clean")
	return took
}

// kubeletBench is one case of BenchmarkPrepare: a fake API server, the
// node agent, one claim of some chips and the floor of its files, each
// in its own process.
type kubeletBench struct {
	agent  *agent
	driver string
	claim  *resourceapi.ResourceClaim
	files  []preparedFile
	floor  *floorProcess
}

// startKubeletBench starts a case: the agent of bn with env added to its
// environment, registered and its slices published, a claim of chips of
// its chips, and the floor's writer of the files that claim's prepare
// writes.
func startKubeletBench(tb testing.TB, bn benchNode, chips int, env []string) *kubeletBench {
	tb.Helper()
	a := realAgent(tb, bn, startFakeAPI(tb), env)
	k := &kubeletBench{agent: a, driver: registry.DriverFor(bn.vendor)}
	k.claim = benchClaim("bench", k.driver, chipNames(bn.prefix, chips))
	a.addClaim(k.claim)
	a.start("")
	a.waitPublished()
	roots := map[string]string{"cdi": a.cfg.CDIDir, "state": a.cfg.StateDir, "plugin": a.cfg.PluginDir}
	k.files = preparedFilesOf(tb, roots, func() { a.kubeletPrepare(k.driver, k.claim) }, func() { a.kubeletUnprepare(k.driver, k.claim) })
	k.floor = startFloor(tb, k.files)
	return k
}

// round is one iteration: the claim prepared (timed from the request to
// the answer, as the kubelet waits), unprepared, and the floor.
func (k *kubeletBench) round() (prep, floor time.Duration) {
	start := time.Now()
	k.agent.kubeletPrepare(k.driver, k.claim)
	prep = time.Since(start)
	k.agent.kubeletUnprepare(k.driver, k.claim)
	return prep, k.floor.round()
}

// roundIntervalEnv sets the time from one round's start to the next's
// (a Go duration, default defaultRoundInterval).
const roundIntervalEnv = "ACCEL_DRA_BENCH_ROUND_INTERVAL"

// defaultRoundInterval paces the rounds below the agent's API request
// rate: a round makes 4 requests (the helper's Get of the claim, the
// status writer's Get and apply after the prepare, its Get after the
// unprepare), and the agent's client allows 50 a second after a burst of
// 100 (cmd/accel-dra-kubeletplugin), so rounds back to back (25–60 a
// second) would measure client-side throttling after the first 25, not
// the prepare. 10 claims a second on one node is still more than pods
// start there.
const defaultRoundInterval = 100 * time.Millisecond

func roundInterval(tb testing.TB) time.Duration {
	v := os.Getenv(roundIntervalEnv)
	if v == "" {
		return defaultRoundInterval
	}
	d, err := time.ParseDuration(v)
	require.NoError(tb, err, "%s", roundIntervalEnv)
	return d
}

// agentGCEnv lists the Go runtime settings BenchmarkPrepare runs the agent
// with, separated by ";", each a comma-separated list of variables, e.g.
// "GOGC=100;GOGC=200;GOGC=100,GOMEMLIMIT=40MiB" (any variable works,
// the agent's flags' too: ACCEL_DRA_DEVICE_METADATA=false). Unset: the
// agent's defaults only.
const agentGCEnv = "ACCEL_DRA_BENCH_AGENT_GC"

// agentGCSetting is one setting of agentGCEnv: the agent's added
// environment and the sub-benchmark name's suffix ("" for the defaults).
type agentGCSetting struct {
	env    []string
	suffix string
}

// agentGCSettings are the settings of agentGCEnv; unset, the defaults.
func agentGCSettings() []agentGCSetting {
	v := os.Getenv(agentGCEnv)
	if v == "" {
		return []agentGCSetting{{}}
	}
	var out []agentGCSetting
	for _, gc := range strings.Split(v, ";") {
		out = append(out, agentGCSetting{env: strings.Split(gc, ","), suffix: "/" + gc})
	}
	return out
}

// BenchmarkPrepare measures NodePrepareResources of 1-, 8- and 16-chip
// claims as the kubelet sees it: the node agent binary in its own
// process (with the device metadata file, its default), the fake API
// server in another, and this process calling it over the DRA socket. In
// the same iteration it measures the floor: a child process writing every
// file that prepare wrote, with the same bytes, directories and sync
// discipline (writeFloor), timed from the request to its answer. The
// latency metrics are per prepare and per floor; a round starts every
// roundInterval (ns/op is at least that); load1 is the load
// average when the case started; the agent's RSS and anonymous RSS are
// read after the rounds, for the trade of the Go runtime settings
// (agentGCEnv) against memory.
func BenchmarkPrepare(b *testing.B) {
	for _, gc := range agentGCSettings() {
		for _, bn := range benchNodes {
			for _, chips := range []int{1, 8, 16} {
				b.Run(fmt.Sprintf("%s/%d-chips%s", bn.vendor, chips, gc.suffix), func(b *testing.B) {
					load := loadAverage(b)
					k := startKubeletBench(b, bn, chips, gc.env)
					interval := roundInterval(b)
					var prep, floor []time.Duration
					next := time.Now()
					for b.Loop() {
						time.Sleep(time.Until(next))
						next = time.Now().Add(interval)
						p, f := k.round()
						prep, floor = append(prep, p), append(floor, f)
					}
					reportLatency(b, "prepare", prep)
					reportLatency(b, "floor", floor)
					for _, p := range []float64{50, 99, 99.9} {
						b.ReportMetric(float64(percentile(prep, p))/float64(percentile(floor, p)), fmt.Sprintf("prepare/floor-p%g", p))
					}
					b.ReportMetric(load, "load1")
					b.ReportMetric(float64(len(k.files)), "files")
					pid := k.agent.cmd.Process.Pid
					b.ReportMetric(procStatusMiB(b, pid, "VmRSS"), "agent-RSS-MiB")
					b.ReportMetric(procStatusMiB(b, pid, "RssAnon"), "agent-anon-MiB")
					b.ReportMetric(procStatusMiB(b, pid, "VmHWM"), "agent-peak-RSS-MiB")
				})
			}
		}
	}
}

// memory is a process's resident memory in MiB: all of it, its own
// (anonymous: heap, stacks, runtime) and its proportional share (PSS:
// pages shared with other processes, such as a binary's, divided among
// them).
type memory struct{ rss, anon, pss float64 }

func readMemory(tb testing.TB, pid int) memory {
	tb.Helper()
	pss, err := scale.ProcSmapsRollupMiB(pid, "Pss")
	require.NoError(tb, err)
	return memory{rss: procStatusMiB(tb, pid, "VmRSS"), anon: procStatusMiB(tb, pid, "RssAnon"), pss: pss}
}

// pluginMemory runs a (the node agent or the minimal plugin), once its
// slices are published reads its memory (idle), prepares the claims, one
// NodePrepareResources call each as for that many pods, and reads it
// again (loaded).
func pluginMemory(tb testing.TB, a *agent, driverName string, claims []*resourceapi.ResourceClaim) (idle, loaded memory) {
	tb.Helper()
	for _, c := range claims {
		a.addClaim(c)
	}
	a.start("")
	a.waitPublished()
	pid := a.cmd.Process.Pid
	idle = readMemory(tb, pid)
	for _, c := range claims {
		a.kubeletPrepare(driverName, c)
	}
	loaded = readMemory(tb, pid)
	a.stop()
	return idle, loaded
}

// chipClaims are n claims pod-0 … pod-<n-1> of one device each of
// driverName: device(i).
func chipClaims(driverName string, n int, device func(int) string) []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, 0, n)
	for i := range n {
		out = append(out, benchClaim(fmt.Sprintf("pod-%d", i), driverName, []string{device(i)}))
	}
	return out
}

// agentVsFloorMemory measures the node agent binary on a 16-chip node of
// bn, chips in mode, with claims one-chip claims, and the minimal plugin with as many
// claims of its one device.
func agentVsFloorMemory(tb testing.TB, bn benchNode, mode partitions.Mode, claims int, env []string) (agentIdle, agentLoaded, floorIdle, floorLoaded memory) {
	tb.Helper()
	driverName := registry.DriverFor(bn.vendor)
	agentIdle, agentLoaded = pluginMemory(tb, realAgentIn(tb, bn, mode, startFakeAPI(tb), env), driverName,
		chipClaims(driverName, claims, func(i int) string { return chipNames(bn.prefix, claims)[i] }))
	floorIdle, floorLoaded = pluginMemory(tb, minPlugin(tb, startFakeAPI(tb)), minDriver,
		chipClaims(minDriver, claims, func(int) string { return "dev-0" }))
	return agentIdle, agentLoaded, floorIdle, floorLoaded
}

// BenchmarkAgentMemory reports the resident memory of the node agent
// binary serving a 16-chip node of each vendor, chips Whole (the
// default: 16 devices) and Partitioned (chip and 6 slots each: 112), in a
// process of its own, with its slices published and registered (idle),
// then with 16 prepared claims of one chip each; and the same of the
// minimal plugin on the upstream helper (test/bench/minplugin), the
// floor, with its ratio: the agent's anonymous RSS over the floor's. The
// agent runs once per Go runtime setting of agentGCEnv, the floor with
// the defaults.
func BenchmarkAgentMemory(b *testing.B) {
	for _, gc := range agentGCSettings() {
		for _, bn := range benchNodes {
			for _, mode := range []partitions.Mode{partitions.ModeWhole, partitions.ModePartitioned} {
				agentMemoryCase(b, bn, mode, gc)
			}
		}
	}
}

// agentMemoryCase is one sub-benchmark of BenchmarkAgentMemory: bn's
// agent in mode with the setting gc, next to the floor.
func agentMemoryCase(b *testing.B, bn benchNode, mode partitions.Mode, gc agentGCSetting) {
	b.Run(string(bn.vendor)+"/"+string(mode)+gc.suffix, func(b *testing.B) {
		ai, al, fi, fl := agentVsFloorMemory(b, bn, mode, 16, gc.env)
		for b.Loop() {
			// The measurement is the children's; nothing to repeat.
		}
		for _, m := range []struct {
			name string
			m    memory
		}{{"idle", ai}, {"claims", al}, {"floor-idle", fi}, {"floor-claims", fl}} {
			b.ReportMetric(m.m.rss, m.name+"-RSS-MiB")
			b.ReportMetric(m.m.anon, m.name+"-anon-MiB")
			b.ReportMetric(m.m.pss, m.name+"-PSS-MiB")
		}
		b.ReportMetric(ai.anon/fi.anon, "idle-anon/floor")
		b.ReportMetric(al.anon/fl.anon, "claims-anon/floor")
	})
}

// TestKubeletBenchSetups runs the setups of BenchmarkPrepare and
// BenchmarkAgentMemory once, small, so that make test catches a broken
// benchmark: the binaries, the fake API server in its own process, the
// agent's prepares over its socket, the floor's writer, the minimal
// plugin, and the memory readings.
func TestKubeletBenchSetups(t *testing.T) {
	t.Run("prepare", func(t *testing.T) {
		k := startKubeletBench(t, benchNodes[1], 2, []string{"GOGC=200"})
		kinds := map[string]bool{}
		for _, f := range k.files {
			kinds[f.kind] = true
		}
		require.Equal(t, map[string]bool{"cdi": true, "checkpoint": true, "metadata": true, "metadata-cdi": true}, kinds,
			"the agent binary writes the device metadata by default")
		for range 5 {
			prep, floor := k.round()
			require.Positive(t, prep)
			require.Positive(t, floor)
		}
		k.agent.requireConsistent(benchNodes[1].vendor, nil, "every round unprepared its claim")
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", k.agent.cmd.Process.Pid))
		require.NoError(t, err)
		require.Contains(t, strings.Split(string(env), "\x00"), "GOGC=200", "the agent runs with the setting")
	})
	t.Run("memory", func(t *testing.T) {
		ai, al, fi, fl := agentVsFloorMemory(t, benchNodes[0], partitions.ModePartitioned, 2, nil)
		for name, m := range map[string]memory{"agent idle": ai, "agent with claims": al, "floor idle": fi, "floor with claims": fl} {
			require.Positive(t, m.anon, name)
			require.GreaterOrEqual(t, m.rss, m.anon, "%s: anonymous pages are part of RSS", name)
			require.GreaterOrEqual(t, m.rss, m.pss, "%s: PSS counts shared pages in part", name)
		}
	})
}

// procStatusMiB reads a kB field of /proc/<pid>/status in MiB.
func procStatusMiB(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	v, err := scale.ProcStatusMiB(pid, field)
	require.NoError(tb, err)
	return v
}

// addChipClaims adds n claims pod-0 … pod-<n-1> of one whole chip each
// (prefix-0, prefix-1, …) to the agent's fake API server.
func (a *agent) addChipClaims(driverName, prefix string, n int) []*resourceapi.ResourceClaim {
	objs := chipClaims(driverName, n, func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) })
	for _, c := range objs {
		a.addClaim(c)
	}
	return objs
}

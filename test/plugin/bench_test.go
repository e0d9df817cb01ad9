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

// Benchmarks of the moments users wait on (docs/benchmarks.md): a pod's
// prepare next to the floor of its file writes, a node's slice publication
// through the upstream resourceslice controller, and the node agent's
// memory. They live here to reuse the tier-3 harness (harness_test.go) and
// the fake API server's behaviours (fakeclient_test.go). Nothing here
// asserts on time; TestBenchmarkSetups runs each setup once, small.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/fakeapi"
)

// benchNode is a synthetic 16-chip node of one vendor (testdata).
type benchNode struct {
	vendor  inventory.Vendor
	profile string
	prefix  string
}

var benchNodes = []benchNode{
	{ascend.Vendor, "testdata/16-npu-910b3.yaml", "npu"},
	{cambricon.Vendor, "testdata/16-mlu370.yaml", "mlu"},
}

// BenchmarkPrepareInProcess measures, in this process, NodePrepareResources
// of 1-, 8- and 16-chip claims over the plugin's unix socket, with the device metadata file (as
// the node agent runs by default) and without: the claim fetched from the fake API, config
// decoded, CDI spec written, checkpoint fsync'ed, and, with metadata=true,
// the helper's device metadata file and its CDI spec written and fsync'ed. In the same
// iteration it measures the floor: writing every file that prepare wrote,
// with the same bytes, directories and sync discipline (see
// measureFloor). ns/op is the prepare, unprepare and floor round; the
// latency metrics are per prepare and per floor; load1 is the load
// average when the case started. BenchmarkPrepare (kubelet_bench_test.go)
// measures the real agent binary as the kubelet sees it; this one, with
// the driver, the fake API server and the client in one process, is the
// one runtime/trace can split:
//
// With ACCEL_DRA_PREPARE_TRACE=<dir> each case also writes a runtime/trace
// of its loop to <dir>/<case>.trace and, from it, where the time of the
// median and of the slowest prepares went to <dir>/<case>.txt
// (tracetail_test.go).
func BenchmarkPrepareInProcess(b *testing.B) {
	for _, bn := range benchNodes {
		for _, chips := range []int{1, 8, 16} {
			for _, metadata := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/%d-chips/metadata=%v", bn.vendor, chips, metadata), func(b *testing.B) {
					load := loadAverage(b)
					n := newBenchNode(b, bn, metadata)
					c := n.claim("bench", chipNames(bn.prefix, chips))
					files := n.preparedFiles(c)
					floorRoot := b.TempDir()
					stopTrace := traceCase(b, fmt.Sprintf("%s-%d-chips-metadata=%v", bn.vendor, chips, metadata))
					var prep, floor []time.Duration
					b.ReportAllocs()
					for b.Loop() {
						p, f := prepareRound(b, n, c, files, floorRoot)
						prep, floor = append(prep, p), append(floor, f)
					}
					stopTrace()
					reportLatency(b, "prepare", prep)
					reportLatency(b, "floor", floor)
					for _, p := range []float64{50, 99, 99.9} {
						b.ReportMetric(float64(percentile(prep, p))/float64(percentile(floor, p)), fmt.Sprintf("prepare/floor-p%g", p))
					}
					b.ReportMetric(load, "load1")
					b.ReportMetric(float64(len(files)), "files")
					for _, f := range files {
						b.ReportMetric(float64(len(f.data)), f.kind+"-bytes")
					}
				})
			}
		}
	}
}

// prepareRound is one iteration of BenchmarkPrepare: c prepared (timed,
// and marked as a trace region for tracetail), unprepared, and the floor
// of files written under floorRoot.
func prepareRound(tb testing.TB, n *node, c *resourceapi.ResourceClaim, files []preparedFile, floorRoot string) (prep, floor time.Duration) {
	region := trace.StartRegion(n.ctx, regionBenchPrepare)
	start := time.Now()
	n.mustPrepare(c)
	prep = time.Since(start)
	region.End()
	region = trace.StartRegion(n.ctx, regionBenchOther)
	defer region.End()
	n.unprepare(c)
	// The floor in the same iteration: a disturbance of the machine
	// (another process's fsyncs, CPU) reaches both sides of the ratio
	// alike.
	floor = measureFloor(tb, floorRoot, files)
	// The fake API server records every call; an API server keeps
	// nothing in the agent's heap.
	n.client.ClearActions()
	return prep, floor
}

// benchLogVerbosity is the chart's logVerbosity: the agent logs each
// prepare and unprepare at 2.
const benchLogVerbosity = 2

// newBenchNode is a node of bn with its chips Partitioned (the most
// devices a node publishes, as measured in docs/benchmarks.md), the
// device metadata file written when metadata (the node agent's default,
// --device-metadata), and the plugin logging at the chart's default
// verbosity with klog's text logger, into io.Discard: a test logger would
// keep every line in memory, and a heap that grows with the rounds makes
// each GC longer than the agent's. The driver's background claim status
// writes are answered cheaply (cheapStatusApply).
func newBenchNode(tb testing.TB, bn benchNode, metadata bool) *node {
	tb.Helper()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(benchLogVerbosity), textlogger.Output(io.Discard)))
	n := startNode(tb, nodeOptions{Profile: bn.profile, Vendor: bn.vendor, ChipModes: string(partitions.ModePartitioned), Setup: func(n *node) {
		n.configure = func(cfg *driver.Config) { cfg.DeviceMetadata = metadata }
		n.logger = &logger
	}})
	fakeapi.CheapStatusApply(n.client)
	return n
}

// loadAverage is the 1-minute load average (/proc/loadavg), which
// docs/benchmarks.md states with every run: the fsyncs and the scheduling
// the benchmark measures depend on what else the machine does.
func loadAverage(tb testing.TB) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	require.NoError(tb, err)
	var load float64
	_, err = fmt.Sscan(string(raw), &load)
	require.NoError(tb, err)
	return load
}

// traceCase starts a runtime/trace of the case when
// ACCEL_DRA_PREPARE_TRACE names a directory; the function it returns
// stops it and writes the report of where the prepares' time went.
func traceCase(b *testing.B, name string) func() {
	dir := os.Getenv("ACCEL_DRA_PREPARE_TRACE")
	if dir == "" {
		return func() {}
	}
	require.NoError(b, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name+".trace")
	f, err := os.Create(path)
	require.NoError(b, err)
	require.NoError(b, trace.Start(f), "another trace is running (go test -trace?)")
	return func() {
		trace.Stop()
		require.NoError(b, f.Close())
		f, err := os.Open(path)
		require.NoError(b, err)
		defer f.Close()
		pt, err := readPrepareTrace(f)
		require.NoError(b, err)
		out, err := os.Create(filepath.Join(dir, name+".txt"))
		require.NoError(b, err)
		fmt.Fprintf(out, "%s, load average %.2f when it started (%s)\n", name, loadAverage(b), path)
		bs := pt.breakdowns()
		tailReport(out, bs)
		candidateReport(out, pt, bs)
		require.NoError(b, out.Close())
	}
}

// preparedFile is a file a prepare wrote: where (relative to the node's
// directories' parent), its bytes, and whether it was fsync'ed (with its
// directory after the rename).
type preparedFile struct {
	kind    string
	rel     string
	data    []byte
	durable bool
	// newDirs are the directories the prepare created for it (and
	// unprepare removes), outermost first.
	newDirs []string
}

// preparedFiles prepares c and returns, in the order they were
// written, the files that prepare wrote or replaced under the node's CDI,
// state and plugin directories, then unprepares it. Only the claim's own
// CDI spec is not fsync'ed: the CDI library does not (its directory is a
// tmpfs on real nodes); the checkpoint, the device metadata file and its
// CDI spec are written through a temporary file with fsync, rename and an
// fsync of the directory.
func (n *node) preparedFiles(c *resourceapi.ResourceClaim) []preparedFile {
	n.t.Helper()
	roots := map[string]string{"cdi": n.cdiDir, "state": n.stateDir, "plugin": n.pluginDir}
	return preparedFilesOf(n.t, roots, func() { n.mustPrepare(c) }, func() { n.unprepare(c) })
}

// preparedFilesOf is preparedFiles of any agent: roots are its CDI, state
// and plugin directories, prepare and unprepare do that to one claim.
func preparedFilesOf(t testing.TB, roots map[string]string, prepare, unprepare func()) []preparedFile {
	t.Helper()
	// Once before, so what is compared is the steady state of the
	// benchmark's rounds (the first prepare creates the checkpoint).
	prepare()
	unprepare()
	before := snapshotTree(t, roots)
	prepare()
	after := snapshotTree(t, roots)
	unprepare()
	var out []preparedFile
	for rel, a := range after {
		if a.dir {
			continue
		}
		if b, ok := before[rel]; ok && string(b.data) == string(a.data) {
			continue
		}
		f := preparedFile{rel: rel, data: a.data, durable: true}
		switch {
		case strings.HasPrefix(rel, "cdi/") && strings.Contains(rel, "_metadata_"):
			f.kind = "metadata-cdi" // the helper's: <driver>_metadata_<uid>_<request>.json
		case strings.HasPrefix(rel, "cdi/"):
			f.kind, f.durable = "cdi", false
		case strings.HasPrefix(rel, "state/") && filepath.Base(rel) == driver.CheckpointFile:
			// state/<file> in this process, state/<driver>/<file> in
			// the node agent's.
			f.kind = "checkpoint"
		case strings.HasSuffix(rel, "/metadata.json"):
			f.kind = "metadata"
		default:
			require.Failf(t, "unexpected file", "prepare wrote %s", rel)
		}
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			if _, ok := before[d]; !ok {
				f.newDirs = append([]string{d}, f.newDirs...)
			}
		}
		out = append(out, f)
	}
	// The order the code writes them in (mtimes tick too coarsely to
	// tell): the driver's spec and checkpoint, then the helper's files.
	order := []string{"cdi", "checkpoint", "metadata", "metadata-cdi"}
	slices.SortFunc(out, func(a, b preparedFile) int { return slices.Index(order, a.kind) - slices.Index(order, b.kind) })
	return out
}

type treeEntry struct {
	dir  bool
	data []byte
}

// snapshotTree reads every file and directory under roots, keyed by
// root name and path below it.
func snapshotTree(tb testing.TB, roots map[string]string) map[string]treeEntry {
	tb.Helper()
	out := map[string]treeEntry{}
	for name, root := range roots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			key := filepath.Join(name, rel)
			e := treeEntry{dir: d.IsDir()}
			if d.Type().IsRegular() {
				if e.data, err = os.ReadFile(path); err != nil {
					return err
				}
			}
			out[key] = e
			return nil
		})
		require.NoError(tb, err)
	}
	return out
}

// measureFloor times writing files under root as prepare wrote them
// (writeFloor), then, not timed, removes what unprepare removes
// (cleanFloor), so the next round starts from the same state.
func measureFloor(b testing.TB, root string, files []preparedFile) time.Duration {
	b.Helper()
	start := time.Now()
	require.NoError(b, writeFloor(root, files))
	took := time.Since(start)
	require.NoError(b, cleanFloor(root, files))
	return took
}

// writeFloor writes files under root as prepare wrote them: in the same
// order, each in its directory of the same depth (created when prepare
// created it), through a temporary file and a rename, with the file and
// the directory fsync'ed where prepare fsyncs them.
func writeFloor(root string, files []preparedFile) error {
	for _, f := range files {
		dir := filepath.Join(root, filepath.Dir(f.rel))
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("writing the floor's %s: %w", f.rel, err)
		}
		if err := atomicWrite(dir, filepath.Base(f.rel), f.data, f.durable); err != nil {
			return fmt.Errorf("writing the floor's %s: %w", f.rel, err)
		}
	}
	return nil
}

// cleanFloor removes under root what unprepare removes: every file but
// the checkpoint, which prepare replaces, and the directories prepare
// created.
func cleanFloor(root string, files []preparedFile) error {
	for _, f := range files {
		var err error
		if len(f.newDirs) > 0 {
			err = os.RemoveAll(filepath.Join(root, f.newDirs[0]))
		} else if f.kind != "checkpoint" {
			err = os.Remove(filepath.Join(root, f.rel))
		}
		if err != nil {
			return fmt.Errorf("removing the floor's %s: %w", f.rel, err)
		}
	}
	return nil
}

// atomicWrite replaces dir/name with data through a temporary file,
// fsyncing the file and the directory when durable.
func atomicWrite(dir, name string, data []byte, durable bool) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil && durable {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// percentile is the p-th percentile of d (nearest rank below).
func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func reportLatency(b *testing.B, what string, d []time.Duration) {
	for _, p := range []float64{50, 99, 99.9} {
		b.ReportMetric(float64(percentile(d, p))/1e6, fmt.Sprintf("%s-p%g-ms", what, p))
	}
}

// BenchmarkPluginHeapWith50PreparedClaims reports the Go heap in use by a
// plugin (in the test process) holding 50 prepared claims of 64 chips'
// node (chips Partitioned): the memory the checkpointed state and the
// helper cost.
func BenchmarkPluginHeapWith50PreparedClaims(b *testing.B) {
	n := startNode(b, nodeOptions{Profile: "testdata/64-npu.yaml", Vendor: ascend.Vendor, ChipModes: string(partitions.ModePartitioned)})
	for i := 0; i < 50; i++ {
		n.mustPrepare(n.claim(fmt.Sprintf("c%d", i), []string{fmt.Sprintf("npu-%d", i)}))
	}
	var m runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&m)
	}
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "MiB-heap-inuse")
}

// BenchmarkPublish1000Nodes publishes 1000 nodes × 16 chips (half Ascend,
// half Cambricon) each through its own upstream resourceslice controller,
// started as the kubeletplugin helper starts it, then hands every
// controller the same resources again, as a restarted or re-synced agent
// does. Each node talks to its own fake clientset: the real API server is
// only in the e2e tier, and one fake shared by 1000 watchers deep-copies
// every event to each of them, which would measure the fake.
func BenchmarkPublish1000Nodes(b *testing.B) {
	for _, modes := range publishModes {
		b.Run("modes="+modes, func(b *testing.B) {
			var r publishResult
			for b.Loop() {
				r = publish(b, 1000, modes)
			}
			b.ReportMetric(r.wall.Seconds(), "publish-s")
			b.ReportMetric(float64(r.cpu.Microseconds())/1000/float64(r.nodes), "cpu-ms/node")
			b.ReportMetric(float64(r.slices), "slices")
			b.ReportMetric(float64(r.writes)/float64(r.slices), "writes/slice")
			b.ReportMetric(float64(r.republishWrites), "republish-writes")
		})
	}
}

// publishModes are the chip modes publication is measured in: with
// partitions and Whole (the default).
var publishModes = []string{string(partitions.ModePartitioned), string(partitions.ModeWhole)}

type publishResult struct {
	nodes, slices, writes, republishWrites int
	wall, cpu                              time.Duration
}

// publish starts one controller per node, waits until each has synced its
// pool once, counts the API writes, updates every controller with freshly
// built but equal resources, waits for that sync and counts again.
func publish(tb testing.TB, nodes int, modes string) publishResult {
	tb.Helper()
	// Discard the controllers' logs; their errors reach ErrorHandler.
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	policy, err := partitions.ParsePolicy(registry, modes)
	require.NoError(tb, err)
	type nodeState struct {
		name    string
		inv     inventory.Inventory
		driver  string
		client  *fake.Clientset
		queue   *countingQueue
		ctrl    *resourceslice.Controller
		startup sync.WaitGroup
	}
	states := make([]*nodeState, nodes)
	for i := range states {
		bn := benchNodes[i%len(benchNodes)]
		p, err := profile.Load(registry, bn.profile)
		require.NoError(tb, err)
		name := fmt.Sprintf("node-%04d", i)
		inv, err := profilenode.New(registry, name, p).Discover(ctx)
		require.NoError(tb, err)
		states[i] = &nodeState{name: name, inv: inv, driver: registry.DriverFor(bn.vendor),
			client: newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}),
			queue:  newCountingQueue()}
	}
	resources := func(s *nodeState) *resourceslice.DriverResources {
		r := resourceslices.DriverResourcesFor(registry, s.name, s.inv, resourceslices.Options{Policy: policy})[s.driver]
		return &r
	}
	errs := make(chan error, nodes)
	cpu0 := cpuTime()
	start := time.Now()
	for _, s := range states {
		// StartController waits for its informer to sync (polling once a
		// second), so nodes start in parallel as they do in a cluster.
		s.startup.Add(1)
		go func() {
			defer s.startup.Done()
			var err error
			s.ctrl, err = resourceslice.StartController(ctx, resourceslice.Options{
				DriverName: s.driver, KubeClient: s.client, Resources: resources(s), Queue: s.queue,
				Owner:        &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: s.name, UID: types.UID("uid-" + s.name)},
				ErrorHandler: func(_ context.Context, err error, msg string) { errs <- fmt.Errorf("%s: %s: %w", s.name, msg, err) },
			})
			if err != nil {
				errs <- err
			}
		}()
	}
	wait := func(syncs int64) {
		for _, s := range states {
			s.startup.Wait()
			for s.queue.done.Load() < syncs {
				select {
				case err := <-errs:
					require.NoError(tb, err)
				case <-time.After(time.Millisecond):
				}
			}
		}
	}
	wait(1)
	r := publishResult{nodes: nodes, wall: time.Since(start), cpu: cpuTime() - cpu0}
	defer func() {
		for _, s := range states {
			s.ctrl.Stop()
		}
	}()
	for _, s := range states {
		list, err := s.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		require.NoError(tb, err)
		require.Len(tb, list.Items, len(resources(s).Pools[s.name].Slices), "node %s publishes all its slices", s.name)
		r.slices += len(list.Items)
		r.writes += sliceWrites(s.client)
	}
	for _, s := range states {
		s.ctrl.Update(resources(s))
	}
	wait(2)
	for _, s := range states {
		r.republishWrites += sliceWrites(s.client)
	}
	r.republishWrites -= r.writes
	select {
	case err := <-errs:
		require.NoError(tb, err)
	default:
	}
	return r
}

// sliceWrites counts the ResourceSlice creates, updates, patches and
// deletes in the fake clientset's action log.
func sliceWrites(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "resourceslices" && slices.Contains([]string{"create", "update", "patch", "delete", "delete-collection"}, a.GetVerb()) {
			n++
		}
	}
	return n
}

func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// countingQueue is the controller's default work queue, counting the pool
// syncs it finished so the benchmark knows when a node is done.
type countingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	done atomic.Int64
}

func newCountingQueue() *countingQueue {
	return &countingQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "node_resource_slices"})}
}

func (q *countingQueue) Done(item string) {
	q.TypedRateLimitingInterface.Done(item)
	q.done.Add(1)
}

// TestBenchmarkSetups runs each benchmark's setup once at a small size,
// so that make test catches a broken benchmark, and checks the counts the
// benchmarks report: one API write per slice, none on an unchanged
// republish, and a node agent child that prepares its claims.
func TestBenchmarkSetups(t *testing.T) {
	t.Run("publication", func(t *testing.T) {
		for _, modes := range publishModes {
			r := publish(t, 4, modes)
			require.Equal(t, r.slices, r.writes, "modes %q: one write per slice", modes)
			require.Zero(t, r.republishWrites, "modes %q: republishing the same resources writes nothing", modes)
		}
	})
	t.Run("status apply without the fake's field manager", func(t *testing.T) {
		n := startNode(t, nodeOptions{Profile: benchNodes[0].profile, Vendor: benchNodes[0].vendor})
		fakeapi.CheapStatusApply(n.client)
		c := n.claim("one", chipNames("npu", 1))
		ac := resourceac.ResourceClaim(c.Name, c.Namespace).WithStatus(resourceac.ResourceClaimStatus().
			WithDevices(resourceac.AllocatedDeviceStatus().WithDriver("d").WithPool("p").WithDevice("x")))
		got, err := n.client.ResourceV1().ResourceClaims(c.Namespace).ApplyStatus(n.ctx, ac, metav1.ApplyOptions{FieldManager: "bench", Force: true})
		require.NoError(t, err)
		require.Equal(t, c.UID, got.UID)
		require.Empty(t, got.Status.Devices, "answered from the tracker, not applied")
		n.mustPrepare(c)
	})
	t.Run("floor", func(t *testing.T) {
		n := newBenchNode(t, benchNodes[0], true)
		files := n.preparedFiles(n.claim("one", chipNames("npu", 16)))
		kinds := map[string]preparedFile{}
		for _, f := range files {
			kinds[f.kind] = f
		}
		require.Len(t, kinds, len(files), "one file of each kind")
		require.Equal(t, []string{"cdi", "checkpoint", "metadata", "metadata-cdi"}, slices.Sorted(maps.Keys(kinds)))
		require.Contains(t, string(kinds["cdi"].data), "npu-15")
		require.Contains(t, string(kinds["checkpoint"].data), "npu-15")
		require.Contains(t, string(kinds["metadata"].data), "npu-15")
		require.Contains(t, string(kinds["metadata-cdi"].data), "metadata.json")
		require.False(t, kinds["cdi"].durable, "the CDI library does not fsync the claim's spec")
		require.True(t, kinds["checkpoint"].durable)
		require.Empty(t, kinds["checkpoint"].newDirs, "the checkpoint is replaced, not created")
		require.NotEmpty(t, kinds["metadata"].newDirs, "the helper creates the claim's metadata directory")
		require.Equal(t, "checkpoint", files[1].kind, "in the order prepare writes them")
	})
	t.Run("trace of the prepares", func(t *testing.T) {
		n := newBenchNode(t, benchNodes[1], true)
		c := n.claim("one", chipNames("mlu", 2))
		files := n.preparedFiles(c)
		floorRoot := t.TempDir()
		var buf bytes.Buffer
		require.NoError(t, trace.Start(&buf))
		const rounds = 20
		var walls []time.Duration
		for range rounds {
			p, _ := prepareRound(t, n, c, files, floorRoot)
			walls = append(walls, p)
		}
		trace.Stop()
		pt, err := readPrepareTrace(&buf)
		require.NoError(t, err)
		bs := pt.breakdowns()
		require.Len(t, bs, rounds)
		for i, b := range bs {
			require.InDelta(t, walls[i], b.wall, float64(time.Millisecond), "round %d: the trace's region is the timed call", i)
			for _, phase := range []string{driver.RegionPrepareCheck, driver.RegionPrepareCDI, driver.RegionPrepareCheckpoint} {
				require.Positive(t, b.phases[phase], "round %d: phase %s", i, phase)
			}
			require.Positive(t, b.beforeDriver, "round %d: gRPC and the claim's Get come first", i)
			require.Positive(t, b.afterDriver, "round %d: the metadata files and the answer come after", i)
			require.Equal(t, b.wall, b.beforeDriver+b.phases[driver.RegionPrepare]+b.afterDriver, "round %d", i)
			var handler time.Duration
			for _, d := range b.handler {
				handler += d
			}
			require.Equal(t, b.phases[driver.RegionPrepare], handler, "round %d: the handler's states cover the driver's part", i)
			require.Positive(t, b.handler["syscall"], "round %d: the checkpoint's fsync", i)
		}
		var out bytes.Buffer
		tailReport(&out, bs)
		candidateReport(&out, pt, bs)
		require.Contains(t, out.String(), "slowest 2 of 20", "p99 of 20 is the 19th: 2 prepares at or above it")
		require.Contains(t, out.String(), "status writer ran meanwhile")
	})
}

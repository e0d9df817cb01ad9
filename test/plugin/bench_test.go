package plugin_test

// Benchmarks of the moments users wait on (docs/benchmarks.md): a pod's
// prepare next to the floor of its file writes, a node's slice publication
// through the upstream resourceslice controller, and the node agent's
// memory. They live here to reuse the tier-3 harness (harness_test.go) and
// the fake API server's behaviours (fakeclient_test.go). Nothing here
// asserts on time; TestBenchmarkSetups runs each setup once, small.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/scale"
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

// BenchmarkPrepare measures NodePrepareResources of 1-, 8- and 16-chip
// claims over the plugin's unix socket (claim fetched from the fake API,
// config decoded, CDI spec written, checkpoint fsync'ed) and, in the same
// run, the floor: writing files of the same sizes as the claim's CDI spec
// and checkpoint the way the code writes them. ns/op is the prepare plus
// unprepare round trip; the metrics are per prepare.
func BenchmarkPrepare(b *testing.B) {
	quietTestLogger(b)
	for _, bn := range benchNodes {
		for _, chips := range []int{1, 8, 16} {
			b.Run(fmt.Sprintf("%s/%d-chips", bn.vendor, chips), func(b *testing.B) {
				// Partitioned, as measured in docs/benchmarks.md.
				n := startNode(b, nodeOptions{Profile: bn.profile, Vendor: bn.vendor, ChipModes: string(partitions.ModePartitioned)})
				cheapStatusApply(n.client)
				c := n.claim("bench", chipNames(bn.prefix, chips))
				spec, ckpt := n.preparedFiles(c)
				floorDir := b.TempDir()
				var prep, floor, floorBoth []time.Duration
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					n.mustPrepare(c)
					prep = append(prep, time.Since(start))
					n.unprepare(c)
					// The floor in the same iteration: a disturbance of
					// the machine (another process's fsyncs, CPU) reaches
					// both sides of the p99 ratio alike.
					f, fb := measureFloor(b, floorDir, spec, ckpt)
					floor, floorBoth = append(floor, f), append(floorBoth, fb)
				}
				reportLatency(b, "prepare", prep)
				reportLatency(b, "floor", floor)
				reportLatency(b, "floor-fsync-both", floorBoth)
				b.ReportMetric(float64(percentile(prep, 50))/float64(percentile(floor, 50)), "prepare/floor-p50")
				b.ReportMetric(float64(percentile(prep, 99))/float64(percentile(floor, 99)), "prepare/floor-p99")
				b.ReportMetric(float64(len(spec)), "cdi-bytes")
				b.ReportMetric(float64(len(ckpt)), "checkpoint-bytes")
			})
		}
	}
}

// cheapStatusApply answers the claim status applies of the driver's
// background status writer without the fake's server-side apply: that
// runs a field manager with a REST mapper rebuilt per call (2.2 MB, 81 %
// of the bytes the prepare benchmark allocated) in this process beside
// the prepare, and its GC and CPU made the prepare's p99; an API server
// does that work in its own process. The agent's side of the apply
// (building and sending it) is still measured.
func cheapStatusApply(client *fake.Clientset) {
	client.PrependReactor("patch", "resourceclaims", func(action k8stesting.Action) (bool, k8sruntime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		obj, err := client.Tracker().Get(action.GetResource(), action.GetNamespace(), action.(k8stesting.PatchAction).GetName())
		return true, obj, err
	})
}

// preparedFiles prepares c once and returns the bytes of its CDI spec and
// of the checkpoint holding it, then unprepares it.
func (n *node) preparedFiles(c *resourceapi.ResourceClaim) (spec, ckpt []byte) {
	n.t.Helper()
	n.mustPrepare(c)
	defer n.unprepare(c)
	files := n.cdiFiles()
	require.Len(n.t, files, 1)
	spec, err := os.ReadFile(filepath.Join(n.cdiDir, files[0]))
	require.NoError(n.t, err)
	ckpt, err = os.ReadFile(filepath.Join(n.stateDir, driver.CheckpointFile))
	require.NoError(n.t, err)
	return spec, ckpt
}

// measureFloor times one write of spec and ckpt in dir (a directory of
// the same filesystem) with the code's own patterns: the CDI library's
// (temporary file, rename, no fsync) and pkg/checkpoint's (temporary file,
// fsync, rename, directory fsync). floorBoth fsyncs the spec too.
func measureFloor(b *testing.B, dir string, spec, ckpt []byte) (floor, floorBoth time.Duration) {
	b.Helper()
	start := time.Now()
	atomicWrite(b, dir, "spec.yaml", spec, false)
	atomicWrite(b, dir, "checkpoint.json", ckpt, true)
	floor = time.Since(start)
	start = time.Now()
	atomicWrite(b, dir, "spec.yaml", spec, true)
	atomicWrite(b, dir, "checkpoint.json", ckpt, true)
	return floor, time.Since(start)
}

// atomicWrite replaces dir/name with data through a temporary file,
// fsyncing the file and the directory when durable.
func atomicWrite(b testing.TB, dir, name string, data []byte, durable bool) {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	require.NoError(b, err)
	_, err = tmp.Write(data)
	require.NoError(b, err)
	if durable {
		require.NoError(b, tmp.Sync())
	}
	require.NoError(b, tmp.Close())
	require.NoError(b, os.Rename(tmp.Name(), filepath.Join(dir, name)))
	if durable {
		d, err := os.Open(dir)
		require.NoError(b, err)
		require.NoError(b, d.Sync())
		require.NoError(b, d.Close())
	}
}

// quietTestLogger sets the harness's test logger (ktesting, verbosity 5 by
// default) to the node agent's default verbosity 0 for tb, so formatting
// debug lines into the test log is not measured.
func quietTestLogger(tb testing.TB) {
	v := ktesting.DefaultConfig.Verbosity()
	was := v.String()
	require.NoError(tb, v.Set("0"))
	tb.Cleanup(func() { _ = v.Set(was) })
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func reportLatency(b *testing.B, what string, d []time.Duration) {
	b.ReportMetric(float64(percentile(d, 50))/1e6, what+"-p50-ms")
	b.ReportMetric(float64(percentile(d, 99))/1e6, what+"-p99-ms")
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

// BenchmarkAgentMemory reports the resident memory of the node agent
// serving a 16-chip node of each vendor (chips Partitioned, the most
// devices a node publishes) in a process of its own, with its
// slices published, registered, and then with 16 prepared claims (one
// chip each, one NodePrepareResources call each, as for 16 pods).
func BenchmarkAgentMemory(b *testing.B) {
	for _, bn := range benchNodes {
		b.Run(string(bn.vendor), func(b *testing.B) {
			m := agentMemory(b, bn, 16)
			for b.Loop() {
				// The measurement is the child's; nothing to repeat.
			}
			b.ReportMetric(m.idleRSS, "idle-RSS-MiB")
			b.ReportMetric(m.rss, "RSS-MiB")
			b.ReportMetric(m.hwm, "peak-RSS-MiB")
			b.ReportMetric(m.anon, "anon-RSS-MiB")
			b.ReportMetric(m.file, "file-RSS-MiB")
		})
	}
}

// memory is in MiB; anon and file split rss into the process's own
// memory (heap, stacks, runtime) and the pages of its binary and
// libraries that it touched.
type memory struct{ idleRSS, rss, hwm, anon, file float64 }

// agentMemory runs the node agent of bn in a child process (agent, as
// the crash and soak tests do), acts as its kubelet, prepares claims
// claims and reads the child's /proc status.
func agentMemory(tb testing.TB, bn benchNode, claims int) memory {
	tb.Helper()
	driverName := registry.DriverFor(bn.vendor)
	a := newAgent(tb, bn.profile, string(partitions.ModePartitioned))
	var objs []*resourceapi.ResourceClaim
	for i := range claims {
		c := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-pod-%d", i))},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "accel", Driver: driverName, Pool: nodeName, Device: fmt.Sprintf("%s-%d", bn.prefix, i)}},
			}}},
		}
		a.addClaim(c)
		objs = append(objs, c)
	}
	a.start("")
	// Serving a node means its slices are published: the helper's
	// controller starts after the gRPC servers, taking at least a second.
	a.waitPublished()
	pid := a.cmd.Process.Pid
	m := memory{idleRSS: procStatusMiB(tb, pid, "VmRSS")}
	for _, c := range objs {
		resp, err := a.prepare(driverName, c)
		require.NoError(tb, err)
		require.Empty(tb, resp[string(c.UID)].Error)
	}
	m.rss = procStatusMiB(tb, pid, "VmRSS")
	m.hwm = procStatusMiB(tb, pid, "VmHWM")
	m.anon = procStatusMiB(tb, pid, "RssAnon")
	m.file = procStatusMiB(tb, pid, "RssFile")
	a.stop()
	return m
}

// procStatusMiB reads a kB field of /proc/<pid>/status in MiB.
func procStatusMiB(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	v, err := scale.ProcStatusMiB(pid, field)
	require.NoError(tb, err)
	return v
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
	t.Run("memory", func(t *testing.T) {
		m := agentMemory(t, benchNodes[1], 2)
		require.Positive(t, m.idleRSS)
		require.GreaterOrEqual(t, m.hwm, m.rss)
		require.InDelta(t, m.rss, m.anon+m.file, 1, "RSS is anonymous plus file pages (and a little shared memory)")
	})
	t.Run("status apply without the fake's field manager", func(t *testing.T) {
		n := startNode(t, nodeOptions{Profile: benchNodes[0].profile, Vendor: benchNodes[0].vendor})
		cheapStatusApply(n.client)
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
		n := startNode(t, nodeOptions{Profile: benchNodes[0].profile, Vendor: benchNodes[0].vendor})
		spec, ckpt := n.preparedFiles(n.claim("one", chipNames("npu", 16)))
		require.Contains(t, string(spec), "npu-15")
		require.Contains(t, string(ckpt), "npu-15")
	})
}

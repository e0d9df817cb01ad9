//go:build e2e

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

// Command bench-scale measures the real kube-scheduler's throughput over
// many kwok nodes (`make bench-scale`, docs/benchmarks.md): on the
// control plane of the e2e tier (test/e2e/framework, no kubelet, no
// agents), the nodes' ResourceSlices are published by this process
// (test/scale), then pods with claim templates are created and timed
// until bound. The sides run one after the other on the same nodes: the
// scheduler_perf test driver's shape (baseline); our slices with every
// chip Whole (the default) and the demo's claims as written today; then
// one side per lever of what our slices cost the scheduler (per-model
// classes, classes without the type clause, a nodeSelector on the vendor
// label, fewer attributes, all of them together), and Partitioned with
// every template and with fewer. It prints one markdown row per side,
// the ratio ours/baseline and the ratio to the side the lever changes.
//
//	go run -tags e2e ./test/e2e/cmd/bench-scale [-nodes 1000] [-pods 500]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
	"github.com/accel-dra/accel-dra/test/scale"
)

func main() {
	nodes := flag.Int("nodes", 1000, "kwok nodes")
	pods := flag.Int("pods", 300, "pods per side")
	partitionedPods := flag.Int("partitioned-pods", 100, "pods of the side with partitions, the slowest")
	timeout := flag.Duration("timeout", 30*time.Minute, "bound of the whole run, teardown included")
	profileDir := flag.String("profile-dir", "", "where to write a CPU profile of kube-scheduler taken while each side's pods are scheduled (go tool pprof)")
	agentBin := flag.String("agent-bin", "", "the accel-dra-kubeletplugin binary whose memory to measure after the sides (make bench-scale: built as the image builds it); empty skips it")
	agentProfiles := flag.String("agent-profiles", "test/plugin/testdata/16-npu-910b3.yaml,test/plugin/testdata/16-mlu370.yaml", "hardware profiles of the measured agents, comma list")
	agentModes := flag.String("agent-chip-modes", "Partitioned", "the measured agents' --chip-modes")
	agentSymbols := flag.String("agent-symbols", "", "an unstripped build of -agent-bin with the same layout (make bench-scale builds one): attribute the agent's resident file-backed pages to packages")
	runSides := flag.Bool("sides", true, "measure the scheduler sides; false measures only the node agent")
	order := flag.String("order", "", "the sides to measure, by their # in the table, in that order, repeats allowed (e.g. 1,11,1,11,1,11 measures a small difference against the run's drift); empty measures every side once")
	views := flag.Bool("views", true, "also time the CLI's cluster views (accel-dra chips, why) next to kubectl get resourceslices -o json, over the side with Whole chips while its pods hold their chips")
	flag.Parse()
	// The many resourceslice controllers log their watches ending when
	// they stop; the benchmark reports its errors itself.
	klog.SetLogger(logr.Discard())
	if err := run(config{*nodes, *pods, *partitionedPods, *timeout, *profileDir, *agentBin, *agentProfiles, *agentModes, *agentSymbols, *order, *views, *runSides}); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// clientQPS is what scheduler_perf gives its clients
// (test/integration/scheduler_perf/util.go: QPS and burst 5000): the
// benchmark measures scheduling, not client-side rate limits.
const clientQPS = 5000

type config struct {
	nodes, pods, partitionedPods int
	timeout                      time.Duration
	profileDir                   string
	agentBin, agentProfiles      string
	agentModes, agentSymbols     string
	order                        string
	views, sides                 bool
}

type side struct {
	name string
	pods int
	// ref is the index of the side this one changes one lever of; 0
	// when it is compared with the baseline only.
	ref int
	// publish puts the side's slices in place and returns their number
	// and what removes them again.
	publish  func(context.Context, []corev1.Node) (int, func(context.Context) error, error)
	workload scale.Workload
	// whileBound, when set, runs after the side's pods are bound and
	// before they are deleted, in the side's namespace.
	whileBound func(ctx context.Context, ns string) error
	// onlyByOrder keeps the side out of a run without -order: it needs
	// more memory than the 2-core, 24 GiB machine has at 1000 nodes.
	onlyByOrder bool
}

type result struct {
	// index is the side's number in the table; a side may run more
	// than once (-order).
	index                   int
	side                    string
	ref                     int
	failed                  bool
	slices                  int
	publish                 time.Duration
	sched                   scale.Scheduled
	schedCPU, apiCPU        time.Duration
	attempts, unschedulable float64
	attemptSeconds          float64
	writesPods, writesAll   float64
	evaluated               float64
}

func run(cfg config) error {
	opts, err := framework.OptionsFromEnv("bench-scale")
	if err != nil {
		return err
	}
	opts.ClientQPS = clientQPS
	// kwok's heartbeats of 1000 nodes lag on a loaded 2-core machine;
	// the node lifecycle controller would taint the nodes meanwhile.
	opts.ControllerManagerArgs = []string{"--node-monitor-grace-period=10m"}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench-scale: %d nodes, %d pods per side (%d with partitions), %d CPUs, load %s\n",
		cfg.nodes, cfg.pods, cfg.partitionedPods, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))

	start := time.Now()
	c, err := framework.StartControlPlane(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the control plane (logs in %s): %w", opts.ArtifactsDir, err)
	}
	defer func() {
		c.Stop(context.Background())
		opts.Logf("Control plane torn down; logs in %s", opts.ArtifactsDir)
	}()
	restCfg := rest.CopyConfig(c.AdminConfig)
	restCfg.QPS, restCfg.Burst = clientQPS, clientQPS
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("creating the benchmark's client: %w", err)
	}
	// Node i gets OurProfiles[i % len]'s chips, so it carries that
	// vendor's label, as the device-plugin setups and our chart label
	// nodes.
	names := make([][]string, len(scale.OurVendorLabels))
	for i := range cfg.nodes {
		names[i%len(names)] = append(names[i%len(names)], scale.NodeName(i))
	}
	for i, label := range scale.OurVendorLabels {
		if err := c.CreateKwokNodes(ctx, names[i], map[string]string{scale.VendorLabel: label}); err != nil {
			return err
		}
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: framework.NodeTypeLabel + "=kwok"})
	if err != nil {
		return fmt.Errorf("listing the kwok nodes: %w", err)
	}
	nodes := list.Items
	opts.Logf("Control plane and %d kwok nodes up in %s", len(nodes), time.Since(start).Round(time.Second))

	ours, err := scale.OurWorkload(opts.RepoRoot)
	if err != nil {
		return err
	}
	perModel, err := scale.LoadWorkload(opts.RepoRoot, "test/scale/testdata/levers.yaml", scale.PerModelTemplates)
	if err != nil {
		return err
	}
	driverOnly, err := scale.LoadWorkload(opts.RepoRoot, "test/scale/testdata/levers.yaml", scale.DriverOnlyTemplates)
	if err != nil {
		return err
	}
	// (c) may end on either vendor: only the one-vendor shapes get the
	// vendor's label as nodeSelector.
	ascend := map[string]string{scale.VendorLabel: scale.OurVendorLabels[0]}
	perModelLabelled := perModel.WithNodeSelector(scale.PerModelTemplates[0], ascend).WithNodeSelector(scale.PerModelTemplates[1], ascend)
	whole := scale.Slices{Modes: string(partitions.ModeWhole)}
	lean := scale.Slices{Modes: whole.Modes, Omit: scale.LeanOmit}
	unused := scale.Slices{Modes: whole.Modes, Omit: scale.UnusedOmit}
	partitioned := scale.Slices{Modes: string(partitions.ModePartitioned)}
	halves := scale.Slices{Modes: partitioned.Modes, Templates: scale.HalfChipTemplates}
	const today, part = 1, 9
	sides := []side{
		{name: "baseline (scheduler_perf test driver)", workload: scale.BaselineWorkload(), pods: cfg.pods,
			publish: func(ctx context.Context, nodes []corev1.Node) (int, func(context.Context) error, error) {
				if err := scale.CreateBaselineSlices(ctx, client, nodes); err != nil {
					return 0, nil, err
				}
				return len(nodes), func(ctx context.Context) error {
					return scale.DeleteSlices(ctx, client, 2*time.Minute, scale.BaselineDriver)
				}, nil
			}},
		oursSide(client, "ours, chips Whole: generic class + model selector (test/bench's claims)", ours, whole, cfg.pods, 0),
		oursSide(client, "lever 1: per-model class, no selector", perModel, whole, cfg.pods, today),
		oursSide(client, "lever 1: generic class without type == \"chip\" + model selector", driverOnly, whole, cfg.pods, today),
		oursSide(client, "lever 3: per-model class + nodeSelector "+scale.VendorLabel+" (a, b)", perModelLabelled, whole, cfg.pods, 2),
		oursSide(client, "lever 2: without "+omitted(lean), ours, lean, cfg.pods, today),
		oursSide(client, "lever 2: without "+omitted(unused), ours, unused, cfg.pods, today),
		oursSide(client, "levers 1+2+3: per-model class, nodeSelector, without "+omitted(unused), perModelLabelled, unused, cfg.pods, today),
		// The machine's load moves during a run: the first Whole side
		// again says how far.
		oursSide(client, "ours, chips Whole, side 1 again (drift since #1)", ours, whole, cfg.pods, today),
		oursSide(client, "ours, chips Partitioned (chip + 6 slots), test/bench's claims", ours, partitioned, cfg.partitionedPods, 0),
		oursSide(client, "lever 4: Partitioned offering "+strings.Join(halves.Templates, ", ")+" only (chip + 2 slots)", ours, halves, cfg.partitionedPods, part),
		// Issue 39's goal: the fabric costs under 5% more scheduler CPU
		// per pod than side 1.
		fabricSide(client, "ours, chips Whole + fabric (superPod, serverIndex, superDeviceID; superpod, leaf, spine node labels)", ours, cfg.pods, today),
	}
	if sides, err = withShareSides(sides, client, opts.RepoRoot, cfg.pods); err != nil {
		return err
	}
	if sides, err = withPeerSides(sides, client, opts.RepoRoot, cfg.pods, cfg.partitionedPods); err != nil {
		return err
	}
	var viewResults []viewResult
	viewSlices := 0
	if cfg.views {
		sides[1].whileBound = func(ctx context.Context, ns string) error {
			all, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("counting the slices the views read: %w", err)
			}
			viewSlices = len(all.Items)
			viewResults, err = measureViews(ctx, c, client, ns)
			return err
		}
	}
	order, err := scale.ParseOrder(cfg.order, len(sides))
	if err != nil {
		return err
	}
	if cfg.order == "" {
		order = slices.DeleteFunc(order, func(i int) bool { return sides[i].onlyByOrder })
	}
	if !cfg.sides {
		order = nil
	}
	var results []result
	for run, i := range order {
		s := sides[i]
		profile := ""
		if cfg.profileDir != "" {
			profile = filepath.Join(cfg.profileDir, fmt.Sprintf("kube-scheduler-side-%d-run-%d.pprof", i, run))
		}
		r, err := measure(ctx, c, client, s, nodes, fmt.Sprintf("bench-%d", run), profile)
		r.index = i
		if err != nil {
			// One side failing (an API server timing out on a loaded
			// machine) must not lose the others' rows.
			if ctx.Err() != nil {
				return fmt.Errorf("side %s: %w", s.name, err)
			}
			fmt.Fprintf(os.Stderr, "bench-scale: side %d, %s: %v\n", i, s.name, err)
			r.failed = true
		}
		results = append(results, r)
		opts.Logf("%s: %d/%d pods bound in %s, %.1f pods/s", s.name, r.sched.Bound, r.sched.Pods, r.sched.Wall.Round(time.Millisecond), r.sched.PodsPerSecond())
	}
	if results != nil {
		printResults(results)
		printRepeats(results)
		printPeerRatios(results)
	}
	if viewResults != nil {
		printViews(viewResults, len(nodes), viewSlices)
	}
	if cfg.agentBin == "" {
		return nil
	}
	fmt.Println()
	if st, err := os.Stat(cfg.agentBin); err == nil {
		fmt.Printf("node agent binary %s: %.1f MiB\n\n", cfg.agentBin, float64(st.Size())/(1<<20))
	}
	fmt.Println("| node agent (real binary) | chip modes | slices | RSS MiB | anon MiB | file MiB | peak MiB |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var shares [][]residentShare
	for i, p := range strings.Split(cfg.agentProfiles, ",") {
		m, err := measureAgent(ctx, client, c.Kubeconfig(), cfg.agentBin, cfg.agentSymbols, filepath.Join(opts.RepoRoot, p), cfg.agentModes, nodes[i], 10*time.Second)
		if err != nil {
			return fmt.Errorf("measuring the node agent of %s: %w", p, err)
		}
		fmt.Printf("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f |\n", p, m.modes, m.slices, m.rss, m.anon, m.file, m.peak)
		if m.shares != nil {
			shares = append(shares, m.shares)
			fmt.Printf("\nits file-backed pages of the binary: %.1f MiB\n", m.resident/(1<<20))
		}
	}
	if len(shares) > 0 {
		printShares(shares[0])
	}
	return nil
}

// printShares prints what the first agent's resident pages of its binary
// hold: by package group, then the largest packages.
func printShares(shares []residentShare) {
	groups := map[string]float64{}
	for _, s := range shares {
		groups[packageGroup(s.name)] += s.bytes
	}
	var gs []residentShare
	for n, b := range groups {
		gs = append(gs, residentShare{n, b})
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].bytes > gs[j].bytes })
	fmt.Println()
	fmt.Println("| resident pages of the agent binary, by package group | MiB |")
	fmt.Println("|---|---|")
	for _, g := range gs[:min(len(gs), 25)] {
		fmt.Printf("| %s | %.2f |\n", g.name, g.bytes/(1<<20))
	}
	fmt.Println()
	fmt.Println("| largest packages | MiB |")
	fmt.Println("|---|---|")
	for _, s := range shares[:min(len(shares), 25)] {
		fmt.Printf("| %s | %.2f |\n", s.name, s.bytes/(1<<20))
	}
}

// omitted names the attributes settings leave out.
func omitted(settings scale.Slices) string {
	var out []string
	for _, k := range settings.Omit {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}

// oursSide publishes our slices with settings and schedules w's pods; ref
// is the index of the side it is compared with (0: none but the
// baseline).
func oursSide(client kubernetes.Interface, name string, w scale.Workload, settings scale.Slices, pods, ref int) side {
	return side{name: name, workload: w, pods: pods, ref: ref,
		publish: publishing(client, func(ctx context.Context, nodes []corev1.Node) (*scale.Publisher, error) {
			return scale.Publish(ctx, client, nodes, settings, 5*time.Minute)
		})}
}

// publishing is a side's publish step over the resourceslice
// controllers start runs: their slices, and a cleanup that stops them
// and deletes what they published.
func publishing(client kubernetes.Interface, start func(context.Context, []corev1.Node) (*scale.Publisher, error)) func(context.Context, []corev1.Node) (int, func(context.Context) error, error) {
	return func(ctx context.Context, nodes []corev1.Node) (int, func(context.Context) error, error) {
		p, err := start(ctx, nodes)
		if err != nil {
			return 0, nil, err
		}
		return p.Slices, func(ctx context.Context) error {
			p.Stop()
			return scale.DeleteSlices(ctx, client, 2*time.Minute, p.Drivers...)
		}, nil
	}
}

// fabricSide is oursSide with chips Whole, each node in a super pod of
// scale.ServersPerSuperPod nodes: its chips publish their super pod
// attributes and the node carries the fabric labels its agent and the
// admin's ConfigMap would give it, removed again when the side ends.
func fabricSide(client kubernetes.Interface, name string, w scale.Workload, pods, ref int) side {
	s := oursSide(client, name, w, scale.Slices{Modes: string(partitions.ModeWhole), Fabric: true}, pods, ref)
	publish := s.publish
	s.publish = func(ctx context.Context, nodes []corev1.Node) (int, func(context.Context) error, error) {
		if err := labelFabric(ctx, client, nodes, true); err != nil {
			return 0, nil, errors.Join(err, labelFabric(context.WithoutCancel(ctx), client, nodes, false))
		}
		n, cleanup, err := publish(ctx, nodes)
		if err != nil {
			return 0, nil, errors.Join(err, labelFabric(context.WithoutCancel(ctx), client, nodes, false))
		}
		return n, func(ctx context.Context) error {
			return errors.Join(cleanup(ctx), labelFabric(ctx, client, nodes, false))
		}, nil
	}
	return s
}

// labelFabric sets (on) or removes the fabric labels of nodes, node i's
// scale.FabricLabels(i), the index Publish places its chips by.
func labelFabric(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, on bool) error {
	for i, n := range nodes {
		labels := map[string]any{}
		for k, v := range scale.FabricLabels(i) {
			labels[k] = nil // a merge patch's null removes the label
			if on {
				labels[k] = v
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			return fmt.Errorf("encoding the fabric labels of node %s: %w", n.Name, err)
		}
		if _, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("writing the fabric labels of node %s: %w", n.Name, err)
		}
	}
	return nil
}

// snapshot is what is read before and after a side's pods.
type snapshot struct {
	sched, api       scale.Metrics
	schedCPU, apiCPU time.Duration
}

func take(ctx context.Context, c *framework.Cluster) (snapshot, error) {
	var s snapshot
	text, err := c.SchedulerMetrics(ctx)
	if err != nil {
		return s, err
	}
	if s.sched, err = scale.ParseMetrics(text); err != nil {
		return s, err
	}
	if text, err = c.APIServerMetrics(ctx); err != nil {
		return s, err
	}
	if s.api, err = scale.ParseMetrics(text); err != nil {
		return s, err
	}
	if s.schedCPU, err = scale.ProcCPU(c.PID("kube-scheduler")); err != nil {
		return s, err
	}
	s.apiCPU, err = scale.ProcCPU(c.PID("kube-apiserver"))
	return s, err
}

var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"}

func measure(ctx context.Context, c *framework.Cluster, client kubernetes.Interface, s side, nodes []corev1.Node, ns, profile string) (result, error) {
	r := result{side: s.name, ref: s.ref}
	t0 := time.Now()
	slices, unpublish, err := s.publish(ctx, nodes)
	if err != nil {
		return r, err
	}
	r.publish, r.slices = time.Since(t0), slices
	defer func() {
		if err := unpublish(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(os.Stderr, "bench-scale: removing the slices of %s: %v\n", s.name, err)
		}
	}()
	if err := s.workload.Apply(ctx, client, ns); err != nil {
		return r, err
	}
	// Let the scheduler's informers catch up with the slices.
	time.Sleep(2 * time.Second)
	before, err := take(ctx, c)
	if err != nil {
		return r, err
	}
	profiled := make(chan error, 1)
	if profile != "" {
		go func() { profiled <- writeProfile(ctx, c, profile) }()
	} else {
		profiled <- nil
	}
	if r.sched, err = s.workload.Schedule(ctx, client, ns, s.pods, 5*time.Minute); err != nil {
		return r, err
	}
	if err := <-profiled; err != nil {
		return r, err
	}
	after, err := take(ctx, c)
	if err != nil {
		return r, err
	}
	if s.whileBound != nil {
		if err := s.whileBound(ctx, ns); err != nil {
			return r, err
		}
	}
	if err := scale.DeletePods(ctx, client, ns, 3*time.Minute); err != nil {
		return r, err
	}
	r.schedCPU, r.apiCPU = after.schedCPU-before.schedCPU, after.apiCPU-before.apiCPU
	delta := func(m func(snapshot) float64) float64 { return m(after) - m(before) }
	r.attempts = delta(func(s snapshot) float64 { return s.sched.Sum("scheduler_schedule_attempts_total", nil) })
	r.unschedulable = delta(func(s snapshot) float64 {
		return s.sched.Sum("scheduler_schedule_attempts_total", map[string][]string{"result": {"unschedulable", "error"}})
	})
	r.attemptSeconds = delta(func(s snapshot) float64 {
		return s.sched.Sum("scheduler_scheduling_attempt_duration_seconds_sum", nil)
	})
	r.writesPods = delta(func(s snapshot) float64 {
		return s.api.Sum("apiserver_request_total", map[string][]string{"verb": writeVerbs, "resource": {"pods", "resourceclaims"}})
	})
	r.writesAll = delta(func(s snapshot) float64 {
		return s.api.Sum("apiserver_request_total", map[string][]string{"verb": writeVerbs})
	})
	if log, err := os.ReadFile(c.LogFile("kube-scheduler")); err == nil {
		r.evaluated, _, _ = scale.EvaluatedNodes(log, ns)
	}
	return r, nil
}

// profileSeconds is how long the scheduler's CPU profile runs from the
// first pod's creation: shorter than the fastest side's pods take.
const profileSeconds = 8

func writeProfile(ctx context.Context, c *framework.Cluster, path string) error {
	data, err := c.SchedulerGet(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the scheduler's profile: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the scheduler's profile: %w", err)
	}
	return nil
}

func printResults(rs []result) {
	fmt.Println()
	fmt.Println("| # | side | slices | publish s | pods bound | pods/s | ratio | vs side | scheduler CPU ms/pod | nodes evaluated/pod | scheduler CPU µs/evaluated node | attempt ms/pod | failed attempts | API writes/pod (pods, claims; all) | apiserver CPU ms/pod |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for j, r := range rs {
		if r.failed {
			fmt.Printf("| %d | %s | failed (above) |\n", r.index, r.side)
			continue
		}
		b := float64(max(r.sched.Bound, 1))
		ratio := "—"
		if k := nearestRun(rs, 0, j); k >= 0 && r.index > 0 && rs[k].sched.PodsPerSecond() > 0 {
			ratio = fmt.Sprintf("**%.2f**", r.sched.PodsPerSecond()/rs[k].sched.PodsPerSecond())
		}
		vs := "—"
		if k := nearestRun(rs, r.ref, j); r.ref > 0 && k >= 0 && rs[k].sched.PodsPerSecond() > 0 {
			vs = fmt.Sprintf("%.2f× #%d (CPU/pod %.2f×)", r.sched.PodsPerSecond()/rs[k].sched.PodsPerSecond(), r.ref, cpuPerPod(r)/cpuPerPod(rs[k]))
		}
		perNode := 0.0
		if r.evaluated > 0 {
			perNode = float64(r.schedCPU.Microseconds()) / b / r.evaluated
		}
		fmt.Printf("| %d | %s | %d | %.1f | %d/%d | %.1f | %s | %s | %.1f | %.0f | %.0f | %.1f | %.0f | %.1f; %.1f | %.1f |\n",
			r.index, r.side, r.slices, r.publish.Seconds(), r.sched.Bound, r.sched.Pods, r.sched.PodsPerSecond(), ratio, vs,
			cpuPerPod(r), r.evaluated, perNode, r.attemptSeconds*1000/b, r.unschedulable,
			r.writesPods/b, r.writesAll/b, float64(r.apiCPU.Microseconds())/1000/b)
	}
}

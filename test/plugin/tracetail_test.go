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

// tracetail reads a runtime/trace of BenchmarkPrepare and says where the
// time of each prepare went: the driver's phases (its trace regions), the
// handler goroutine's and the kubelet client's states (running, waiting
// for a P, in a system call, blocked), the GC, and which other goroutines
// had the CPU meanwhile. Its report puts the slowest prepares (p99 and up)
// next to the median of every column, which is how docs/benchmarks.md
// rules the tail's candidates in or out.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	exptrace "golang.org/x/exp/trace"

	"github.com/accel-dra/accel-dra/pkg/driver"
)

// Regions the benchmark marks on its own goroutine, the kubelet's side.
const (
	regionBenchPrepare = "bench.prepare"
	regionBenchOther   = "bench.unprepare+floor"
)

// tailSpan is a stretch of time [start, end).
type tailSpan struct{ start, end exptrace.Time }

func (s tailSpan) overlap(o tailSpan) time.Duration {
	lo, hi := max(s.start, o.start), min(s.end, o.end)
	if hi <= lo {
		return 0
	}
	return hi.Sub(lo)
}

// goState is one stretch of a goroutine in one state; why is the block
// reason of a waiting goroutine.
type goState struct {
	g     exptrace.GoID
	state exptrace.GoState
	why   string
	tailSpan
}

// tailRegion is one trace region instance on a goroutine.
type tailRegion struct {
	name string
	g    exptrace.GoID
	tailSpan
}

// prepareTrace is what tracetail keeps of a trace.
type prepareTrace struct {
	prepares []tailRegion // the benchmark's timed prepares, in order
	regions  []tailRegion // the driver's regions
	states   []goState
	gcMark   []tailSpan
	stw      []tailSpan
	assists  []tailRegion // GC mark assists, per goroutine
	// heapGoals are the GC's heap goals the trace reported, in bytes.
	heapGoals []uint64
	// starts is each goroutine's start function (outermost frame known)
	// and, when the trace saw it start, the functions of the stack that
	// started it.
	starts map[exptrace.GoID]string
}

// readPrepareTrace reads a runtime/trace written while BenchmarkPrepare ran.
func readPrepareTrace(r io.Reader) (*prepareTrace, error) {
	tr, err := exptrace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("reading trace: %w", err)
	}
	pt := &prepareTrace{starts: map[exptrace.GoID]string{}}
	type open struct {
		name string
		t    exptrace.Time
	}
	regionStack := map[exptrace.GoID][]open{}
	since := map[exptrace.GoID]goState{}
	ranges := map[string]exptrace.Time{}
	assistSince := map[exptrace.GoID]exptrace.Time{}
	var last exptrace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading trace event: %w", err)
		}
		t := ev.Time()
		last = t
		switch ev.Kind() {
		case exptrace.EventMetric:
			if m := ev.Metric(); m.Name == "/gc/heap/goal:bytes" {
				pt.heapGoals = append(pt.heapGoals, m.Value.Uint64())
			}
		case exptrace.EventRegionBegin:
			g := ev.Goroutine()
			regionStack[g] = append(regionStack[g], open{ev.Region().Type, t})
		case exptrace.EventRegionEnd:
			g := ev.Goroutine()
			st := regionStack[g]
			if len(st) == 0 {
				continue // began before the trace
			}
			o := st[len(st)-1]
			regionStack[g] = st[:len(st)-1]
			r := tailRegion{name: o.name, g: g, tailSpan: tailSpan{o.t, t}}
			switch {
			case o.name == regionBenchPrepare:
				pt.prepares = append(pt.prepares, r)
			case strings.HasPrefix(o.name, "accel-dra."):
				pt.regions = append(pt.regions, r)
			}
		case exptrace.EventRangeBegin, exptrace.EventRangeActive:
			rg := ev.Range()
			if rg.Name == "GC mark assist" {
				assistSince[ev.Goroutine()] = t
			} else {
				ranges[rg.Name] = t
			}
		case exptrace.EventRangeEnd:
			rg := ev.Range()
			if rg.Name == "GC mark assist" {
				g := ev.Goroutine()
				if s, ok := assistSince[g]; ok {
					pt.assists = append(pt.assists, tailRegion{name: rg.Name, g: g, tailSpan: tailSpan{s, t}})
					delete(assistSince, g)
				}
				continue
			}
			s, ok := ranges[rg.Name]
			if !ok {
				continue
			}
			delete(ranges, rg.Name)
			switch {
			case rg.Name == "GC concurrent mark phase":
				pt.gcMark = append(pt.gcMark, tailSpan{s, t})
			case strings.HasPrefix(rg.Name, "stop-the-world"):
				pt.stw = append(pt.stw, tailSpan{s, t})
			}
		case exptrace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != exptrace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			if _, ok := pt.starts[g]; !ok || from == exptrace.GoNotExist {
				// The start function, and for a new goroutine where it
				// was started: wrappers such as sync.WaitGroup.Go start
				// many kinds of goroutines.
				// A goroutine that existed when the trace started
				// comes with its stack then.
				fn := outermost(st.Stack)
				for f := range st.Stack.Frames() {
					fn += " " + f.Func
				}
				if from == exptrace.GoNotExist {
					for f := range ev.Stack().Frames() {
						fn += " " + f.Func
					}
				}
				if fn != "" {
					pt.starts[g] = fn
				}
			}
			if prev, ok := since[g]; ok {
				prev.end = t
				pt.states = append(pt.states, prev)
			}
			next := goState{g: g, state: to, tailSpan: tailSpan{start: t}}
			if to == exptrace.GoWaiting {
				next.why = st.Reason
			}
			if to == exptrace.GoNotExist {
				delete(since, g)
			} else {
				since[g] = next
			}
		}
	}
	for _, s := range since {
		s.end = last
		pt.states = append(pt.states, s)
	}
	sort.Slice(pt.states, func(i, j int) bool { return pt.states[i].start < pt.states[j].start })
	return pt, nil
}

// outermost is the outermost frame's function of stk: a goroutine's start
// function when stk is its creation or status stack.
func outermost(stk exptrace.Stack) string {
	fn := ""
	for f := range stk.Frames() {
		fn = f.Func
	}
	return fn
}

// prepareBreakdown is where one timed prepare's time went.
type prepareBreakdown struct {
	wall time.Duration
	// phases are the driver's regions by name (lock, check, …);
	// beforeDriver and afterDriver are the time of the call outside
	// driver.RegionPrepare: gRPC, the helper's Get of the claim, and
	// after it the helper's device metadata files and the answer.
	phases                    map[string]time.Duration
	beforeDriver, afterDriver time.Duration
	// handler is the goroutine that ran driver.RegionPrepare: its time by
	// state while it did; client is the benchmark goroutine's, over the
	// whole call.
	handler, client map[string]time.Duration
	// gcMark, stw and assist: the GC's mark phase, stop-the-world pauses
	// and the handler's mark assists during the call.
	gcMark, stw, assist time.Duration
	// others is the CPU time other goroutines ran during the call, by
	// what they are.
	others map[string]time.Duration
	// otherFns is the CPU time of the goroutines of kind "other", by
	// start function.
	otherFns map[string]time.Duration
}

func (pt *prepareTrace) breakdowns() []prepareBreakdown {
	out := make([]prepareBreakdown, 0, len(pt.prepares))
	for _, p := range pt.prepares {
		b := prepareBreakdown{wall: p.end.Sub(p.start), phases: map[string]time.Duration{},
			handler: map[string]time.Duration{}, client: map[string]time.Duration{}, others: map[string]time.Duration{},
			otherFns: map[string]time.Duration{}}
		handler, driverSpan := exptrace.GoID(-1), tailSpan{}
		for _, r := range pt.regions {
			if r.end <= p.start || r.start >= p.end {
				continue
			}
			b.phases[r.name] += r.overlap(p.tailSpan)
			if r.name == driver.RegionPrepare {
				handler, driverSpan = r.g, r.tailSpan
			}
		}
		if handler >= 0 {
			b.beforeDriver = driverSpan.start.Sub(p.start)
			b.afterDriver = p.end.Sub(driverSpan.end)
		}
		for _, s := range pt.gcMark {
			b.gcMark += s.overlap(p.tailSpan)
		}
		for _, s := range pt.stw {
			b.stw += s.overlap(p.tailSpan)
		}
		for _, a := range pt.assists {
			if a.g == handler {
				b.assist += a.overlap(driverSpan)
			}
		}
		i := sort.Search(len(pt.states), func(i int) bool { return pt.states[i].start >= p.end })
		for _, s := range pt.states[:i] {
			if s.end <= p.start {
				continue
			}
			switch s.g {
			case handler:
				b.handler[stateName(s)] += s.overlap(driverSpan)
			case p.g:
				b.client[stateName(s)] += s.overlap(p.tailSpan)
			default:
				if s.state == exptrace.GoRunning || s.state == exptrace.GoSyscall {
					kind := pt.kindOf(s.g)
					b.others[kind] += s.overlap(p.tailSpan)
					if kind == "other" {
						fn, _, _ := strings.Cut(pt.starts[s.g], " ")
						b.otherFns[fn] += s.overlap(p.tailSpan)
					}
				}
			}
		}
		out = append(out, b)
	}
	return out
}

func stateName(s goState) string {
	switch s.state {
	case exptrace.GoRunning:
		return "running"
	case exptrace.GoRunnable:
		return "runnable"
	case exptrace.GoSyscall:
		return "syscall"
	case exptrace.GoWaiting:
		return "waiting"
	}
	return "other"
}

// kindOf names what a goroutine is by its start function and where it
// was started.
func (pt *prepareTrace) kindOf(g exptrace.GoID) string {
	fn := pt.starts[g]
	switch {
	case strings.HasPrefix(fn, "runtime.gcBgMarkWorker"):
		return "GC workers"
	case strings.Contains(fn, "/claimstatus."):
		return "status writer"
	case strings.Contains(fn, "google.golang.org/grpc"), strings.Contains(fn, "golang.org/x/net/http2"):
		return "gRPC"
	case strings.Contains(fn, "k8s.io/client-go"), strings.Contains(fn, "k8s.io/apimachinery"):
		return "client-go"
	case strings.HasPrefix(fn, "runtime."):
		return "runtime"
	}
	return "other"
}

// tailReport writes, for bs, the median of every column over all prepares
// and then each prepare of the slowest 1 % (at or above p99).
func tailReport(w io.Writer, bs []prepareBreakdown) {
	if len(bs) == 0 {
		fmt.Fprintln(w, "no prepares in the trace")
		return
	}
	type column struct {
		name string
		get  func(prepareBreakdown) time.Duration
	}
	others := map[string]bool{}
	for _, b := range bs {
		for k := range b.others {
			others[k] = true
		}
	}
	cols := []column{
		{"wall", func(b prepareBreakdown) time.Duration { return b.wall }},
		{"before", func(b prepareBreakdown) time.Duration { return b.beforeDriver }},
		{"lock", phase(driver.RegionPrepareLock)},
		{"check", phase(driver.RegionPrepareCheck)},
		{"cdi", phase(driver.RegionPrepareCDI)},
		{"ckpt", phase(driver.RegionPrepareCheckpoint)},
		{"after", func(b prepareBreakdown) time.Duration { return b.afterDriver }},
		{"h.run", state("handler", "running")},
		{"h.runnable", state("handler", "runnable")},
		{"h.syscall", state("handler", "syscall")},
		{"h.wait", state("handler", "waiting")},
		{"c.runnable", state("client", "runnable")},
		{"gc-mark", func(b prepareBreakdown) time.Duration { return b.gcMark }},
		{"stw", func(b prepareBreakdown) time.Duration { return b.stw }},
		{"assist", func(b prepareBreakdown) time.Duration { return b.assist }},
	}
	for _, k := range slices.Sorted(maps.Keys(others)) {
		cols = append(cols, column{"cpu:" + k, func(b prepareBreakdown) time.Duration { return b.others[k] }})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	row := func(label string, v func(column) time.Duration) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, c := range cols {
			fmt.Fprintf(tw, "%.2f\t", float64(v(c))/1e6)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "ms\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprintln(tw)
	row("median", func(c column) time.Duration {
		vs := make([]time.Duration, 0, len(bs))
		for _, b := range bs {
			vs = append(vs, c.get(b))
		}
		return percentile(vs, 50)
	})
	sorted := slices.Clone(bs)
	slices.SortFunc(sorted, func(a, b prepareBreakdown) int { return int(b.wall - a.wall) })
	slow := max(1, len(sorted)-(len(sorted)-1)*99/100)
	for i, b := range sorted[:slow] {
		row(fmt.Sprintf("#%d", i+1), func(c column) time.Duration { return c.get(b) })
	}
	tw.Flush()
	var gc, stw, syscall, runnable, busy, driverPhases int
	for _, b := range sorted[:slow] {
		if b.gcMark > 0 {
			gc++
		}
		if b.stw > 0 {
			stw++
		}
		if b.handler["syscall"] > b.wall/2 {
			syscall++
		}
		if b.handler["runnable"]+b.client["runnable"] > b.wall/4 {
			runnable++
		}
		var o time.Duration
		for _, d := range b.others {
			o += d
		}
		if o > b.wall/2 {
			busy++
		}
		if b.phases[driver.RegionPrepare] > b.wall/2 {
			driverPhases++
		}
	}
	fns := map[string]time.Duration{}
	for _, b := range sorted[:slow] {
		for fn, d := range b.otherFns {
			fns[fn] += d
		}
	}
	top := slices.SortedFunc(maps.Keys(fns), func(a, b string) int { return int(fns[b] - fns[a]) })
	for i, fn := range top[:min(5, len(top))] {
		fmt.Fprintf(w, "cpu:other in the slowest, #%d: %s %.2f ms\n", i+1, fn, float64(fns[fn])/1e6)
	}
	fmt.Fprintf(w, "slowest %d of %d: overlapping a GC mark phase %d, a stop-the-world %d; handler in system calls > 1/2 of the call %d; "+
		"handler and client waiting for a P > 1/4 %d; other goroutines' CPU > 1/2 %d; driver's own part > 1/2 %d\n",
		slow, len(bs), gc, stw, syscall, runnable, busy, driverPhases)
}

// candidateReport splits the prepares by each candidate cause of the
// tail and writes the median and p99 of each side: a cause that does
// not slow the prepares it touches is ruled out, within one run (one
// load) whatever the machine does. It also says how many GC cycles ran
// and how long their mark phases and pauses were.
func candidateReport(w io.Writer, pt *prepareTrace, bs []prepareBreakdown) {
	candidates := []struct {
		name string
		in   func(prepareBreakdown) bool
	}{
		{"overlaps a GC mark phase", func(b prepareBreakdown) bool { return b.gcMark > 0 }},
		{"overlaps a stop-the-world pause", func(b prepareBreakdown) bool { return b.stw > 0 }},
		{"handler did GC mark assists", func(b prepareBreakdown) bool { return b.assist > 0 }},
		{"status writer ran meanwhile", func(b prepareBreakdown) bool { return b.others["status writer"] > 0 }},
		{"waited for the driver's lock > 0.1 ms", func(b prepareBreakdown) bool { return b.phases[driver.RegionPrepareLock] > 100*time.Microsecond }},
		{"handler or client waited for a P > 0.1 ms", func(b prepareBreakdown) bool {
			return b.handler["runnable"]+b.client["runnable"] > 100*time.Microsecond
		}},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "prepares that …\tn\tp50 ms\tp99 ms\tothers: n\tp50 ms\tp99 ms\t")
	for _, c := range candidates {
		var in, out []time.Duration
		for _, b := range bs {
			if c.in(b) {
				in = append(in, b.wall)
			} else {
				out = append(out, b.wall)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", c.name, stats(in), stats(out))
	}
	tw.Flush()
	var marks, pauses []time.Duration
	for _, s := range pt.gcMark {
		marks = append(marks, s.end.Sub(s.start))
	}
	for _, s := range pt.stw {
		pauses = append(pauses, s.end.Sub(s.start))
	}
	var goal uint64
	if len(pt.heapGoals) > 0 {
		goal = slices.Max(pt.heapGoals)
	}
	fmt.Fprintf(w, "GC: %d mark phases (p50 / max %s / %s ms), %d stop-the-world pauses (p50 / max %s / %s ms), heap goal up to %.1f MiB\n",
		len(marks), ms(marks, 50), ms(marks, 100), len(pauses), ms(pauses, 50), ms(pauses, 100), float64(goal)/(1<<20))
}

func stats(d []time.Duration) string {
	return fmt.Sprintf("%d\t%s\t%s", len(d), ms(d, 50), ms(d, 99))
}

func ms(d []time.Duration, p float64) string {
	if len(d) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(percentile(d, p))/1e6)
}

func phase(name string) func(prepareBreakdown) time.Duration {
	return func(b prepareBreakdown) time.Duration { return b.phases[name] }
}

func state(who, s string) func(prepareBreakdown) time.Duration {
	return func(b prepareBreakdown) time.Duration {
		if who == "handler" {
			return b.handler[s]
		}
		return b.client[s]
	}
}

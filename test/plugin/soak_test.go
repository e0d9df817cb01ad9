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
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
)

// Replaying a soak run: the seed is logged; these variables set it and
// the number of cycles.
const (
	soakSeedEnv   = "ACCEL_DRA_SOAK_SEED"
	soakCyclesEnv = "ACCEL_DRA_SOAK_CYCLES"
)

// The soak node: one agent serving both vendors (mixed-910b-mlu370, 4
// chips each), chip 0 Whole, chips 1 and 2 Partitioned (whole or as
// vNPUs / sMLUs), chip 3 Shared, so every kind of device is on offer.
const (
	soakProfile   = "mixed-910b-mlu370"
	soakChipModes = "Partitioned,npu-0=Whole,mlu-0=Whole,npu-3=Shared,mlu-3=Shared"
)

// Rates of the soak's random events. A start of the agent costs about
// 0.1 s before both drivers serve (they start side by side), a call a
// millisecond or two.
const (
	soakRestartsPer1000 = 20 // restarts between calls per 1000 cycles, half SIGTERM, half SIGKILL …
	soakArmedPer6       = 4  // … of 6 restarts, this many arm a failpoint for the next start
	soakRearmEvery      = 4  // after a failpoint killed a call, 1 in this many restarts arms another
	soakCheckEvery      = 10 // a consistency check after 1 in this many steps
	soakReprepEvery     = 40 // a repeated prepare of a prepared claim (the kubelet restarted)
	soakPodOf2Every     = 8  // a pod with two claims, prepared and unprepared in one call per driver
	soakMinLive         = 2  // claims kept prepared at once, at least …
	soakMaxLive         = 6  // … and at most
)

var soakFailpoints = []string{
	failpoint.PartitionCreated, failpoint.PrepareBeforeCDI, failpoint.PrepareAfterCDI, failpoint.PrepareAfterCheckpoint,
	failpoint.UnprepareAfterCDI, failpoint.UnprepareBeforeCheckpoint,
}

// TestSoak runs 1000 cycles, each the prepare and the unprepare of one
// claim, over random mixed claims (whole chips, several chips, vNPUs and
// sMLUs, shares, of one vendor or both) on one node agent that is now and
// then stopped (SIGTERM), killed between calls (SIGKILL) or killed inside a
// prepare or unprepare (a failpoint armed at its start). The test plays
// the scheduler (it allocates only devices free in its model of the
// node's ResourceSlices) and the kubelet (a call that failed because the
// agent died is retried after the restart until it succeeds). At random
// points and at the end the checkpoint, the CDI specs and the partitions
// equal what the kubelet believes is prepared; at the end nothing is left
// but empty state.
func TestSoak(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(soakSeedEnv); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "%s", soakSeedEnv)
	}
	cycles := 1000
	if testing.Short() {
		cycles = 200
	}
	if v := os.Getenv(soakCyclesEnv); v != "" {
		var err error
		cycles, err = strconv.Atoi(v)
		require.NoError(t, err, "%s", soakCyclesEnv)
	}
	t.Logf("soak seed %d, %d cycles; replay with %s=%d", seed, cycles, soakSeedEnv, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("soak seed %d failed; replay with %s=%d", seed, soakSeedEnv, seed)
		}
	})

	began := time.Now()
	s := newSoak(t, rand.New(rand.NewPCG(seed, 0)))
	s.planRestarts(cycles)
	s.a.start("")
	s.starts++
	root := files(t, s.a.cfg.Root)
	for s.done < cycles {
		s.step(s.created < cycles)
	}
	require.Empty(t, s.plan, "every planned restart happened")
	require.Empty(t, s.live, "every claim is unprepared")
	s.check("at the end")
	s.a.stop()

	// Nothing leaked: no CDI spec nor temporary file, only the checkpoint
	// (without claims) and the fake tool's state (without partitions) in
	// each driver's state directory, no partition device node in the root.
	require.Empty(t, files(t, s.a.cfg.CDIDir), "the CDI directory")
	var wantState []string
	for _, v := range s.vendors {
		d := filepath.Join(s.a.cfg.StateDir, registry.DriverFor(v))
		wantState = append(wantState, filepath.Join(d, driver.CheckpointFile))
		if s.kinds[string(v)+" partition"] > 0 {
			wantState = append(wantState, filepath.Join(d, profilenode.PartitionStateFile))
		}
	}
	// What the agent, serving every vendor, tells the node's other agents
	// of the vendor runtimes it looked for.
	for _, x := range registry.All() {
		if x.CDI().Runtime != nil {
			wantState = append(wantState, cdi.RuntimeFindingFile(s.a.cfg.StateDir, x))
		}
	}
	require.ElementsMatch(t, wantState, slices.Collect(maps.Keys(files(t, s.a.cfg.StateDir))), "the state directory holds no temporary or set-aside file")
	for _, v := range s.vendors {
		st := s.a.requireConsistent(v, nil, "at the end")
		require.Empty(t, st.partitions, "%s: partitions at the end", v)
	}
	require.Equal(t, root, files(t, s.a.cfg.Root), "the fake root is as the agent made it: no partition device node left")

	s.requireCoverage(cycles)
	t.Logf("soak: %d cycles in %v: %d prepare and %d unprepare calls, %d repeated prepares, %d agent starts (%d after SIGTERM, %d after SIGKILL, %d after a failpoint killed a call: %v), %d consistency checks; claims: %v",
		s.done, time.Since(began).Round(time.Millisecond), s.prepareCalls, s.unprepareCalls, s.reprepares, s.starts,
		s.restarts[syscall.SIGTERM], s.restarts[syscall.SIGKILL], s.killed, s.killedAt, s.checks, s.kinds)
}

// soakKind is a kind of allocated device.
type soakKind int

const (
	kindWhole soakKind = iota
	kindPartition
	kindShare
)

// soakDevice is a device of the node's ResourceSlices as the scheduler
// sees it.
type soakDevice struct {
	vendor inventory.Vendor
	name   string
	kind   soakKind
	// consumes are the counters it takes from its chip's counter set.
	counterSet string
	consumes   map[string]int64
	// memory is a shared chip's memory, handed out in shares; on a chip
	// whose shares are vNPUs, its units (sizes: the valid ones).
	memory int64
	sizes  []int64
}

// soakPick is one allocated device of a claim; share is the memory (or
// the units) of a share of a shared chip.
type soakPick struct {
	dev   *soakDevice
	share int64
}

type soakClaim struct {
	obj   *resourceapi.ResourceClaim
	picks []soakPick
}

// picksOf are the claim's devices of vendor v, in allocation order.
func (c *soakClaim) picksOf(v inventory.Vendor) []soakPick {
	var out []soakPick
	for _, p := range c.picks {
		if p.dev.vendor == v {
			out = append(out, p)
		}
	}
	return out
}

// devicesOf are the names of picksOf(v).
func (c *soakClaim) devicesOf(v inventory.Vendor) []string {
	var out []string
	for _, p := range c.picksOf(v) {
		out = append(out, p.dev.name)
	}
	return out
}

func (c *soakClaim) vendors() []inventory.Vendor {
	var out []inventory.Vendor
	for _, p := range c.picks {
		if !slices.Contains(out, p.dev.vendor) {
			out = append(out, p.dev.vendor)
		}
	}
	slices.Sort(out)
	return out
}

// soak is the scheduler's and the kubelet's view of the node, and the run's
// counts.
type soak struct {
	t       *testing.T
	a       *agent
	rng     *rand.Rand
	vendors []inventory.Vendor

	// The scheduler: the devices of the node's slices, the counters left
	// in each counter set (by vendor and set), the exclusive devices
	// taken and the memory left on shared chips.
	devices   []*soakDevice
	counters  map[inventory.Vendor]map[string]map[string]int64
	taken     map[*soakDevice]bool
	shareLeft map[*soakDevice]int64
	// released are the partition devices of the last unprepared claim, to
	// hand out again soon.
	released []*soakDevice

	// The kubelet: claims whose prepare returned success on each of
	// their drivers, not yet unprepared.
	live []*soakClaim
	// prepared[v] are the claims the kubelet believes prepared by v's driver.
	prepared map[inventory.Vendor]map[types.UID]*soakClaim
	// armed is the failpoint of the running agent, "" for none.
	armed string
	// plan are the restarts to come, in order; points are the failpoints
	// they arm, in turn. ops counts the prepares and unprepares of claims.
	cycles, ops int
	plan        []soakRestart
	points      []string

	created, done                            int
	prepareCalls, unprepareCalls, reprepares int
	starts, killed, checks                   int
	restarts                                 map[syscall.Signal]int
	killedAt                                 map[string]int
	kinds                                    map[string]int
}

func newSoak(t *testing.T, rng *rand.Rand) *soak {
	t.Helper()
	a := newAgent(t, soakProfile, soakChipModes)
	a.onTmpfs()
	s := &soak{t: t, a: a, rng: rng, vendors: a.vendors,
		counters: map[inventory.Vendor]map[string]map[string]int64{}, taken: map[*soakDevice]bool{}, shareLeft: map[*soakDevice]int64{},
		prepared: map[inventory.Vendor]map[types.UID]*soakClaim{},
		restarts: map[syscall.Signal]int{}, killedAt: map[string]int{}, kinds: map[string]int{}}
	inv := a.inv
	policy, err := partitions.ParsePolicy(registry, soakChipModes)
	require.NoError(t, err)
	// The same devices and counter sets the agent publishes.
	for _, v := range s.vendors {
		s.prepared[v] = map[types.UID]*soakClaim{}
		s.counters[v] = map[string]map[string]int64{}
		devices, sets := resourceslices.DevicesFor(registry, inv, v, resourceslices.Options{Policy: policy})
		for _, cs := range sets {
			s.counters[v][cs.Name] = quantities(cs.Counters)
		}
		for _, d := range devices {
			sd := &soakDevice{vendor: v, name: d.Name}
			switch {
			case d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations:
				sd.kind = kindShare
				mem := d.Capacity[names.CapMemory]
				sd.memory = mem.Value.Value()
				if u, ok := d.Capacity[names.CapShareUnits]; ok {
					// Shares are vNPUs of a template's units (docs/partitions.md).
					sd.memory = u.Value.Value()
					for _, q := range u.RequestPolicy.ValidValues {
						sd.sizes = append(sd.sizes, q.Value())
					}
				}
				s.shareLeft[sd] = sd.memory
			case *d.Attributes[names.AttrType].StringValue != names.TypeChip:
				sd.kind = kindPartition
			}
			for _, cc := range d.ConsumesCounters {
				sd.counterSet, sd.consumes = cc.CounterSet, quantities(cc.Counters)
			}
			s.devices = append(s.devices, sd)
		}
	}
	return s
}

func quantities(c map[string]resourceapi.Counter) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		out[k] = v.Value.Value()
	}
	return out
}

// soakRestart is a restart between calls: after how many prepares and
// unprepares of claims, by which signal, arming a failpoint or not.
type soakRestart struct {
	op  int
	sig syscall.Signal
	arm bool
}

// planRestarts spreads the restarts of a run over its 2 × cycles
// prepares and unprepares of claims (the last step does one or two), so a
// run of any seed has both signals and failpoints armed, each failpoint
// in turn.
func (s *soak) planRestarts(cycles int) {
	s.cycles = cycles
	n := max(2, soakRestartsPer1000*cycles/1000)
	armed := max(1, soakArmedPer6*n/6)
	for i := range n {
		r := soakRestart{op: 1 + s.rng.IntN(2*cycles-2), sig: syscall.SIGTERM, arm: i < armed}
		if i%2 == 1 {
			r.sig = syscall.SIGKILL
		}
		s.plan = append(s.plan, r)
	}
	s.rng.Shuffle(len(s.plan), func(i, j int) { s.plan[i].sig, s.plan[j].sig = s.plan[j].sig, s.plan[i].sig })
	slices.SortStableFunc(s.plan, func(a, b soakRestart) int { return a.op - b.op })
	s.points = slices.Clone(soakFailpoints)
	s.rng.Shuffle(len(s.points), func(i, j int) { s.points[i], s.points[j] = s.points[j], s.points[i] })
}

// step is one prepare of a new claim (if create and the node has room)
// or one unprepare, with now and then a restart before it, a repeated
// prepare and a consistency check after it.
func (s *soak) step(create bool) {
	for len(s.plan) > 0 && s.plan[0].op <= s.ops {
		s.restart(s.plan[0])
		s.plan = s.plan[1:]
	}
	// A pod has one claim, now and then two: the kubelet prepares (and
	// unprepares) a pod's claims of one driver in one call.
	want := 1
	if s.rng.IntN(soakPodOf2Every) == 0 {
		want = 2
	}
	n := len(s.live)
	var pod []*soakClaim
	if create && (n < soakMinLive || n < soakMaxLive && s.rng.IntN(2) == 0) {
		for len(pod) < want && s.created < s.cycles {
			c := s.allocate()
			if c == nil {
				break
			}
			pod = append(pod, c)
		}
	}
	if len(pod) > 0 {
		s.prepare(pod)
	} else if n > 0 {
		for _, k := range s.rng.Perm(n)[:min(want, n)] {
			pod = append(pod, s.live[k])
		}
		s.unprepare(pod)
	}
	if len(s.live) > 0 && s.rng.IntN(soakReprepEvery) == 0 {
		// A restarted kubelet prepares the claims of its running pods
		// again: the same answer, nothing changes.
		s.reprepares++
		s.prepareOn([]*soakClaim{s.live[s.rng.IntN(len(s.live))]})
	}
	if s.rng.IntN(soakCheckEvery) == 0 {
		s.check(fmt.Sprintf("after %d cycles", s.done))
	}
}

// restart stops the agent between calls with SIGTERM or SIGKILL and
// starts it again, maybe with a failpoint armed that kills it inside a
// later prepare or unprepare.
func (s *soak) restart(r soakRestart) {
	s.restarts[r.sig]++
	if r.sig == syscall.SIGTERM {
		s.a.stop()
	} else {
		require.NoError(s.t, s.a.cmd.Process.Signal(syscall.SIGKILL))
		s.a.waitKilled()
	}
	s.start(r.arm)
	s.check(fmt.Sprintf("after a restart (%s) at %d cycles", r.sig, s.done))
}

// start starts the agent, with the next failpoint armed if arm.
func (s *soak) start(arm bool) {
	s.armed = ""
	fp := ""
	if arm {
		s.armed = s.points[0]
		s.points = append(s.points[1:], s.armed)
		fp = s.armed + "=" + string(failpoint.Kill)
	}
	s.a.start(fp)
	s.starts++
}

// call makes one kubelet call until it succeeds: an error of the call
// itself means the agent died (at the armed failpoint); the kubelet
// retries once the agent is back, which may die again at a failpoint
// armed anew.
func (s *soak) call(what string, f func() error) {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return
		}
		if status.Code(err) == codes.Unavailable && s.a.alive(2*time.Second) {
			// The agent is up: the connection broke on the way (seen on a
			// fresh connection to an agent just started on a loaded
			// machine), which the kubelet retries as well.
			require.Less(s.t, attempt, 20, "%s keeps failing: %v", what, err)
			s.t.Logf("%s: the agent runs, retrying a call that did not get through: %v", what, err)
			continue
		}
		require.NotEmpty(s.t, s.armed, "%s failed with no failpoint armed: %v", what, err)
		require.Less(s.t, attempt, 20, "%s keeps failing: %v", what, err)
		s.a.waitKilled()
		s.killed++
		s.killedAt[s.armed]++
		s.start(s.rng.IntN(soakRearmEvery) == 0)
	}
}

// allocate picks a new claim's devices among those free in the model, as
// the scheduler would, and takes them; nil if nothing fits. A claim has
// one to three devices of one vendor or of both, each a whole chip, a
// partition or a share; half of the time one is a partition the last
// unprepared claim released.
func (s *soak) allocate() *soakClaim {
	pick := []inventory.Vendor{s.vendors[s.rng.IntN(len(s.vendors))]}
	if s.rng.IntN(5) == 0 {
		pick = s.vendors
	}
	c := &soakClaim{}
	chosen := map[*soakDevice]bool{}
	reused := false
	if len(s.released) > 0 && s.rng.IntN(2) == 0 {
		for _, d := range s.released {
			if s.fits(d, 0) {
				s.choose(c, chosen, soakPick{dev: d})
				reused = true
				break
			}
		}
	}
	for want := 1 + s.rng.IntN(3); len(c.picks) < want; {
		v := pick[len(c.picks)%len(pick)]
		p, ok := s.pick(v, chosen)
		if !ok {
			break
		}
		s.choose(c, chosen, p)
	}
	if len(c.picks) == 0 {
		return nil
	}
	s.released = nil
	s.created++
	uid := types.UID(fmt.Sprintf("uid-soak-%d", s.created))
	c.obj = &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("soak-%d", s.created), UID: uid},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
	}
	for i, p := range c.picks {
		r := resourceapi.DeviceRequestAllocationResult{Request: fmt.Sprintf("req-%d", i), Driver: registry.DriverFor(p.dev.vendor), Pool: nodeName, Device: p.dev.name}
		if p.dev.kind == kindShare {
			share := types.UID(fmt.Sprintf("%s-share-%d", uid, i))
			r.ShareID = &share
			r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
				names.CapMemory: *resource.NewQuantity(p.share, resource.BinarySI),
				names.CapCores:  *resource.NewQuantity(0, resource.DecimalSI),
			}
			if p.dev.sizes != nil {
				r.ConsumedCapacity[names.CapMemory] = *resource.NewQuantity(0, resource.BinarySI)
				r.ConsumedCapacity[names.CapShareUnits] = *resource.NewQuantity(p.share, resource.DecimalSI)
			}
		}
		c.obj.Status.Allocation.Devices.Results = append(c.obj.Status.Allocation.Devices.Results, r)
	}
	s.count(c, reused)
	return c
}

// choose adds p to c and takes its device at once, so the claim's next
// pick sees what this one consumed (a whole chip and one of its
// partitions never go together).
func (s *soak) choose(c *soakClaim, chosen map[*soakDevice]bool, p soakPick) {
	c.picks = append(c.picks, p)
	chosen[p.dev] = true
	s.take(p, 1)
}

// pick chooses a kind of device that has a free one of vendor v, then one
// of those, not one in chosen.
func (s *soak) pick(v inventory.Vendor, chosen map[*soakDevice]bool) (soakPick, bool) {
	free := map[soakKind][]soakPick{}
	for _, d := range s.devices {
		if d.vendor != v || chosen[d] {
			continue
		}
		share := int64(0)
		if d.kind == kindShare {
			// 1, 2, 4 or 8 GiB, now and then all of the memory (a claim
			// asking for no capacity gets the request policy's default).
			share = int64(1) << (30 + s.rng.IntN(4))
			if d.sizes != nil {
				share = d.sizes[s.rng.IntN(len(d.sizes))]
			}
			if s.rng.IntN(10) == 0 {
				share = d.memory
			}
		}
		if s.fits(d, share) {
			free[d.kind] = append(free[d.kind], soakPick{dev: d, share: share})
		}
	}
	var kinds []soakKind
	for k := range free {
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return soakPick{}, false
	}
	slices.Sort(kinds) // map order is not the seed's
	options := free[kinds[s.rng.IntN(len(kinds))]]
	return options[s.rng.IntN(len(options))], true
}

// fits says whether device d (with share memory of a shared chip) is free.
func (s *soak) fits(d *soakDevice, share int64) bool {
	switch {
	case d.kind == kindShare:
		return s.shareLeft[d] >= share
	case s.taken[d]:
		return false
	}
	left := s.counters[d.vendor][d.counterSet]
	for k, n := range d.consumes {
		if left[k] < n {
			return false
		}
	}
	return true
}

// take takes (sign 1) or gives back (sign -1) one allocated device.
func (s *soak) take(p soakPick, sign int64) {
	if p.dev.kind == kindShare {
		s.shareLeft[p.dev] -= sign * p.share
		return
	}
	s.taken[p.dev] = sign > 0
	for k, n := range p.dev.consumes {
		s.counters[p.dev.vendor][p.dev.counterSet][k] -= sign * n
	}
}

// count records what kind of claim c is, for the coverage check.
func (s *soak) count(c *soakClaim, reused bool) {
	whole := 0
	for _, p := range c.picks {
		switch p.dev.kind {
		case kindWhole:
			whole++
			s.kinds["whole chip"]++
		case kindPartition:
			s.kinds[string(p.dev.vendor)+" partition"]++
		case kindShare:
			s.kinds[string(p.dev.vendor)+" share"]++
		}
	}
	if whole > 1 {
		s.kinds["several whole chips"]++
	}
	if len(c.vendors()) > 1 {
		s.kinds["both vendors"]++
	}
	if reused {
		s.kinds["reused a released partition"]++
	}
}

// requireCoverage asserts that a full run had claims of every kind.
func (s *soak) requireCoverage(cycles int) {
	if cycles < 1000 {
		return
	}
	for _, k := range []string{"whole chip", "several whole chips", "both vendors", "reused a released partition", "pods of two claims",
		"huawei partition", "cambricon partition", "huawei share", "cambricon share"} {
		require.Positive(s.t, s.kinds[k], "claims of kind %q", k)
	}
	require.Positive(s.t, s.restarts[syscall.SIGTERM], "restarts after SIGTERM")
	require.Positive(s.t, s.restarts[syscall.SIGKILL], "restarts after SIGKILL")
	require.Positive(s.t, s.killed, "calls killed at a failpoint")
}

// prepare prepares a pod's new claims on each of their drivers.
func (s *soak) prepare(pod []*soakClaim) {
	for _, c := range pod {
		s.a.addClaim(c.obj)
	}
	s.prepareOn(pod)
	for _, c := range pod {
		for _, v := range c.vendors() {
			s.prepared[v][c.obj.UID] = c
		}
	}
	s.live = append(s.live, pod...)
	s.ops += len(pod)
	if len(pod) > 1 {
		s.kinds["pods of two claims"]++
	}
}

// prepareOn calls NodePrepareResources of each driver of the pod's claims
// until it succeeds, and checks the CDI device IDs it answers.
func (s *soak) prepareOn(pod []*soakClaim) {
	s.onEachDriver("prepare", pod, func(v inventory.Vendor, claims []*soakClaim, what string) error {
		s.prepareCalls++
		resp, err := s.a.prepare(registry.DriverFor(v), objsOf(claims)...)
		if err != nil {
			return err
		}
		for i, r := range answers(s.t, what, resp, claims) {
			c := claims[i]
			var ids []string
			for _, d := range r.Devices {
				ids = append(ids, d.CdiDeviceIds...)
			}
			require.Equal(s.t, cdiIDs(v, c.obj.UID, c.devicesOf(v)...), ids, "%s: the CDI device IDs of the contract for %s", what, c.obj.UID)
		}
		return nil
	})
}

// unprepare unprepares a pod's claims on each of their drivers, as the
// kubelet does once the pod is gone; the scheduler then frees their
// devices.
func (s *soak) unprepare(pod []*soakClaim) {
	s.onEachDriver("unprepare", pod, func(v inventory.Vendor, claims []*soakClaim, what string) error {
		s.unprepareCalls++
		resp, err := s.a.unprepare(registry.DriverFor(v), objsOf(claims)...)
		if err != nil {
			return err
		}
		answers(s.t, what, resp, claims)
		for _, c := range claims {
			delete(s.prepared[v], c.obj.UID)
		}
		return nil
	})
	s.released = nil
	for _, c := range pod {
		s.live = slices.DeleteFunc(s.live, func(l *soakClaim) bool { return l == c })
		for _, p := range c.picks {
			s.take(p, -1)
			if p.dev.kind == kindPartition {
				s.released = append(s.released, p.dev)
			}
		}
		require.NoError(s.t, os.Remove(claimFile(s.a.cfg.ClaimsDir, c.obj.Namespace, c.obj.Name)))
	}
	s.done += len(pod)
	s.ops += len(pod)
	if len(pod) > 1 {
		s.kinds["pods of two claims"]++
	}
}

// onEachDriver makes one kubelet call (through call) per driver of the
// pod's claims, with its claims, as the kubelet does for a pod: f makes
// the call and checks the answers.
func (s *soak) onEachDriver(verb string, pod []*soakClaim, f func(v inventory.Vendor, claims []*soakClaim, what string) error) {
	for _, v := range s.vendors {
		claims := claimsOn(v, pod)
		if len(claims) == 0 {
			continue
		}
		what := fmt.Sprintf("%s of %s on %s", verb, uidsOf(objsOf(claims)...), v)
		s.call(what, func() error { return f(v, claims, what) })
	}
}

// answers are a call's answers for claims, in order: one each, none an
// error (the devices the test allocates are free).
func answers[R interface{ GetError() string }](t *testing.T, what string, resp map[string]R, claims []*soakClaim) []R {
	t.Helper()
	require.Len(t, resp, len(claims), "%s: an answer for each claim", what)
	out := make([]R, len(claims))
	for i, c := range claims {
		r, ok := resp[string(c.obj.UID)]
		require.True(t, ok, "%s: an answer for claim %s", what, c.obj.UID)
		require.Empty(t, r.GetError(), "%s: claim %s", what, c.obj.UID)
		out[i] = r
	}
	return out
}

// claimsOn are the claims of pod with devices of vendor v.
func claimsOn(v inventory.Vendor, pod []*soakClaim) []*soakClaim {
	var out []*soakClaim
	for _, c := range pod {
		if slices.Contains(c.vendors(), v) {
			out = append(out, c)
		}
	}
	return out
}

func objsOf(claims []*soakClaim) []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, len(claims))
	for i, c := range claims {
		out[i] = c.obj
	}
	return out
}

// check asserts that each driver's state is what the kubelet believes:
// the checkpoint lists exactly the claims prepared on it, with their
// devices and CDI device IDs; each has its CDI spec and no other claim
// has one; the partitions on the chips are exactly those the checkpoint
// records for the prepared partition devices.
func (s *soak) check(when string) {
	s.t.Helper()
	s.checks++
	for _, v := range s.vendors {
		var want []types.UID
		for uid := range s.prepared[v] {
			want = append(want, uid)
		}
		st := s.a.requireConsistent(v, want, when)
		require.ElementsMatch(s.t, want, st.specs, "%s: the CDI specs %s", v, when)
		recorded := map[[2]int]bool{}
		for uid, c := range s.prepared[v] {
			entry := st.checkpoint.Claims[uid]
			var devices, ids []string
			for _, d := range entry.Devices {
				devices = append(devices, d.Device)
				ids = append(ids, d.CDIDeviceIDs...)
				if d.Partition != nil {
					recorded[[2]int{d.Partition.Chip, d.Partition.ID}] = true
				}
			}
			require.Equal(s.t, c.devicesOf(v), devices, "%s: the devices of %s in the checkpoint %s", v, uid, when)
			require.Equal(s.t, cdiIDs(v, uid, c.devicesOf(v)...), ids, "%s: the CDI device IDs of %s in the checkpoint %s", v, uid, when)
			for i, p := range c.picksOf(v) {
				d := entry.Devices[i]
				what := fmt.Sprintf("%s: device %d (%s) of %s in the checkpoint %s", v, i, d.Device, uid, when)
				switch p.dev.kind {
				case kindPartition:
					require.NotNil(s.t, d.Partition, "%s: its partition", what)
					require.Nil(s.t, d.Share, what)
				case kindShare:
					require.NotNil(s.t, d.Share, "%s: its share", what)
					if p.dev.sizes != nil {
						// A vNPU unless it is the whole chip.
						units := d.Share.Consumed[string(names.CapShareUnits)]
						require.Equal(s.t, p.share, units.Value(), "%s: the units of its share", what)
						require.Equal(s.t, p.share < p.dev.memory, d.Partition != nil, "%s: a vNPU unless the whole chip", what)
						break
					}
					require.Nil(s.t, d.Partition, what)
					mem := d.Share.Consumed[string(names.CapMemory)]
					require.Equal(s.t, p.share, mem.Value(), "%s: the memory of its share", what)
				default:
					require.Nil(s.t, d.Partition, what)
					require.Nil(s.t, d.Share, what)
				}
			}
		}
		made := map[[2]int]bool{}
		for _, p := range st.partitions {
			made[[2]int{p.Chip, p.ID}] = true
		}
		require.Equal(s.t, recorded, made, "%s: the partitions on the chips are those of the prepared claims %s", v, when)
	}
}

// onTmpfs moves the node's directories (fake root, CDI and state) of an
// agent not yet started to a tmpfs, where there is one: the checkpoint's
// fsyncs then cost nothing, which is most of a call's time on a disk. A
// killed process loses nothing its page cache holds, so the soak's crashes
// are the same on either; what fsync guards against, a power loss, no test
// here can cause.
func (a *agent) onTmpfs() {
	a.t.Helper()
	require.Nil(a.t, a.cmd, "the agent is already running")
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return
	}
	dir, err := os.MkdirTemp("/dev/shm", "adra-soak-")
	require.NoError(a.t, err)
	a.t.Cleanup(func() { os.RemoveAll(dir) })
	a.cfg.Root, a.cfg.CDIDir, a.cfg.StateDir = filepath.Join(dir, "root"), filepath.Join(dir, "cdi"), filepath.Join(dir, "state")
}

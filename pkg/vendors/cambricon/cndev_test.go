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

package cambricon

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/nativetest"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// TestCNDevStructLayoutMatchesTheHeader compiles testdata/cndev/layout.c
// against our cndev.h and compares the size of every struct and the offset
// of every field it prints with the Go mirrors.
func TestCNDevStructLayoutMatchesTheHeader(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "layout")
	cndevtest.Compile(t, "-o", bin, "layout.c")
	out, err := nativetest.Command(t, bin).Output()
	require.NoError(t, err)

	mirrors := map[string]any{
		"cndevCardInfo_t": cndevCardInfo{}, "cndevUUID_t": cndevUUID{}, "cndevMemoryInfoV2_t": cndevMemoryInfoV2{},
		"cndevVersionInfo_t": cndevVersionInfo{}, "cndevCardCoreCount_t": cndevCardCoreCount{},
		"cndevCardHealthState_t": cndevCardHealthState{}, "cndevPCIeInfoV2_t": cndevPCIeInfoV2{},
		"cndevCardHealthStateV2_t": cndevCardHealthStateV2{}, "cndevIncidentInfo_t": cndevIncidentInfo{},
		"cndevDiagErrorDetail_t": cndevDiagErrorDetail{},
		"cndevMLULinkStatusV2_t": cndevMLULinkStatusV2{}, "cndevMLULinkRemoteInfo_t": cndevMLULinkRemoteInfo{},
		"cndevSMLUMode_t": cndevSMLUMode{}, "cndevSMluInfo_t": cndevSMluInfo{},
		"cndevSMluProfileIdInfo_t": cndevSMluProfileIDInfo{}, "cndevSMluProfileInfo_t": cndevSMluProfileInfo{},
		"cndevSMluSet_t":         cndevSMluSet{},
		"cndevDevicePowerInfo_t": cndevDevicePowerInfo{}, "cndevTemperatureInfo_t": cndevTemperatureInfo{},
		"cndevUtilizationInfo_t": cndevUtilizationInfo{},
	}
	checked := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, num, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, sc.Text())
		want, err := strconv.ParseUint(num, 10, 64)
		require.NoError(t, err)
		typ, field, isField := strings.Cut(name, ".")
		m, ok := mirrors[typ]
		require.True(t, ok, "no Go mirror of %s", typ)
		rt := reflect.TypeOf(m)
		if !isField {
			require.Equal(t, want, uint64(rt.Size()), "sizeof(%s)", typ)
			checked[typ] = true
			continue
		}
		goName := strings.ToUpper(field[:1]) + field[1:]
		goName = strings.NewReplacer("Id", "ID", "Uuid", "UUID", "Ip", "IP", "_name", "Name", "_addr", "Addr").Replace(goName)
		switch field { // names the replacer cannot guess
		case "uuid":
			goName = "UUID"
		case "ncsUUID64":
			goName = "NcsUUID64"
		case "incident_count":
			goName = "IncidentCount"
		}
		f, ok := rt.FieldByName(goName)
		require.True(t, ok, "%s has no field %s (for %s)", rt, goName, name)
		require.Equal(t, want, uint64(f.Offset), "offsetof(%s)", name)
	}
	require.Len(t, checked, len(mirrors), "layout.c prints every mirrored struct")
	require.Equal(t, uintptr(4), unsafe.Sizeof(int32(0)))
}

// mockNode points the mock at a fixture and returns the built library
// (cflags: cndevtest.Build's).
func mockNode(t *testing.T, fixture string, cflags ...string) string {
	t.Setenv(cndevtest.EnvFixture, fixture)
	t.Setenv(cndevtest.EnvState, filepath.Join(t.TempDir(), "smlu-state"))
	t.Setenv(cndevtest.EnvRoot, "")
	return cndevtest.Build(t, cflags...)
}

// TestCNDevDiscoveryAgreesWithCnmonOnEveryProfile discovers each fixture
// node twice, through the mock libcndev and through the recorded cnmon
// output, and requires the same chips; only where facts came from differs
// (and what CNMON v4 does not print).
func TestCNDevDiscoveryAgreesWithCnmonOnEveryProfile(t *testing.T) {
	for _, node := range []string{"mlu270", "mlu370-x8", "mlu590"} {
		t.Run(node, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := mockNode(t, cndevtest.Fixture(node))
			root, runner := fixture(node)
			viaLib, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			viaTool, err := New(Config{Root: root, Runner: runner, Library: vendors.LibraryNone}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, viaLib.Validate())
			require.Len(t, viaLib.Chips, len(viaTool.Chips))
			for i := range viaLib.Chips {
				l, c := viaLib.Chips[i], viaTool.Chips[i]
				require.Equal(t, "libcndev.so cndevGetMemoryUsageV2", l.Sources["memory"])
				require.Equal(t, "cnmon info", c.Sources["memory"])
				if node != "mlu270" {
					require.Equal(t, "libcndev.so cndevGetCoreCount", l.Sources["cores"])
					require.Equal(t, "libcndev.so cndevGetMLULinkRemoteInfo", l.Sources["linkGroup"])
					require.Equal(t, "libcndev.so cndevGetSMLUMode", l.Sources["partitionMode"])
				} else {
					require.Equal(t, modelTable, l.Sources["cores"], "the mock has no core count for MLU270")
					l.UUID = c.UUID // CNMON v4 prints a serial number, libcndev a UUID
				}
				require.Equal(t, c.PartitionModeOff == "", l.PartitionModeOff == "", "chip %d: %q vs %q", i, l.PartitionModeOff, c.PartitionModeOff)
				l.Sources, c.Sources, l.PartitionModeOff, c.PartitionModeOff = nil, nil, "", ""
				require.Equal(t, c, l, "chip %d", i)
			}
			require.Equal(t, viaTool.SharedDeviceNodes, viaLib.SharedDeviceNodes)
		})
	}
}

// failingRunner fails a test that runs a tool: with the library loaded,
// discovery runs none.
type failingRunner struct{ t *testing.T }

func (r failingRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.t.Errorf("ran %s %v with the library loaded", name, args)
	return nil, fmt.Errorf("no tools here")
}

func TestCNDevDiscoveryReadsSMLUModeAndHealth(t *testing.T) {
	fixtureText, err := os.ReadFile(cndevtest.Fixture("mlu590"))
	require.NoError(t, err)
	// Card 1 in problem, card 2's driver resetting (state 6).
	text := strings.Replace(string(fixtureText), "device index=1 name=MLU590-M9", "device index=1 health=problem name=MLU590-M9", 1)
	text = strings.Replace(text, "device index=2 name=MLU590-M9", "device index=2 driverstate=6 name=MLU590-M9", 1)
	f := filepath.Join(t.TempDir(), "mlu590-sick.txt")
	require.NoError(t, os.WriteFile(f, []byte(text), 0o644))

	_, ctx := ktesting.NewTestContext(t)
	lib := mockNode(t, f)
	root, _ := fixture("mlu590")
	inv, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
	require.NoError(t, err)

	require.True(t, inv.Chips[0].Healthy)
	require.False(t, inv.Chips[1].Healthy)
	require.Equal(t, inventory.ReasonToolHealth("In problem"), inv.Chips[1].HealthReason)
	require.Equal(t, "libcndev.so reports device health In problem", inv.Chips[1].HealthMessage)
	require.False(t, inv.Chips[2].Healthy)
	require.Equal(t, inventory.ReasonDriverNotRunning, inv.Chips[2].HealthReason)

	for i := 0; i < 6; i++ {
		require.Empty(t, inv.Chips[i].PartitionModeOff)
	}
	require.Equal(t, "sMLU mode is off on card 6 (libcndev.so cndevGetSMLUMode; switch it on with cnmon set -c 6 -smlu on)", inv.Chips[6].PartitionModeOff)
	require.Equal(t, "the driver says card 7 does not support sMLU (libcndev.so cndevGetSMLUMode)", inv.Chips[7].PartitionModeOff)
}

func TestCNDevBackendFallsBackToCnmonAndSaysSoOnce(t *testing.T) {
	for _, tc := range []struct {
		name, library, log string
	}{
		{name: "a library path that does not exist", library: "/nonexistent/libcndev.so", log: "CNDev library not loaded, reading Cambricon chips through cnmon instead"},
		{name: "no library in the default paths", library: "", log: "none of /usr/local/neuware/lib64/libcndev.so"},
		{name: "the library turned off", library: vendors.LibraryNone, log: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			root, runner := fixture("mlu370-x8")
			b := New(Config{Root: root, Runner: runner, Library: tc.library})
			for range 2 {
				inv, err := b.Discover(ctx)
				require.NoError(t, err)
				require.Len(t, inv.Chips, 8)
				require.Equal(t, "cnmon info", inv.Chips[0].Sources["memory"])
			}
			if tc.log != "" {
				require.Equal(t, 1, strings.Count(logs(), "CNDev library not loaded"), "said once")
				require.Contains(t, logs(), tc.log)
			}
		})
	}
}

func TestCNDevPartitionsCreateListAndDestroySMLUInstances(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	devRoot := t.TempDir()
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvRoot, devRoot)
	l, err := OpenCNDev("/", lib)
	require.NoError(t, err)
	tool := &PartitionTool{Runner: failingRunner{t}, Library: l}

	c := inventory.Chip{Vendor: Vendor, Model: "MLU370-X8", Index: 3, Cores: 16, MemoryBytes: 23308 << 20,
		DeviceNodes: []string{"/dev/cambricon_dev3"}}
	half, ok := templateOf(c, "50p.11654mb")
	require.True(t, ok)
	quarter, ok := templateOf(c, "25p.5827mb")
	require.True(t, ok)

	a, err := tool.Create(ctx, c, half)
	require.NoError(t, err)
	require.Equal(t, vendors.Instance{Type: PartitionType, Chip: 3, Template: "50p.11654mb", ID: 1,
		DeviceNode: "/dev/cambricon-caps/cap_dev3_mi1", UUID: "MLU-54010003-2311-0000-0000-000000000001"}, a)
	require.FileExists(t, filepath.Join(devRoot, a.DeviceNode))
	b, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	require.Equal(t, 2, b.ID)
	_, err = tool.Create(ctx, c, quarter)
	require.NoError(t, err)
	_, err = tool.Create(ctx, c, quarter)
	require.ErrorContains(t, err, "creating a 25p.5827mb sMLU instance on chip 3: libcndev.so cndevCreateSMluInstanceByProfileId: cndev error 9 (insufficient space)")

	list, err := tool.List(ctx, c)
	require.NoError(t, err)
	require.Len(t, list, 3)
	state, err := os.ReadFile(os.Getenv(cndevtest.EnvState))
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(state), "\n"), "the mock keeps the instances for the next process")

	require.NoError(t, tool.Destroy(ctx, c, a))
	require.NoError(t, tool.Destroy(ctx, c, a), "gone already")
	require.NoFileExists(t, filepath.Join(devRoot, a.DeviceNode))
	list, err = tool.List(ctx, c)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NotContains(t, []int{list[0].ID, list[1].ID}, 1)

	// sMLU off: the library refuses, and says so.
	other := c
	other.Index = 0
	_, err = (&PartitionTool{Library: l}).List(ctx, other)
	require.NoError(t, err, "card 0 has sMLU on")
}

// The node agent's partition tool (SMLUs.NewTool) makes sMLUs
// through the node's libcndev where it loads, with no cnmon run, and
// with cnmon where the library is switched off.
func TestTheNodeToolUsesTheLibraryWhereItLoads(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	t.Setenv(cndevtest.EnvRoot, t.TempDir())
	lib := mockNode(t, cndevtest.Fixture("mlu370-x8"))
	c := inventory.Chip{Vendor: Vendor, Model: "MLU370-X8", Index: 3, Cores: 16, MemoryBytes: 23308 << 20,
		DeviceNodes: []string{"/dev/cambricon_dev3"}}
	quarter, ok := templateOf(c, "25p.5827mb")
	require.True(t, ok)

	tool := SMLUs{}.NewTool(vendors.BackendConfig{Runner: failingRunner{t}, Root: "/", Library: lib})
	inst, err := tool.Create(ctx, c, quarter)
	require.NoError(t, err, "through libcndev: the failing runner would fail a cnmon run")
	require.Equal(t, "/dev/cambricon-caps/cap_dev3_mi1", inst.DeviceNode)
	require.NoError(t, tool.Destroy(ctx, c, inst))

	tool = SMLUs{}.NewTool(vendors.BackendConfig{Runner: failingRunner{t}, Root: "/", Library: vendors.LibraryNone})
	require.Nil(t, tool.(*PartitionTool).Library, "none: cnmon only")
}

// mockNodeWith is mockNode on a fixture node with extra lines.
func mockNodeWith(t *testing.T, node string, extra ...string) string {
	t.Helper()
	return mockNodeBuiltWith(t, nil, node, extra...)
}

// mockNodeBuiltWith is mockNodeWith with a mock built with cflags.
func mockNodeBuiltWith(t *testing.T, cflags []string, node string, extra ...string) string {
	t.Helper()
	text, err := os.ReadFile(cndevtest.Fixture(node))
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), node+".txt")
	require.NoError(t, os.WriteFile(f, []byte(string(text)+strings.Join(extra, "\n")+"\n"), 0o644))
	return mockNode(t, f, cflags...)
}

// noHealthV2 builds a mock without cndevGetCardHealthStateV2.
var noHealthV2 = []string{"-DCNDEV_MOCK_NO_HEALTH_V2"}

// TestAHungCNDevCallFailsFastAndTheLibraryRecovers: the driver hangs in
// cndevGetCardHealthStateV2. Discovery fails after the call's deadline,
// the next one at once naming the hung call, and once it returns the
// library answers again.
func TestAHungCNDevCallFailsFastAndTheLibraryRecovers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	hang := filepath.Join(t.TempDir(), "hang")
	require.NoError(t, os.WriteFile(hang, nil, 0o644))
	lib := mockNodeWith(t, "mlu370-x8", "hang fn=cndevGetCardHealthStateV2 while="+hang)
	root, _ := fixture("mlu370-x8")
	cfg := Config{Root: root, Runner: failingRunner{t}, Library: lib, LibraryCallTimeout: 200 * time.Millisecond}
	b := New(cfg)
	require.Nil(t, b.HungLibraryCall(), "not loaded yet")

	start := time.Now()
	_, err := b.Discover(ctx)
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.ErrorContains(t, err, "reading MLU card 0: "+lib+": cndevGetCardHealthStateV2: vendor library wedged: no answer after 200ms")
	// Another backend of the process sees the hung call.
	hung := New(cfg).HungLibraryCall()
	require.NotNil(t, hung)
	require.Equal(t, lib, hung.Library)
	require.Equal(t, "cndevGetCardHealthStateV2", hung.Call)
	require.WithinRange(t, hung.Since, start, time.Now())
	_, err = b.Discover(ctx)
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.ErrorContains(t, err, "cndevGetDeviceCount: vendor library wedged: cndevGetCardHealthStateV2 has not returned", "fails at once")

	require.NoError(t, os.Remove(hang))
	require.Eventually(t, func() bool {
		_, err := b.Discover(ctx)
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the library answers again once the hung call returned")
	require.Nil(t, b.HungLibraryCall())
}

// TestABogusCNDevCountIsAnErrorNamingTheCall: absurd card or MLU-Link
// port counts fail discovery naming the call instead of sizing loops.
func TestABogusCNDevCountIsAnErrorNamingTheCall(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"count fn=cndevGetDeviceCount n=100000", "counting MLU cards: libcndev.so cndevGetDeviceCount reports 100000 MLU cards, not within 0..64"},
		{"count fn=cndevGetMLULinkPortNumber n=2147483647", "counting the MLU-Link ports of MLU card 0: libcndev.so cndevGetMLULinkPortNumber reports 2147483647 ports, not within 0..64"},
	} {
		t.Run(tt.line, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := mockNodeWith(t, "mlu370-x8", tt.line)
			root, _ := fixture("mlu370-x8")
			_, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestOneCardsFailingCNDevCallNeverHidesTheNode: a call that returns an
// error code for one card makes that card unhealthy (or, where the card
// cannot be identified, leaves it out) with a log line naming the call
// and the code; the node's other cards publish healthy.
func TestOneCardsFailingCNDevCallNeverHidesTheNode(t *testing.T) {
	for _, tc := range []struct {
		line    string
		cflags  []string
		card    int
		leftOut bool
		message string
	}{
		{line: "fail dev=2 fn=cndevGetCardHealthStateV2 code=7", card: 2, message: "libcndev.so cndevGetCardHealthStateV2 returned 7 (unknown error)"},
		{line: "fail dev=2 fn=cndevGetCardHealthState code=7", cflags: noHealthV2, card: 2, message: "libcndev.so cndevGetCardHealthState returned 7 (unknown error)"},
		{line: "fail dev=3 fn=cndevGetMemoryUsageV2 code=7", card: 3, message: "libcndev.so cndevGetMemoryUsageV2 returned 7 (unknown error)"},
		{line: "fail dev=5 fn=cndevGetUUID code=6", card: 5, message: "libcndev.so cndevGetUUID returned 6 (invalid device id)"},
		{line: "fail dev=6 fn=cndevGetVersionInfo code=7", card: 6, message: "libcndev.so cndevGetVersionInfo returned 7 (unknown error)"},
		{line: "fail dev=0 fn=cndevGetMLULinkStatusV2 code=7", card: 0, message: "libcndev.so cndevGetMLULinkStatusV2 returned 7 (unknown error)"},
		{line: "fail dev=7 fn=cndevGetMLULinkRemoteInfo code=7", card: 7, message: "libcndev.so cndevGetMLULinkRemoteInfo returned 7 (unknown error)"},
		{line: "fail dev=1 fn=cndevGetPCIeInfoV2 code=7", card: 1, leftOut: true},
		{line: "fail dev=4 fn=cndevGetDeviceHandleByIndex code=6", card: 4, leftOut: true},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.line, tc.cflags), func(t *testing.T) {
			ctx, logs := discoverytest.BufferedContext(t)
			lib := mockNodeBuiltWith(t, tc.cflags, "mlu370-x8", tc.line)
			root, _ := fixture("mlu370-x8")
			inv, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			require.NoError(t, inv.Validate())
			fn := strings.Fields(tc.line)[2][len("fn="):]
			require.Contains(t, logs(), `call="`+fn+`"`)
			require.Contains(t, logs(), "code="+strings.Fields(tc.line)[3][len("code="):])
			var indices []int
			for _, c := range inv.Chips {
				indices = append(indices, c.Index)
				if c.Index != tc.card {
					require.True(t, c.Healthy, "chip %d: %s", c.Index, c.HealthMessage)
					continue
				}
				require.False(t, c.Healthy)
				require.Equal(t, inventory.ReasonLibraryError, c.HealthReason)
				require.Equal(t, tc.message, c.HealthMessage)
			}
			if tc.leftOut {
				require.Len(t, inv.Chips, 7)
				require.NotContains(t, indices, tc.card)
				require.Contains(t, logs(), "leaving the card out")
			} else {
				require.Len(t, inv.Chips, 8)
			}
		})
	}
}

// gradedMLU590Fixture writes the mlu590 fixture with card 3 graded a
// warning and card 4 a failure by cndevGetCardHealthStateV2, and card 5
// given device5's fields, and returns its path.
func gradedMLU590Fixture(t *testing.T, device5 string) string {
	t.Helper()
	fixtureText, err := os.ReadFile(cndevtest.Fixture("mlu590"))
	require.NoError(t, err)
	text := strings.Replace(string(fixtureText), "device index=3 name=MLU590-M9", "device index=3 overall=warn incident=26 name=MLU590-M9", 1)
	text = strings.Replace(text, "device index=4 name=MLU590-M9", "device index=4 overall=fail incident=15 name=MLU590-M9", 1)
	text = strings.Replace(text, "device index=5 name=MLU590-M9", "device index=5 "+device5+" name=MLU590-M9", 1)
	f := filepath.Join(t.TempDir(), "mlu590-graded.txt")
	require.NoError(t, os.WriteFile(f, []byte(text), 0o644))
	return f
}

// cndevGetCardHealthStateV2's overall grade: a warning makes the card
// HealthWarning (a taint that informs), a failure HealthFail, each with
// the library's incidents in the message; a library without V2 reads the
// V1 states and sees neither.
func TestCNDevHealthV2GradesWarningsAndFailures(t *testing.T) {
	f := gradedMLU590Fixture(t, "health=problem overall=warn incident=3")
	root, _ := fixture("mlu590")

	for _, tc := range []struct {
		name    string
		cflags  []string
		source  string
		reasons map[int]string
		message map[int]string
	}{
		{name: "with cndevGetCardHealthStateV2", source: "libcndev.so cndevGetCardHealthStateV2, device files",
			reasons: map[int]string{3: inventory.ReasonHealthWarning, 4: "HealthFail", 5: "HealthInproblem"},
			message: map[int]string{
				3: "libcndev.so reports device health Warning: incident 26: mock incident 26 on card 3",
				4: "libcndev.so reports device health Fail: incident 15: mock incident 15 on card 4",
				5: "libcndev.so reports device health In problem: incident 3: mock incident 3 on card 5",
			}},
		{name: "an older library without it", cflags: noHealthV2, source: "libcndev.so cndevGetCardHealthState, device files",
			reasons: map[int]string{5: "HealthInproblem"},
			message: map[int]string{5: "libcndev.so reports device health In problem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			lib := mockNode(t, f, tc.cflags...)
			inv, err := New(Config{Root: root, Runner: failingRunner{t}, Library: lib}).Discover(ctx)
			require.NoError(t, err)
			for _, c := range inv.Chips {
				require.Equal(t, tc.source, c.Sources["health"])
				reason, sick := tc.reasons[c.Index]
				require.Equal(t, !sick, c.Healthy, "chip %d", c.Index)
				require.Equal(t, reason, c.HealthReason, "chip %d", c.Index)
				require.Equal(t, tc.message[c.Index], c.HealthMessage, "chip %d", c.Index)
			}
		})
	}
}

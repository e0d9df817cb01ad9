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

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// The real node's chips as the mocks serve them: 4 × 910B3 through the
// mock DCMI and 4 × MLU370-X8 through the mock CNDev, as its profile has
// (mixed-910b-mlu370); chip 3 of each is Shared.
const (
	sharedChip = 3
	// smluStep is the memory step of an MLU370-X8 of the fixture (23308
	// MiB): 1% of it in whole MiB (docs/partitions.md).
	smluStep = int64(233) << 20
	// holdCreate names the mock DCMI's hook: the create made and
	// recorded, it writes the vNPU id there and blocks.
	holdCreate = "ACCEL_DRA_DCMI_HOLD_CREATE"
	// shareProbe prints the container's /dev, its sMLU capability nodes
	// and its environment, then sleeps.
	shareProbe = `echo "== dev"; ls -1 /dev; echo "== caps"; ls -1 /dev/cambricon-caps 2>/dev/null; echo "== env"; env | sort; echo "` + endMarker + `"; exec sleep 3600`
)

// sharesNode is the real node's agent reading its chips through the mock
// libraries: the files the mocks keep their instances in, the mock
// DCMI's fixture, and the agent's flags and environment.
type sharesNode struct {
	dir, root            string
	dcmiState, smluState string
	dcmiFixture          string
	args, env            []string
}

// TestEnforcedSharesOnTheRealNode restarts the real node's agent with its
// chips read through the mock DCMI and CNDev libraries (so prepare makes
// vNPUs and sMLUs the mocks record), npu-3 and mlu-3 Shared, and runs
// containers on their shares: two sMLUs of one MLU370, a vNPU of a
// 910B3's template, sizes no template has refused or never allocated, a
// whole-chip claim that waits for the shares, a kill -9 between the
// library's create and the checkpoint, a reboot that empties the CDI
// directory, and Kueue's quota counting the shares by capacity.
func TestEnforcedSharesOnTheRealNode(t *testing.T) {
	s := startSharesNode(t)
	t.Run("two pods share an MLU370, each with its own sMLU", s.testSMLUs)
	t.Run("a share of a 910B3's template gets a vNPU, other sizes never", s.testVNPU)
	t.Run("a whole-capacity claim waits until the shares are gone", s.testWholeWaits)
	t.Run("kill -9 between the library's create and the checkpoint leaves no orphan", s.testKillAfterCreate)
	t.Run("a reboot that empties the CDI directory gives the share its own vNPU", s.testReboot)
	t.Run("a share the library cannot make fails its pod naming claim and chip, the others keep theirs", s.testBadShares)
	t.Run("Kueue charges the shares by capacity", s.testKueue)
}

// startSharesNode lays out the node's root, builds the mocks and restarts
// the real node's agent on them; the cleanup starts it again as it was.
func startSharesNode(t *testing.T) *sharesNode {
	t.Helper()
	node := cluster.RealNode()
	s := &sharesNode{dir: t.TempDir()}
	s.root = filepath.Join(s.dir, "root")
	s.dcmiState, s.smluState = filepath.Join(s.dir, "dcmi.state"), filepath.Join(s.dir, "smlu.state")
	s.layOutRoot(t)
	s.dcmiFixture = filepath.Join(s.dir, "dcmi.txt")
	writeFirstChips(t, repoPath("pkg", "vendors", "ascend", "testdata", "dcmi", "atlas-800t-a2.txt"), s.dcmiFixture, `^(chip|ip|error) (\d+) `)
	cndevFixture := filepath.Join(s.dir, "cndev.txt")
	writeFirstChips(t, repoPath("pkg", "vendors", "cambricon", "testdata", "cndev", "mlu370-x8.txt"), cndevFixture, `^(device index|link dev)=(\d+) `)
	host := filepath.Join(s.dir, "host")
	require.NoError(t, os.MkdirAll(filepath.Join(host, "run", "vnpu_cfg_lock"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(host, "etc"), 0o755))
	cndev := filepath.Join(s.dir, "libcndev.so")
	src := repoPath("pkg", "vendors", "cambricon", "testdata", "cndev")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-I", src, "-o", cndev, filepath.Join(src, "mock_cndev.c")).CombinedOutput()
	require.NoError(t, err, "building the mock libcndev.so: %s", out)
	npuSmi := filepath.Join(s.dir, "npu-smi")
	require.NoError(t, os.WriteFile(npuSmi, []byte("#!/bin/sh\n[ \"$*\" = \"info -t vnpu-mode\" ] && echo 'vnpu-mode : docker' && exit 0\necho \"unexpected: $0 $*\" >&2\nexit 1\n"), 0o755))
	cnmon := filepath.Join(s.dir, "cnmon")
	require.NoError(t, os.WriteFile(cnmon, []byte("#!/bin/sh\necho \"unexpected: $0 $*\" >&2\nexit 1\n"), 0o755))

	orig, origRoot := cluster.AgentArgs(node), cluster.Agents[node].Root
	for _, a := range orig {
		if !slices.ContainsFunc([]string{"--profile=", "--root=", "--fake-devices", "--chip-modes="}, func(p string) bool { return strings.HasPrefix(a, p) }) {
			s.args = append(s.args, a)
		}
	}
	s.args = append(s.args, "--root="+s.root, "--dcmi-library="+buildMockDCMI(t), "--cndev-library="+cndev,
		"--npu-smi="+npuSmi, "--cnmon="+cnmon, fmt.Sprintf("--chip-modes=npu-%d=Shared,mlu-%d=Shared", sharedChip, sharedChip))
	s.env = []string{"ACCEL_DRA_DCMI_FIXTURE=" + s.dcmiFixture, "ACCEL_DRA_DCMI_STATE=" + s.dcmiState, "ACCEL_DRA_DCMI_ROOT=" + host,
		cndevtest.EnvFixture + "=" + cndevFixture, cndevtest.EnvState + "=" + s.smluState, cndevtest.EnvRoot + "=" + s.root}
	// A simulated reboot sets the boot id under the agent's root.
	cluster.Agents[node].Root = s.root
	s.restartAgent(t, s.env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("The agent of %s (tail):\n%s", node, agentLogTail(t, node))
		}
		cluster.Agents[node].Root = origRoot
		require.NoError(t, cluster.StopAgent(node))
		cluster.SetAgentArgs(node, orig)
		cluster.SetAgentEnv(node, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		require.NoError(t, cluster.RestartAgent(ctx, node), "the agent of %s starts again as it was", node)
	})
	for _, d := range nodeChips(t, node) {
		if ptr.Deref(d.Attributes[names.AttrIndex].IntValue, -1) == sharedChip {
			require.Equal(t, partitions.EnforcementHardware, ptr.Deref(d.Attributes[partitions.AttrShareEnforcement].StringValue, ""), "device %s", d.Name)
		}
	}
	return s
}

// restartAgent starts the real node's agent again on the mocks with env.
func (s *sharesNode) restartAgent(t *testing.T, env []string) {
	t.Helper()
	node := cluster.RealNode()
	if cluster.AgentRunning(node) == nil {
		require.NoError(t, cluster.StopAgent(node))
	}
	cluster.SetAgentArgs(node, s.args)
	cluster.SetAgentEnv(node, env)
	require.NoError(t, cluster.RestartAgent(t.Context(), node), "log %s", cluster.AgentLog(node))
}

// layOutRoot merges the fixture roots of an Atlas 800T A2 and an
// MLU370-X8 node, keeps their first four chips (the real node's profile),
// and makes every device file a /dev/null clone that containers can
// open. The real driver makes /dev/vdavinciN for each vNPU; the mock does
// not, so the Shared chip's 16 vNPU ids (phy × 16 + 100, mock_dcmi.c) are
// there beforehand.
func (s *sharesNode) layOutRoot(t *testing.T) {
	t.Helper()
	require.NoError(t, os.MkdirAll(s.root, 0o755))
	for _, from := range []string{repoPath("pkg", "vendors", "ascend", "testdata", "atlas-800t-a2", "root"), repoPath("pkg", "vendors", "cambricon", "testdata", "mlu370-x8", "root")} {
		out, err := exec.Command("cp", "-a", from+"/.", s.root).CombinedOutput()
		require.NoError(t, err, "copying %s: %s", from, out)
	}
	dev := filepath.Join(s.root, "dev")
	for chip := 4; chip < 8; chip++ {
		for _, f := range []string{"davinci%d", "cambricon_dev%d", "cambricon_ipcm%d", "commu%d"} {
			require.NoError(t, os.Remove(filepath.Join(dev, fmt.Sprintf(f, chip))))
		}
	}
	// The A2's chips 4-7 (atlas-800t-a2.txt).
	for _, bus := range []string{"pci0000:00/0000:01:00.0", "pci0000:00/0000:02:00.0", "pci0000:40/0000:41:00.0", "pci0000:40/0000:42:00.0"} {
		require.NoError(t, os.RemoveAll(filepath.Join(s.root, "sys", "devices", bus)))
		require.NoError(t, os.Remove(filepath.Join(s.root, "sys", "bus", "pci", "devices", filepath.Base(bus))))
	}
	entries, err := os.ReadDir(dev)
	require.NoError(t, err)
	nodes := []string{}
	for _, e := range entries {
		nodes = append(nodes, e.Name())
	}
	for id := sharedChip*16 + 100; id < sharedChip*16+116; id++ {
		nodes = append(nodes, "vdavinci"+strconv.Itoa(id))
	}
	for _, n := range nodes {
		p := filepath.Join(dev, n)
		require.NoError(t, os.RemoveAll(p))
		require.NoError(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))), "mknod %s", p)
	}
}

// writeFirstChips copies the mock fixture from to to without the lines
// of chips 4 and up (line matches re, its second group the chip).
func writeFirstChips(t *testing.T, from, to, re string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	require.NoError(t, err)
	chipLine := regexp.MustCompile(re)
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if m := chipLine.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[2]); n >= 4 {
				continue
			}
		}
		out = append(out, l)
	}
	require.NoError(t, os.WriteFile(to, []byte(strings.Join(out, "\n")), 0o644))
}

// shareRequest asks for one device of class, the Shared chip (by index),
// with capacity requests caps.
func shareRequest(class string, caps map[resourceapi.QualifiedName]string) resourceapi.DeviceRequest {
	r := exactly("share", class, 1, fmt.Sprintf(`device.attributes["accel-dra.dev"].index == %d`, sharedChip))
	if len(caps) > 0 {
		r.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
		for k, v := range caps {
			r.Exactly.Capacity.Requests[k] = resource.MustParse(v)
		}
	}
	return r
}

// sharePod creates a real-node pod named name whose claim comes from a
// template of req, running shareProbe, with restart policy restart.
func sharePod(t *testing.T, ns, name string, req resourceapi.DeviceRequest, restart ...corev1.RestartPolicy) {
	t.Helper()
	createTemplate(t, template(ns, name, req))
	pod := realNodePod(ns, name, name)
	pod.Spec.Containers[0].Command = []string{"sh", "-c", shareProbe}
	if len(restart) > 0 {
		pod.Spec.RestartPolicy = restart[0]
	}
	createPod(t, pod)
}

// runningShare waits until the pod runs and returns its one claim and
// its probe output.
func runningShare(t *testing.T, ns, name string) (*resourceapi.ResourceClaim, string) {
	t.Helper()
	pod := waitForPodRunning(t, ns, name)
	claims := podClaims(t, pod)
	require.Len(t, claims, 1)
	return claims[0], podLogs(t, pod)
}

// waitShareUnschedulable waits until the scheduler has given up on the
// pod for now, and checks its claim is not allocated.
func waitShareUnschedulable(t *testing.T, ns, name string) {
	t.Helper()
	waitUnschedulable(t, ns, name)
	pod, err := cluster.Admin.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range podClaims(t, pod) {
		require.Nil(t, c.Status.Allocation, "claim %s of unschedulable pod %s", c.Name, name)
	}
}

// deleteShares deletes the pods and waits until their claims are
// unprepared and gone.
func deleteShares(t *testing.T, ns string, claims map[string]*resourceapi.ResourceClaim) {
	t.Helper()
	for name := range claims {
		deletePod(t, ns, name)
	}
	for _, c := range claims {
		if c != nil {
			waitForCDISpecsGone(t, c)
			waitForClaimGone(t, c)
		}
	}
}

// specMatches are the distinct matches of re in the claim's CDI specs.
func specMatches(t *testing.T, claim *resourceapi.ResourceClaim, re string) []string {
	t.Helper()
	var out []string
	for _, f := range cdiSpecs(t, claim) {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, regexp.MustCompile(re).FindAllString(string(raw), -1)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// stateLines are the lines of a mock's state file with prefix (none: no
// instance).
func stateLines(t *testing.T, path, prefix string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if l != "" && strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// vnpus are the mock DCMI's vNPUs ("<logic> <id> <template>") as
// vdavinci<id>.
func (s *sharesNode) vnpus(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range stateLines(t, s.dcmiState, "") {
		f := strings.Fields(l)
		require.Len(t, f, 3, "mock DCMI state line %q", l)
		require.Equal(t, strconv.Itoa(sharedChip), f[0], "a vNPU on another chip: %q", l)
		out = append(out, "vdavinci"+f[1])
	}
	slices.Sort(out)
	return out
}

// testSMLUs: two pods ask for a quarter of mlu-3 each; the mock made one
// dynamic profile of a 25% MLU-core quota and 25 memory steps and an
// instance of it per pod, and each container has only its own instance's
// capability node and the chip's nodes, no CAMBRICON_VISIBLE_DEVICES.
func (s *sharesNode) testSMLUs(t *testing.T) {
	ns := newNamespace(t)
	quarter := map[resourceapi.QualifiedName]string{names.CapMemory: strconv.FormatInt(25*smluStep, 10), names.CapCores: "4"}
	claims := map[string]*resourceapi.ResourceClaim{}
	caps := map[string]string{}
	for _, name := range []string{"smlu-a", "smlu-b"} {
		sharePod(t, ns, name, shareRequest("cambricon.accel-dra.dev", quarter))
	}
	for _, name := range []string{"smlu-a", "smlu-b"} {
		c, logs := runningShare(t, ns, name)
		claims[name] = c
		got := section(logs, "caps")
		require.Len(t, got, 1, "pod %s sees one sMLU capability node: %v", name, got)
		caps[name] = got[0]
		dev := extraDev(logs)
		require.Equal(t, []string{"cambricon_dev3"}, filterDev(dev, "cambricon_dev"), "pod %s: the Shared chip's node only", name)
		require.Equal(t, []string{"cambricon_ipcm3"}, filterDev(dev, "cambricon_ipcm"), "pod %s", name)
		require.Empty(t, filterDev(dev, "commu"), "pod %s: none of the whole card's nodes", name)
		_, visible := envOf(logs, "CAMBRICON_VISIBLE_DEVICES")
		require.False(t, visible, "pod %s: an sMLU container gets no CAMBRICON_VISIBLE_DEVICES", name)
		v, _ := envOf(logs, "DRA_DEVICE_MLU_3_PARTITION")
		require.Equal(t, "25p.5825mb", v, "pod %s", name)
	}
	require.NotEqual(t, caps["smlu-a"], caps["smlu-b"], "each pod its own instance")
	mem := 25 * smluStep
	require.Equal(t, []string{fmt.Sprintf("p 3 3 25 %d", mem)}, stateLines(t, s.smluState, "p "), "one profile: a 25%% quota and 25 memory steps")
	require.ElementsMatch(t, []string{fmt.Sprintf("3 1 3 smlu3-1 25 %d", mem), fmt.Sprintf("3 2 3 smlu3-2 25 %d", mem)}, stateLines(t, s.smluState, "3 "))
	for name, c := range claims {
		require.Equal(t, []string{strings.TrimPrefix(caps[name], "/")}, specMatches(t, c, `cap_dev3_mi\d+`), "claim of %s names its own instance only", name)
	}
	deleteShares(t, ns, claims)
	require.Empty(t, stateLines(t, s.smluState, ""), "unprepare destroyed the instances and the profile")
}

// filterDev keeps the /dev entries that start with prefix.
func filterDev(entries []string, prefix string) []string {
	return slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return !strings.HasPrefix(e, prefix) })
}

// testVNPU: one unit of npu-3 (vir05_1c_16g) gets a vNPU the mock made;
// three units of the model's class are refused at create by the webhook,
// naming the sizes there are; cores and memory of a generic class, a
// size no template has, are never allocated on the chip.
func (s *sharesNode) testVNPU(t *testing.T) {
	ns := newNamespace(t)
	sharePod(t, ns, "vnpu", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "1"}))
	c, logs := runningShare(t, ns, "vnpu")
	made := s.vnpus(t)
	require.Len(t, made, 1)
	require.Equal(t, made, specMatches(t, c, `vdavinci\d+`), "the container gets the vNPU the library made")
	require.Contains(t, stateLines(t, s.dcmiState, ""), fmt.Sprintf("%d %s vir05_1c_16g", sharedChip, strings.TrimPrefix(made[0], "vdavinci")))
	v, _ := envOf(logs, "DRA_DEVICE_NPU_3_PARTITION")
	require.Equal(t, "vir05_1c_16g", v)
	v, _ = envOf(logs, "ASCEND_RUNTIME_OPTIONS")
	require.Equal(t, "VIRTUAL", v)

	// The chart's webhook, as TestTheAPIServerRejectsBadConfigsThroughTheChartsWebhook runs it.
	serveChartWebhook(t)
	claims := cluster.Admin.ResourceV1().ResourceClaims(ns)
	threeUnits := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "three-units"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "3"})}}},
	}
	// The API server picks up a new webhook configuration within seconds.
	var err error
	require.Eventually(t, func() bool {
		_, err = claims.Create(t.Context(), threeUnits, metav1.CreateOptions{})
		if err == nil {
			_ = claims.Delete(t.Context(), threeUnits.Name, metav1.DeleteOptions{})
		}
		return err != nil
	}, time.Minute, time.Second, "the webhook starts judging claims")
	require.ErrorContains(t, err, `admission webhook "resourceclaims.accel-dra.dev" denied the request`)
	require.ErrorContains(t, err, `spec.devices.requests[0].exactly.capacity.requests[accel-dra.dev/shareUnits]: Invalid value: "3": class ascend910b3.accel-dra.dev: a share of a Shared Ascend910B3 chip is one of its templates, in units: 1 (vir05_1c_16g: 5 cores, 16384Mi), 2 (vir10_3c_32g: 10 cores, 32768Mi) or 4 (the whole chip)`)

	sharePod(t, ns, "by-memory", shareRequest("ascend.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapMemory: "16Gi", names.CapCores: "5"}))
	waitShareUnschedulable(t, ns, "by-memory")
	require.Equal(t, made, s.vnpus(t), "no vNPU for the pod that asks for memory")
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"vnpu": c, "by-memory": nil})
	require.Empty(t, s.vnpus(t), "unprepare destroyed the vNPU")
}

// testWholeWaits: while a share of npu-3 runs, a claim for all 4 units
// of it is unschedulable; once the share's pod is gone it runs on the
// whole chip, with no vNPU.
func (s *sharesNode) testWholeWaits(t *testing.T) {
	ns := newNamespace(t)
	sharePod(t, ns, "share", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "2"}))
	share, _ := runningShare(t, ns, "share")
	require.Len(t, s.vnpus(t), 1)
	sharePod(t, ns, "whole", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "4"}))
	waitShareUnschedulable(t, ns, "whole")
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"share": share})

	whole, logs := runningShare(t, ns, "whole")
	require.Empty(t, s.vnpus(t), "no vNPU for the whole chip")
	require.Empty(t, specMatches(t, whole, `vdavinci\d+`))
	require.Contains(t, extraDev(logs), "davinci3", "the whole chip's node")
	v, _ := envOf(logs, "ASCEND_VISIBLE_DEVICES")
	require.Equal(t, "3", v)
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"whole": whole})
}

// testKillAfterCreate: the mock DCMI blocks once it has made and recorded
// the share's vNPU (holdCreate), before the agent can record it in its
// checkpoint; the agent is killed with SIGKILL there and started again
// without the hook. The kubelet prepares the claim again, and the node
// has then exactly one vNPU, the claim's: the one made before the kill
// was destroyed at start-up or taken over, none leaked.
func (s *sharesNode) testKillAfterCreate(t *testing.T) {
	node := cluster.RealNode()
	hold := filepath.Join(s.dir, "held-create")
	s.restartAgent(t, append(slices.Clone(s.env), holdCreate+"="+hold))
	ns := newNamespace(t)
	sharePod(t, ns, "crash", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "1"}))
	var held []byte
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		var err error
		held, err = os.ReadFile(hold)
		return err == nil && len(held) > 0, nil
	})
	require.NoError(t, err, "the agent never reached the library's create")
	before := s.vnpus(t)
	require.Equal(t, []string{"vdavinci" + strings.TrimSpace(string(held))}, before, "the library made the vNPU")
	require.NoError(t, cluster.KillAgent(node))
	t.Logf("killed the agent of %s with vNPU %s made and not checkpointed", node, before[0])

	s.restartAgent(t, s.env)
	c, _ := runningShare(t, ns, "crash")
	after := s.vnpus(t)
	require.Len(t, after, 1, "one vNPU on the node, no orphan: %v", after)
	require.Equal(t, after, specMatches(t, c, `vdavinci\d+`), "the claim's own")
	log, err := os.ReadFile(cluster.AgentLog(node))
	require.NoError(t, err)
	require.Contains(t, string(log), fmt.Sprintf(`"Removed a partition the checkpoint does not list (left by a crash before it was recorded)" driver="ascend.accel-dra.dev" chip="npu-%d" type="vnpu" template="vir05_1c_16g" id=%s`,
		sharedChip, strings.TrimSpace(string(held))), "the restarted agent destroyed the vNPU made before the kill")
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"crash": c})
	require.Empty(t, s.vnpus(t))
}

// testReboot: pod a holds a share of npu-3; the node reboots: the CDI
// directory is emptied, the vNPUs are gone (the mock's state and the
// host's /etc/vnpu.cfg), the boot id changes. The agent prepares a's
// claim again: its spec then names the one vNPU the library has, and a
// pod b's share on the same chip gets another one, never a's.
func (s *sharesNode) testReboot(t *testing.T) {
	ns := newNamespace(t)
	sharePod(t, ns, "a", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "1"}), corev1.RestartPolicyAlways)
	claimA, _ := runningShare(t, ns, "a")
	running := waitForPodRunning(t, ns, "a")
	container := running.Status.ContainerStatuses[0].ContainerID
	require.Len(t, s.vnpus(t), 1)

	// A reboot takes the vNPUs with it.
	require.NoError(t, os.Remove(s.dcmiState))
	require.NoError(t, os.RemoveAll(filepath.Join(s.dir, "host", "etc", "vnpu.cfg")))
	require.NoError(t, cluster.SimulateReboot(t.Context(), "e2e-boot-shares", container), "the node comes back (agent log %s)", cluster.AgentLog(cluster.RealNode()))
	waitForPod(t, ns, "a", "its container started again after the reboot", func(p *corev1.Pod) bool {
		st := p.Status.ContainerStatuses
		return len(st) == 1 && st[0].ContainerID != container && st[0].State.Running != nil
	})
	nodesA := specMatches(t, claimA, `vdavinci\d+`)
	require.Equal(t, s.vnpus(t), nodesA, "a's spec names the vNPU the library has now")
	log, err := os.ReadFile(cluster.AgentLog(cluster.RealNode()))
	require.NoError(t, err)
	require.Contains(t, string(log), "The node rebooted since the checkpoint was saved")
	require.Contains(t, string(log), "Removed the CDI spec of a claim whose partition no longer exists")

	sharePod(t, ns, "b", shareRequest("ascend910b3.accel-dra.dev", map[resourceapi.QualifiedName]string{names.CapShareUnits: "1"}))
	claimB, _ := runningShare(t, ns, "b")
	nodesB := specMatches(t, claimB, `vdavinci\d+`)
	require.Len(t, nodesB, 1)
	require.NotContains(t, nodesA, nodesB[0], "b never gets a's vNPU")
	require.Len(t, s.vnpus(t), 2)
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"a": claimA, "b": claimB})
	require.Empty(t, s.vnpus(t))
}

// testKueue runs Kueue v0.19.2 with the alpha gate
// KueueDRAIntegrationConsumableCapacity and docs/queues.md's shares
// Configuration, queue and claim template: a job asking for 2 units of a
// 910B3 is charged 2 units and runs on a vNPU of npu-3; a second one is
// held for quota (1 unit left of 3) although the chip has 2 units free,
// and runs once the first is deleted.
func (s *sharesNode) testKueue(t *testing.T) {
	ctx := t.Context()
	q := startKueue(t, "kueue-config-shares.yaml", "KueueDRAIntegration=true,KueueDRAIntegrationConsumableCapacity=true")
	objs := readDemoObjects(t, "kueue/shares.yaml", q.ns)
	_, err := cluster.Apply(ctx, framework.FieldManager, objs...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), objs...) })
	q.waitClusterQueueActive("shares")

	first, firstPods := q.submitRunning("share-infer", 1)
	require.Equal(t, map[string]string{"accel-dra.dev/ascend910b3-units": "2"}, q.admittedUsage(first), "Kueue charges the units the claim asks for")
	require.Equal(t, []string{fmt.Sprintf("%s/%s/npu-%d", ascend.Driver, cluster.RealNode(), sharedChip)}, deviceNames(firstPods))
	require.Len(t, s.vnpus(t), 1, "the share is a vNPU")
	second := q.submit("share-infer")
	q.waitHeldForQuota(second, "accel-dra.dev/ascend910b3-units")
	q.deleteJob(first, firstPods)
	require.Equal(t, []string{fmt.Sprintf("%s/%s/npu-%d", ascend.Driver, cluster.RealNode(), sharedChip)}, deviceNames(q.waitRunning(second, 1)), "the held job runs once the first's units are free")
	q.deleteAll()
	require.Empty(t, s.vnpus(t))
}

// testBadShares: with one share of npu-3 prepared, a second share fails
// its prepare, once because every vNPU id of the chip is taken (vNPUs
// made by someone else, added to the mock's state) and once because the
// driver refuses the call (the mock's fail-chip line, the agent started
// again on it). The kubelet's event names the claim, the chip and the
// library's answer; the first share keeps its vNPU and spec, the failed
// one leaves no vNPU, and it is prepared once the library can.
func (s *sharesNode) testBadShares(t *testing.T) {
	ns := newNamespace(t)
	one := map[resourceapi.QualifiedName]string{names.CapShareUnits: "1"}
	sharePod(t, ns, "good", shareRequest("ascend910b3.accel-dra.dev", one))
	good, _ := runningShare(t, ns, "good")
	mine := s.vnpus(t)
	require.Len(t, mine, 1)
	state, err := os.ReadFile(s.dcmiState)
	require.NoError(t, err)
	others := slices.Clone(state)
	for id := sharedChip*16 + 100; id < sharedChip*16+116; id++ {
		if "vdavinci"+strconv.Itoa(id) != mine[0] {
			others = fmt.Appendf(others, "%d %d vir05_1c_16g\n", sharedChip, id)
		}
	}
	require.NoError(t, os.WriteFile(s.dcmiState, others, 0o644))
	sharePod(t, ns, "full", shareRequest("ascend910b3.accel-dra.dev", one))
	waitPrepareFailed(t, ns, "full", fmt.Sprintf("creating the partition of the share of npu-%d (chip %d)", sharedChip, sharedChip), "all 16 vNPU ids from 148 are in use")
	require.NoError(t, os.WriteFile(s.dcmiState, state, 0o644))
	require.Equal(t, mine, s.vnpus(t), "the failed share left no vNPU")
	full, _ := runningShare(t, ns, "full")

	fixture, err := os.ReadFile(s.dcmiFixture)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.dcmiFixture, fmt.Appendf(slices.Clone(fixture), "\nfail-chip %d dcmi_create_vdevice -8255\n", sharedChip), 0o644))
	s.restartAgent(t, s.env)
	sharePod(t, ns, "refused", shareRequest("ascend910b3.accel-dra.dev", one))
	waitPrepareFailed(t, ns, "refused", fmt.Sprintf("creating a vir05_1c_16g vNPU on chip %d through DCMI", sharedChip), "dcmi_create_vdevice: not supported by this chip or driver (-8255)")
	require.Len(t, s.vnpus(t), 2, "the refused share left no vNPU")
	require.Contains(t, s.vnpus(t), mine[0], "the first share keeps its vNPU")
	require.Equal(t, mine, specMatches(t, good, `vdavinci\d+`), "and its spec")
	require.NoError(t, os.WriteFile(s.dcmiFixture, fixture, 0o644))
	s.restartAgent(t, s.env)
	deleteShares(t, ns, map[string]*resourceapi.ResourceClaim{"good": good, "full": full, "refused": nil})
	require.Empty(t, s.vnpus(t))
}

// waitPrepareFailed waits until the kubelet reports that it could not
// prepare the claim of pod name (event FailedPrepareDynamicResources)
// with a message that names the claim and says each of want.
func waitPrepareFailed(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	pod := waitForPodScheduled(t, ns, name)
	claims := podClaims(t, pod)
	require.Len(t, claims, 1)
	want = append(want, "claim "+ns+"/"+claims[0].Name)
	var last []string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		events, err := cluster.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedPrepareDynamicResources,involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		last = last[:0]
		for _, e := range events.Items {
			last = append(last, e.Message)
			if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(e.Message, w) }) {
				t.Logf("pod %s: %s", name, e.Message)
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "pod %s: no FailedPrepareDynamicResources event saying %q; events: %q", name, want, last)
}

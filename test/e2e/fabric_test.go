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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// superPodNode is a kwok node whose agent reads 16 Atlas A3 dies through
// the mock DCMI library (pkg/vendors/ascend/testdata/dcmi), which answers
// SPOD_INFO with super pod superPod and server index server.
type superPodNode struct {
	name             string
	superPod, server int
	// extra are more lines of the mock's fixture.
	extra []string
	// args are more flags of its agent.
	args []string
}

// Two super pods of two A3 servers each: 32 dies a super pod.
var superPodNodes = []superPodNode{
	{name: "sp1-a", superPod: 1, server: 0}, {name: "sp1-b", superPod: 1, server: 1},
	{name: "sp2-a", superPod: 2, server: 0}, {name: "sp2-b", superPod: 2, server: 1},
}

const (
	// diesPerNode is an Atlas 800T A3's: 8 modules of two dies.
	diesPerNode = 16
	// a3Class is the per-model class of the dies DCMI names 910_9392.
	a3Class = "ascend910-9392.accel-dra.dev"
)

var (
	hyperNodesGVR    = schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}
	volcanoQueuesGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
)

// TestGangsStayInOneSuperPod adds four A3 nodes in two super pods, each
// agent reading its dies through the mock DCMI, and checks that: the
// agents label their Nodes with the super pod and publish each die's
// super pod, server index and SDID; Volcano's label discovery, configured
// by `accel-dra topology export`, builds one tier-1 HyperNode per super
// pod; a hard-mode gang lands wholly in the super pod with free dies even
// where the other has more free CPU; a gang no super pod can hold waits in
// hard mode and spreads in soft mode.
func TestGangsStayInOneSuperPod(t *testing.T) {
	ctx := t.Context()
	lib := buildMockDCMI(t)
	fixtures := map[string]string{}
	for _, n := range superPodNodes {
		fixtures[n.name] = startSuperPodNode(t, lib, n)
	}
	t.Run("the agents label their Nodes and publish each die's place", testSuperPodLabelsAndAttributes)
	t.Run("a node whose dies disagree on their super pod publishes its dies and no super pod", func(t *testing.T) {
		testDisagreeingSuperPod(t, lib)
	})
	t.Run("a garbled spod-info publishes the chips and no super pod", testGarbledSpodInfo)
	t.Run("the admin's level ConfigMap: bad ones are refused by node and field, the chips stay", func(t *testing.T) {
		testAdminLevelMap(t, lib)
	})
	t.Run("a degraded link taints its die and the label stays", func(t *testing.T) {
		testDegradedSuperPodLink(t, superPodNodes[3], fixtures[superPodNodes[3].name])
	})

	export, err := cluster.RunCLI(ctx, cluster.Kubeconfig(), "topology", "export", "--for", "volcano")
	require.NoError(t, err)
	require.Zero(t, export.ExitCode, "accel-dra topology export: %s", export.Stderr)
	t.Logf("accel-dra topology export --for volcano:\n%s", export.Stdout)
	// Runs after Volcano stops: HyperNodes of gone nodes would stay.
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(hyperNodesGVR).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	vc, err := cluster.StartVolcano(ctx, repoPath(queuesDemo, "volcano", "scheduler-config.yaml"), volcanoGates,
		framework.WithHyperNodeDiscovery(export.Stdout))
	require.NoError(t, err)
	t.Cleanup(vc.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Volcano's logs (tail):\n%s", vc.Log(80))
		}
	})
	f := &fabricRun{ns: newNamespace(t), queue: "fabric-" + strconv.FormatInt(time.Now().UnixNano()%100000, 10), vc: vc}
	f.setUp(t)

	t.Run("a tier-1 HyperNode per super pod, with its nodes", f.testHyperNodes)
	t.Run("a hard gang lands in the super pod with free dies", f.testHardGang)
	t.Run("a gang no super pod holds waits, and spreads in soft mode", f.testTooBigGang)
	t.Run("Kueue keeps a job in one super pod, chosen by CPU: only the other has free dies", f.testKueueKeepsAJobInOneSuperPod)
	// Last: it restarts the real node's agent over A3 dies and back.
	t.Run("accel-dra ranktable in an init container writes the claim's dies", func(t *testing.T) {
		f.testRankTableInAnInitContainer(t, lib)
	})
}

// buildMockDCMI compiles the mock libdcmi.so the agents load.
func buildMockDCMI(t *testing.T) string {
	t.Helper()
	src := repoPath("pkg", "vendors", "ascend", "testdata", "dcmi")
	lib := filepath.Join(t.TempDir(), "libdcmi.so")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-I", src, "-o", lib, filepath.Join(src, "mock_dcmi.c")).CombinedOutput()
	require.NoError(t, err, "building the mock libdcmi.so: %s", out)
	return lib
}

// startSuperPodNode adds n as a kwok node whose agent discovers its dies
// through the mock DCMI (--dcmi-library) under a fixture root, writes its
// fabric labels (--fabric-labels, as the chart's default), and waits
// until its 16 dies are published. It returns the mock's fixture file.
func startSuperPodNode(t *testing.T, lib string, n superPodNode) string {
	t.Helper()
	dir := t.TempDir()
	root := a3NodeRoot(t, dir)
	fixture := filepath.Join(dir, "dcmi.txt")
	require.NoError(t, os.WriteFile(fixture, []byte(a3Fixture(n)), 0o644))
	tool := vnpuModeTool(t, dir)

	startFabricAgent(t, framework.NodeInfo{Name: n.name, Profile: "atlas-800t-a3", Labels: map[string]string{fabricNodeLabel: "a3"}}, append([]string{"--root=" + root, "--vendors=" + ascend.Option,
		"--dcmi-library=" + lib, "--npu-smi=" + tool, "--fabric-labels"}, n.args...), []string{"ACCEL_DRA_DCMI_FIXTURE=" + fixture})
	return fixture
}

// vnpuModeTool writes dir/npu-smi, the tool of an agent that reads its
// chips through DCMI: npu-smi is asked only for the vNPU mode there.
func vnpuModeTool(t *testing.T, dir string) string {
	t.Helper()
	tool := filepath.Join(dir, "npu-smi")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\n[ \"$*\" = \"info -t vnpu-mode\" ] && echo 'vnpu-mode : docker' && exit 0\necho \"unexpected: $0 $*\" >&2\nexit 1\n"), 0o755))
	return tool
}

// startFabricAgent adds n as a kwok node whose agent discovers with args
// (instead of n's profile) and env, and waits until it has published its
// chips; the node goes when the test ends.
func startFabricAgent(t *testing.T, n framework.NodeInfo, args, env []string) {
	t.Helper()
	ctx := t.Context()
	node := n.Name
	_, err := cluster.AddAgentNode(ctx, n, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("The agent of %s (tail):\n%s", node, agentLogTail(t, node))
		}
		require.NoError(t, cluster.RemoveAgentNode(context.Background(), node))
	})
	var all []string
	for _, a := range cluster.AgentArgs(node) {
		if !strings.HasPrefix(a, "--profile=") && !strings.HasPrefix(a, "--root=") {
			all = append(all, a)
		}
	}
	cluster.SetAgentArgs(node, append(all, args...))
	cluster.SetAgentEnv(node, env)
	require.NoError(t, cluster.StartAgent(node))
	require.NoError(t, cluster.WaitForAgent(ctx, node))
}

// a3Bus is the PCI function of die logic of an A3 node (assumed, as in
// the mock's A3 fixtures: one function per die).
func a3Bus(logic int) string { return fmt.Sprintf("0000:%02x:00.0", 0x90+logic) }

// a3Fixture is the mock DCMI's node: 8 cards of two 910_9392 dies, SIO
// between the dies of a card, the HCCS switch between cards (as
// testdata/dcmi/atlas-a3-24.txt, there with 2 cards), in super pod
// n.superPod as server n.server (super pod size 384, type 1).
func a3Fixture(n superPodNode) string {
	var b strings.Builder
	for logic := range diesPerNode {
		fmt.Fprintf(&b, "chip %d %d %d %d 910_9392 24 65536 0 %s d803 0\n", logic/2, logic%2, logic, logic, a3Bus(logic))
	}
	b.WriteString("topo-default HCCS_SW\n")
	for card := range diesPerNode / 2 {
		fmt.Fprintf(&b, "topo %d %d SIO\n", 2*card, 2*card+1)
	}
	b.WriteString("vnpu-mode docker\n")
	fmt.Fprintf(&b, "spod %d 384 %d 0 1\n", n.superPod, n.server)
	for _, l := range n.extra {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// a3NodeRoot writes the host root an A3 node's agent discovers: a device
// file per die and the driver's shared ones, and each die's PCI function.
func a3NodeRoot(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "root")
	devices := filepath.Join(root, "sys", "bus", "pci", "devices")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	require.NoError(t, os.MkdirAll(devices, 0o755))
	for logic := range diesPerNode {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", fmt.Sprintf("davinci%d", logic)), nil, 0o644))
		bus := a3Bus(logic)
		fn := filepath.Join(root, "sys", "devices", "pci0000:00", bus)
		require.NoError(t, os.MkdirAll(fn, 0o755))
		for name, value := range map[string]string{"vendor": "0x19e5", "device": "0xd803", "class": "0x120000", "numa_node": strconv.Itoa(logic / 4)} {
			require.NoError(t, os.WriteFile(filepath.Join(fn, name), []byte(value+"\n"), 0o644))
		}
		require.NoError(t, os.Symlink("../../../devices/pci0000:00/"+bus, filepath.Join(devices, bus)))
	}
	for _, f := range []string{"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", f), nil, 0o644))
	}
	return root
}

// testSuperPodLabelsAndAttributes: each agent wrote sp-<id> on its own
// Node, and every die carries the super pod, the server index and an SDID
// laid out as the 910_93 DCMI reference says (server index in bits 22-31,
// card 18-21, die 16-17, card × 2 + die in 0-15).
func testSuperPodLabelsAndAttributes(t *testing.T) {
	for _, n := range superPodNodes {
		want := fmt.Sprintf("sp-%d", n.superPod)
		var node *corev1.Node
		err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			node, err = cluster.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			return err == nil && node.Labels[fabric.LabelSuperPod] == want, nil
		})
		require.NoError(t, err, "node %s: label %s is %q, want %q", n.name, fabric.LabelSuperPod, node.Labels[fabric.LabelSuperPod], want)

		dies := nodeChips(t, n.name)
		require.Len(t, dies, diesPerNode)
		seen := map[int64]bool{}
		for _, d := range dies {
			require.Equal(t, strconv.Itoa(n.superPod), ptr.Deref(d.Attributes[names.AttrSuperPod].StringValue, ""), "device %s", d.Name)
			require.Equal(t, int64(n.server), ptr.Deref(d.Attributes[names.AttrServerIndex].IntValue, -1), "device %s", d.Name)
			sdid := ptr.Deref(d.Attributes[names.AttrSuperDeviceID].IntValue, -1)
			index := ptr.Deref(d.Attributes[names.AttrIndex].IntValue, -1)
			card, die := index/2, index%2
			require.Equal(t, int64(n.server)<<22|card<<18|die<<16|index, sdid, "device %s: SDID %#x", d.Name, sdid)
			require.False(t, seen[sdid], "SDID %d twice on %s", sdid, n.name)
			seen[sdid] = true
		}
	}
}

// testDisagreeingSuperPod: an A3 node one of whose dies names another
// super pod (the mock's spod-chip line) publishes all 16 dies, none with
// a super pod, gets no super pod label, and its agent's log names the die
// and the field.
func testDisagreeingSuperPod(t *testing.T, lib string) {
	n := superPodNode{name: "sp-split", superPod: 3, server: 0, extra: []string{"spod-chip 5 super_pod_id 4"}}
	startSuperPodNode(t, lib, n)
	for _, d := range nodeChips(t, n.name) {
		require.NotContains(t, d.Attributes, names.AttrSuperPod, "device %s", d.Name)
	}
	node, err := cluster.Admin.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, node.Labels, fabric.LabelSuperPod)
	log, err := os.ReadFile(cluster.AgentLog(n.name))
	require.NoError(t, err)
	require.Contains(t, string(log), `"The node's Ascend chips disagree on their super pod, publishing none for the node" npu=2 chip=1 field="super_pod_id" first=3 this=4`)
}

// testGarbledSpodInfo: an agent without DCMI reads its eight A3 dies
// through npu-smi (the 910B3 node's recordings, the chips named Ascend910
// as npu-smi names 910_93 dies), whose spod-info prints an SDID that is not
// a number: all eight chips are published, none with a super pod, the
// node gets no super pod label, and the log names the chip and the field.
func testGarbledSpodInfo(t *testing.T) {
	const node = "sp-garbled"
	src := repoPath("pkg", "vendors", "ascend", "testdata", "atlas-800t-a2")
	recordings := filepath.Join(t.TempDir(), "npu-smi.d")
	require.NoError(t, os.MkdirAll(recordings, 0o755))
	files, err := os.ReadDir(filepath.Join(src, "npu-smi"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(src, "npu-smi", f.Name()))
		require.NoError(t, err)
		if f.Name() == "npu-smi_info.txt" {
			for npu := range 8 {
				data = []byte(strings.Replace(string(data), fmt.Sprintf("| %d     910B3 ", npu), fmt.Sprintf("| %d     Ascend910 ", npu), 1))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(recordings, f.Name()), data, 0o644))
	}
	// The recorded tool: each recording by its command line
	// (discovery.RecordingName), spod-info garbled.
	tool := filepath.Join(t.TempDir(), "npu-smi")
	require.NoError(t, os.WriteFile(tool, []byte(`#!/bin/sh
f="`+recordings+`/npu-smi_$(echo "$*" | tr ' ' '_').txt"
if [ -f "$f" ]; then cat "$f"; exit 0; fi
case "$*" in "info -t spod-info "*)
	printf '\tSDID                           : 0x1c?!\n\tSuper Pod Size                 : 384\n'; exit 0;;
esac
echo "unexpected: $0 $*" >&2
exit 1
`), 0o755))
	startFabricAgent(t, framework.NodeInfo{Name: node, Profile: "atlas-800t-a2"}, []string{"--root=" + filepath.Join(src, "root"), "--vendors=" + ascend.Option, "--npu-smi=" + tool, "--fabric-labels"}, nil)

	chips := nodeChips(t, node)
	require.Len(t, chips, 8)
	for _, d := range chips {
		require.NotContains(t, d.Attributes, names.AttrSuperPod, "device %s", d.Name)
	}
	n, err := cluster.Admin.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, n.Labels, fabric.LabelSuperPod)
	log := agentLogTail(t, node)
	require.Contains(t, log, `"Cannot read the super pod of an Ascend chip, publishing none for the node" npu=0 chip=0`)
	require.Contains(t, log, "SDID is not an unsigned 32-bit number")
}

// testAdminLevelMap: an A3 node's agent reads the admin's ConfigMap of
// fabric levels with the chart's Role (get on that one ConfigMap, by
// name, rendered with kubeletPlugin.fabric.levelConfigMap set). A map that
// names the node twice, gives a level twice or a level that is not a
// valid label value is refused with an error naming the node and the
// field; meanwhile the node keeps its chips and super pod label and gets
// no leaf or spine. A good map then labels it.
func testAdminLevelMap(t *testing.T, lib string) {
	ctx := t.Context()
	const node, cmName = "sp-admin", "fabric-levels"
	objs, err := cluster.RenderChart(ctx, "kubeletPlugin.fabric.nodeLabels=true", "kubeletPlugin.fabric.levelConfigMap="+cmName)
	require.NoError(t, err)
	var rbac []*unstructured.Unstructured
	for _, kind := range []string{"Role", "RoleBinding"} {
		for _, o := range objs.Kinds(kind) {
			if strings.HasSuffix(o.GetName(), "-fabric-levels") {
				rbac = append(rbac, o)
			}
		}
	}
	require.Len(t, rbac, 2, "the chart's Role and RoleBinding of the level ConfigMap")
	_, err = cluster.Apply(ctx, "e2e-fabric", rbac...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), rbac...) })
	ns := rbac[0].GetNamespace()
	cms := cluster.Admin.CoreV1().ConfigMaps(ns)
	setMap := func(doc string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: ns}, Data: map[string]string{fabric.LevelMapKey: doc}}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), cmName, metav1.DeleteOptions{}) })

	setMap("nodes:\n- {name: " + node + ", leaf: leaf-a}\n- {name: " + node + ", leaf: leaf-b}\n")
	startSuperPodNode(t, lib, superPodNode{name: node, superPod: 3, server: 1,
		args: []string{"--fabric-level-configmap=" + ns + "/" + cmName, "--fabric-label-interval=1s"}})
	for _, tc := range []struct{ doc, log string }{
		{"nodes:\n- {name: " + node + ", leaf: leaf-a}\n- {name: " + node + ", leaf: leaf-b}\n", "nodes[1]: node " + node + " is named twice (also nodes[0])"},
		{"nodes:\n- name: " + node + "\n  leaf: leaf-a\n  leaf: leaf-b\n", "nodes[0] (node " + node + "): line 4: field leaf is given twice"},
		{"nodes:\n- {name: " + node + ", leaf: leaf a!}\n", "nodes[0] (node " + node + "): field leaf: "},
	} {
		setMap(tc.doc)
		waitAgentLog(t, node, tc.log)
		requireAdminNodeKept(t, node)
	}
	log := agentLogTail(t, node)
	require.Contains(t, log, "is not a valid label value")
	require.Contains(t, log, `"Cannot read the fabric levels of the admin's ConfigMap; the node's leaf and spine labels stay as they are"`)

	setMap("nodes:\n- {name: " + node + ", leaf: leaf-a, spine: spine-1}\n")
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cluster.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && n.Labels[fabric.LabelLeaf] == "leaf-a" && n.Labels[fabric.LabelSpine] == "spine-1", nil
	})
	require.NoError(t, err, "node %s: the good map's leaf and spine", node)
}

// requireAdminNodeKept: sp-admin still publishes its 16 dies in super pod
// 3, keeps its super pod label and has no level from a bad map.
func requireAdminNodeKept(t *testing.T, node string) {
	t.Helper()
	dies := nodeChips(t, node)
	require.Len(t, dies, diesPerNode)
	for _, d := range dies {
		require.Equal(t, "3", ptr.Deref(d.Attributes[names.AttrSuperPod].StringValue, ""), "device %s", d.Name)
	}
	n, err := cluster.Admin.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "sp-3", n.Labels[fabric.LabelSuperPod])
	require.NotContains(t, n.Labels, fabric.LabelLeaf)
	require.NotContains(t, n.Labels, fabric.LabelSpine)
}

// waitAgentLog waits until the log of node's agent holds text.
func waitAgentLog(t *testing.T, node, text string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		raw, err := os.ReadFile(cluster.AgentLog(node))
		return err == nil && strings.Contains(string(raw), text), nil
	})
	require.NoError(t, err, "the agent of %s never logged %q", node, text)
}

// agentLogTail is the last 16 KiB of the log of node's agent.
func agentLogTail(t *testing.T, node string) string {
	t.Helper()
	raw, err := os.ReadFile(cluster.AgentLog(node))
	require.NoError(t, err)
	return string(raw[max(0, len(raw)-16<<10):])
}

// testDegradedSuperPodLink: when the super pod's fabric records one die
// of n as abnormal (the mock's spod-node-status line, which DCMI's
// SPOD_NODE_STATUS reads at every call), the agent's next health read
// taints that die alone under accel-dra.dev/superpod-link, and the node
// keeps its super pod label; when the record is cleared the taint goes.
func testDegradedSuperPodLink(t *testing.T, n superPodNode, fixture string) {
	const die = int64(5) // card 2, die 1
	sdid := int64(n.server)<<22 | (die/2)<<18 | (die%2)<<16 | die
	healthy, err := os.ReadFile(fixture)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fixture, append(slices.Clone(healthy), fmt.Sprintf("spod-node-status %d 1\n", sdid)...), 0o644))
	t.Cleanup(func() { _ = os.WriteFile(fixture, healthy, 0o644) })

	want := resourceapi.DeviceTaint{Key: names.TaintSuperPodLink, Value: "SuperPodLinkAbnormal", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	waitDieTaints(t, n.name, die, func(taints []resourceapi.DeviceTaint) bool {
		return len(taints) == 1 && taints[0].Key == want.Key && taints[0].Value == want.Value && taints[0].Effect == want.Effect
	})
	for _, d := range nodeChips(t, n.name) {
		if ptr.Deref(d.Attributes[names.AttrIndex].IntValue, -1) != die {
			require.Empty(t, d.Taints, "device %s", d.Name)
		}
	}
	node, err := cluster.Admin.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("sp-%d", n.superPod), node.Labels[fabric.LabelSuperPod], "the label stays while a link is degraded")

	require.NoError(t, os.WriteFile(fixture, healthy, 0o644))
	waitDieTaints(t, n.name, die, func(taints []resourceapi.DeviceTaint) bool { return len(taints) == 0 })
}

// waitDieTaints waits until the taints of the die with index on node
// satisfy ok.
func waitDieTaints(t *testing.T, node string, index int64, ok func([]resourceapi.DeviceTaint) bool) {
	t.Helper()
	var last []resourceapi.DeviceTaint
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		for _, d := range nodeChips(t, node) {
			if ptr.Deref(d.Attributes[names.AttrIndex].IntValue, -1) == index {
				last = d.Taints
				return ok(d.Taints), nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "node %s die %d: taints %v", node, index, last)
}

// nodeChips are the whole-chip devices the agent of node published.
func nodeChips(t *testing.T, node string) []resourceapi.Device {
	t.Helper()
	sl, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	require.NoError(t, err)
	var out []resourceapi.Device
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			if ptr.Deref(d.Attributes[names.AttrType].StringValue, "") == names.TypeChip {
				out = append(out, d)
			}
		}
	}
	return out
}

// fabricRun holds the Volcano objects of TestGangsStayInOneSuperPod.
type fabricRun struct {
	ns, queue string
	jobs      []string
	vc        *framework.Volcano
}

// setUp creates the test's open Volcano queue and the claim template of
// one node's worth of dies.
func (f *fabricRun) setUp(t *testing.T) {
	queue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
		"metadata": map[string]any{"name": f.queue},
		"spec":     map[string]any{"weight": int64(1), "reclaimable": false},
	}}
	_, err := cluster.Dynamic.Resource(volcanoQueuesGVR).Create(t.Context(), queue, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(volcanoQueuesGVR).Delete(context.Background(), f.queue, metav1.DeleteOptions{})
	})
	createTemplate(t, template(f.ns, "sixteen-dies", exactly("npus", a3Class, diesPerNode)))
}

// testHyperNodes: Volcano's label discovery made tier-1 HyperNodes of the
// super pods, each with exactly the nodes of its super pod, and one for
// every super pod. Volcano v1.14.1 can make a second HyperNode of one
// super pod when two of its discovery passes overlap at start (the second
// does not see the first's new HyperNode yet), and with two HyperNodes of
// one domain its allocate action can leave a gang's claims "in the process
// of being allocated" for good. The test deletes the extra ones, as
// docs/queues.md tells an admin to, and checks that Volcano's next
// discovery keeps exactly one per super pod. It looks only at what Volcano
// has left in place for a few seconds: a pass that replaces a HyperNode
// creates the new one before it deletes the old, and deleting the new one
// then would leave the super pod with none until the next pass.
func (f *fabricRun) testHyperNodes(t *testing.T) {
	want := map[string][]string{}
	for _, n := range superPodNodes {
		v := fmt.Sprintf("sp-%d", n.superPod)
		want[v] = append(want[v], n.name)
	}
	const settled = 3 * time.Second
	var now, seen tier1HyperNodes
	var seenAt time.Time
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if now, err = listTier1HyperNodes(ctx); err != nil || !now.haveTheNodesOf(want) {
			seen = tier1HyperNodes{}
			return false, nil
		}
		if !maps.EqualFunc(now.names, seen.names, slices.Equal) {
			seen, seenAt = now, time.Now()
			return false, nil
		}
		if time.Since(seenAt) < settled {
			return false, nil
		}
		if now.onePerSuperPod() {
			return true, nil
		}
		for sp, names := range now.names {
			for _, extra := range names[1:] {
				t.Logf("Volcano made HyperNodes %v of super pod %s; deleting %s", names, sp, extra)
				err := cluster.Dynamic.Resource(hyperNodesGVR).Delete(ctx, extra, metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("deleting HyperNode %s: %w", extra, err)
				}
			}
		}
		seen = tier1HyperNodes{}
		return false, nil
	})
	volcano := "both of its components run"
	if exited := f.vc.Running(); exited != nil {
		volcano = exited.Error()
	}
	require.NoError(t, err, "tier-1 HyperNodes by super pod: %v with nodes %v, want one per super pod with the nodes %v; Volcano: %s",
		now.names, now.members, want, volcano)
}

// tier1HyperNodes are the tier-1 HyperNodes by their super pod label:
// their names (sorted) and, in the same order, their members (sorted).
type tier1HyperNodes struct {
	names   map[string][]string
	members map[string][][]string
}

func listTier1HyperNodes(ctx context.Context) (tier1HyperNodes, error) {
	l, err := cluster.Dynamic.Resource(hyperNodesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return tier1HyperNodes{}, err
	}
	slices.SortFunc(l.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	h := tier1HyperNodes{names: map[string][]string{}, members: map[string][][]string{}}
	for _, hn := range l.Items {
		if tier, _, _ := unstructured.NestedInt64(hn.Object, "spec", "tier"); tier == 1 {
			m := hyperNodeMembers(hn)
			slices.Sort(m)
			sp := hn.GetLabels()[fabric.LabelSuperPod]
			h.names[sp], h.members[sp] = append(h.names[sp], hn.GetName()), append(h.members[sp], m)
		}
	}
	return h, nil
}

// haveTheNodesOf: there are HyperNodes of exactly want's super pods, and
// each lists exactly its super pod's nodes.
func (h tier1HyperNodes) haveTheNodesOf(want map[string][]string) bool {
	if len(h.names) != len(want) {
		return false
	}
	for sp, nodes := range want {
		if len(h.names[sp]) == 0 {
			return false
		}
		for _, m := range h.members[sp] {
			if !slices.Equal(m, nodes) {
				return false
			}
		}
	}
	return true
}

func (h tier1HyperNodes) onePerSuperPod() bool {
	for _, names := range h.names {
		if len(names) != 1 {
			return false
		}
	}
	return true
}

// hyperNodeMembers are the exact node names a HyperNode lists.
func hyperNodeMembers(hn unstructured.Unstructured) []string {
	members, _, _ := unstructured.NestedSlice(hn.Object, "spec", "members")
	var out []string
	for _, m := range members {
		name, _, _ := unstructured.NestedString(m.(map[string]any), "selector", "exactMatch", "name")
		out = append(out, name)
	}
	return out
}

// testHardGang: with sp1-a's dies held, sp1 has 16 free dies and sp2 32;
// sp2's nodes have less free CPU, which Volcano's node order would prefer
// to avoid. A hard gang of two pods × 16 dies in one tier-1 HyperNode
// still lands wholly in sp2.
func (f *fabricRun) testHardGang(t *testing.T) {
	holder := f.pinnedPod(t, "holder", "sp1-a", "sixteen-dies", "1")
	for _, node := range []string{"sp2-a", "sp2-b"} {
		f.pinnedPod(t, "cpu-"+node, node, "", "48")
	}
	job := f.submit(t, "hard-gang", 2, "hard")
	pods := f.waitBound(t, job, 2)
	for _, p := range pods {
		require.Contains(t, []string{"sp2-a", "sp2-b"}, p.Spec.NodeName, "pod %s of the gang left super pod sp-2", p.Name)
	}
	require.NotEqual(t, pods[0].Spec.NodeName, pods[1].Spec.NodeName)
	f.deleteJobs(t)
	deletePod(t, f.ns, holder)
	for _, node := range []string{"sp2-a", "sp2-b"} {
		deletePod(t, f.ns, "cpu-"+node)
	}
}

// testTooBigGang: with sp1-a's dies held, 48 dies are free, 16 in sp1 and
// 32 in sp2: a hard gang of three pods × 16 dies fits no super pod and
// stays Pending with no pod bound, and `accel-dra why` says how many free
// dies each super pod has; the same gang in soft mode runs across both.
func (f *fabricRun) testTooBigGang(t *testing.T) {
	holder := f.pinnedPod(t, "holder", "sp1-a", "sixteen-dies", "1")
	hard := f.submit(t, "too-big-hard", 3, "hard")
	(&volcanoRun{t: t}).waitUnschedulable(f.ns, hard)
	pod := f.pods(t, hard)[0]
	why, err := cluster.RunCLI(t.Context(), cluster.Kubeconfig(), "why", "pod/"+pod.Name, "-n", f.ns)
	require.NoError(t, err)
	t.Logf("accel-dra why pod/%s:\n%s%s", pod.Name, why.Stdout, why.Stderr)
	require.Contains(t, why.Stdout, fmt.Sprintf("gang kept in one %s (Volcano pod group %s: networkTopology mode hard, highestTierAllowed 1); free chips per domain: sp-1: 2 nodes, 16 free chips; sp-2: 2 nodes, 32 free chips",
		fabric.LabelSuperPod, pod.Annotations["scheduling.k8s.io/group-name"]))
	require.Contains(t, why.Stdout, "but its gang is placed whole, in one "+fabric.LabelSuperPod)
	f.deleteJobs(t)

	soft := f.submit(t, "too-big-soft", 3, "soft")
	pods := f.waitBound(t, soft, 3)
	var nodes []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	slices.Sort(nodes)
	require.Equal(t, []string{"sp1-b", "sp2-a", "sp2-b"}, nodes, "the soft gang spreads over the free nodes of both super pods")
	f.deleteJobs(t)
	deletePod(t, f.ns, holder)
}

// pinnedPod creates a plain pod on node (kube-scheduler, nodeSelector),
// with cpu requested and, if claimTemplate is set, a claim from it; it
// waits until the pod is bound.
func (f *fabricRun) pinnedPod(t *testing.T, name, node, claimTemplate, cpu string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "main", Image: "fake",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
	if claimTemplate != "" {
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "npus", ResourceClaimTemplateName: ptr.To(claimTemplate)}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "npus"}}
	}
	createPod(t, pod)
	waitForPodScheduled(t, f.ns, name)
	return name
}

// submit creates a Volcano Job of pods workers, each with 16 dies of the
// test's template, all or none (minAvailable), kept in one tier-1
// HyperNode in mode (hard or soft).
func (f *fabricRun) submit(t *testing.T, name string, pods int64, mode string) string {
	t.Helper()
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": f.ns},
		"spec": map[string]any{
			"schedulerName":   "volcano",
			"queue":           f.queue,
			"minAvailable":    pods,
			"networkTopology": map[string]any{"mode": mode, "highestTierAllowed": int64(1)},
			"tasks": []any{map[string]any{
				"name": "worker", "replicas": pods,
				"template": map[string]any{"spec": map[string]any{
					"restartPolicy":  "Never",
					"tolerations":    []any{map[string]any{"key": "kwok.x-k8s.io/node", "operator": "Exists"}},
					"resourceClaims": []any{map[string]any{"name": "npus", "resourceClaimTemplateName": "sixteen-dies"}},
					"containers": []any{map[string]any{"name": "main", "image": "fake",
						"resources": map[string]any{"requests": map[string]any{"cpu": "1"}, "claims": []any{map[string]any{"name": "npus"}}}}},
				}},
			}},
		},
	}}
	_, err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(f.ns).Create(t.Context(), job, metav1.CreateOptions{FieldManager: framework.FieldManager})
	require.NoError(t, err)
	f.jobs = append(f.jobs, name)
	return name
}

func (f *fabricRun) pods(t *testing.T, job string) []corev1.Pod {
	t.Helper()
	pl, err := cluster.Admin.CoreV1().Pods(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "volcano.sh/job-name=" + job})
	require.NoError(t, err)
	return pl.Items
}

// waitBound waits until n pods of job are bound, and returns them.
func (f *fabricRun) waitBound(t *testing.T, job string, n int) []corev1.Pod {
	t.Helper()
	var bound []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(context.Context) (bool, error) {
		bound = bound[:0]
		for _, p := range f.pods(t, job) {
			if p.Spec.NodeName != "" {
				bound = append(bound, p)
			}
		}
		return len(bound) == n, nil
	})
	require.NoError(t, err, "job %s: %d of %d pods bound", job, len(bound), n)
	return bound
}

// deleteJobs deletes the submitted jobs and waits until their claims are
// gone, so the next case starts with the same free dies.
func (f *fabricRun) deleteJobs(t *testing.T) {
	t.Helper()
	for _, name := range f.jobs {
		err := cluster.Dynamic.Resource(volcanoJobsGVR).Namespace(f.ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		require.NoError(t, err)
	}
	f.jobs = nil
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		pl, err := cluster.Admin.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "volcano.sh/job-name"})
		return err == nil && len(pl.Items) == 0, nil
	})
	require.NoError(t, err, "pods of the deleted jobs still there")
}

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

// Package chart_test renders the Helm chart deployments/helm/accel-dra with
// helm (built from hack/tools, run with `go run`) for the main combinations
// of values and checks the result with the Kubernetes Go types and CEL
// compilers: every document decodes strictly, the DeviceClasses are the
// chart's files unchanged and compile, the RBAC rules, host paths, node
// affinity, arguments and privileges are exactly the expected ones, the
// ValidatingAdmissionPolicy keeps the agent to its own node's slices, and
// the admission webhook (webhook_test.go) is rendered only when enabled,
// matches its server, sends exactly the objects with our configs, and
// serves a certificate that verifies against its caBundle.
package chart_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/nodeagent"
)

// hostMount is a hostPath volume as the agent's container mounts it.
type hostMount struct {
	HostPath string
	Type     corev1.HostPathType
	ReadOnly bool
}

// agentWant is what one node group's DaemonSet must render.
type agentWant struct {
	// hostMounts by container path: exactly these host paths, no others.
	hostMounts map[string]hostMount
	// affinity: the node labels of its one nodeSelectorTerm; nil for none.
	affinity map[string]string
	// args of the agent, in order.
	args []string
	// libraryPath is LD_LIBRARY_PATH of the agent; "" for none.
	libraryPath string
}

// valuesCase is one values file and what the chart must render for it.
type valuesCase struct {
	name   string
	values string
	// deviceClasses are the names of the DeviceClasses installed.
	deviceClasses []string
	// agents: the DaemonSets by node group name, exactly these.
	agents map[string]agentWant
	// securityContext of the agent's container.
	securityContext *corev1.SecurityContext
	// probes: the health server and its probes are on.
	probes bool
	// policy: the ValidatingAdmissionPolicies and their bindings are
	// installed, the ResourceSlice one and, with the fabric node labels
	// the cases keep on wherever the policy is, the Node one.
	policy bool
}

const ascendLibraryPath = "/host/usr/local/Ascend/driver/lib64:/host/usr/local/Ascend/driver/lib64/driver:/host/usr/local/Ascend/driver/lib64/common"

var (
	// topClasses are the top-level files of deviceclasses/, one
	// deviceClasses.<name> switch each.
	topClasses = []string{
		"accelerator.accel-dra.dev",
		"ascend-vnpu.accel-dra.dev", "ascend.accel-dra.dev", "ascend310p.accel-dra.dev", "ascend910.accel-dra.dev",
		"cambricon-mlu.accel-dra.dev", "cambricon-partition.accel-dra.dev", "cambricon.accel-dra.dev",
	}
	// allClasses are what the default values install: the top-level
	// classes and the per-model ones of both vendors.
	allClasses    = withModels(topClasses, "ascend", "cambricon")
	ascendClasses = withModels([]string{"accelerator.accel-dra.dev", "ascend-vnpu.accel-dra.dev", "ascend.accel-dra.dev", "ascend310p.accel-dra.dev", "ascend910.accel-dra.dev"}, "ascend")

	ascendTerm    = map[string]string{"accelerator": "huawei-ascend"}
	cambriconTerm = map[string]string{"accelerator": "cambricon-mlu"}

	privileged = &corev1.SecurityContext{
		Privileged:             ptr.To(true),
		RunAsUser:              ptr.To[int64](0),
		ReadOnlyRootFilesystem: ptr.To(true),
	}
	unprivileged = &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsUser:                ptr.To[int64](0),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	mknodOnly = &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsUser:                ptr.To[int64](0),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"MKNOD"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
)

// mounts joins groups of host mounts into one map.
func mounts(groups ...map[string]hostMount) map[string]hostMount {
	out := map[string]hostMount{}
	for _, g := range groups {
		for k, v := range g {
			out[k] = v
		}
	}
	return out
}

var (
	// kubeletMounts: the kubelet's plugin directories, CDI specs and the
	// checkpoint, written by the agent in every mode.
	kubeletMounts = map[string]hostMount{
		"/var/lib/kubelet/plugins_registry": {"/var/lib/kubelet/plugins_registry", corev1.HostPathDirectory, false},
		"/var/run/cdi":                      {"/var/run/cdi", corev1.HostPathDirectoryOrCreate, false},
		"/var/lib/accel-dra":                {"/var/lib/accel-dra", corev1.HostPathDirectoryOrCreate, false},
		// Read: the pods' DRA devices for the chip metrics' pod labels.
		"/var/lib/kubelet/pod-resources": {"/var/lib/kubelet/pod-resources", corev1.HostPathDirectory, true},
	}
	// discoveryMounts: what the agent reads on real hardware.
	discoveryMounts = map[string]hostMount{
		"/host/dev": {"/dev", corev1.HostPathDirectory, true},
		"/host/sys": {"/sys", corev1.HostPathDirectory, true},
	}
	// ascendPlugin and cambriconPlugin: each served driver's own
	// directory under the kubelet's plugins directory, and no other.
	ascendPlugin = map[string]hostMount{
		"/var/lib/kubelet/plugins/ascend.accel-dra.dev": {"/var/lib/kubelet/plugins/ascend.accel-dra.dev", corev1.HostPathDirectoryOrCreate, false},
	}
	cambriconPlugin = map[string]hostMount{
		"/var/lib/kubelet/plugins/cambricon.accel-dra.dev": {"/var/lib/kubelet/plugins/cambricon.accel-dra.dev", corev1.HostPathDirectoryOrCreate, false},
	}
	// ascendMounts: npu-smi and Huawei's /usr/local/Ascend tree, no more
	// of /usr/local, and no file of the host's /etc (no FileOrCreate of
	// /etc/ascend_install.info).
	ascendMounts = mounts(ascendPlugin, map[string]hostMount{
		"/host/usr/local/sbin/npu-smi": {"/usr/local/sbin/npu-smi", corev1.HostPathFile, true},
		"/host/usr/local/Ascend":       {"/usr/local/Ascend", corev1.HostPathDirectory, true},
	})
	// cambriconMounts: cnmon, Neuware and the driver's procfs directory
	// (the sMLU mode), not /usr/bin.
	cambriconMounts = mounts(cambriconPlugin, map[string]hostMount{
		"/host/usr/bin/cnmon":         {"/usr/bin/cnmon", corev1.HostPathFile, true},
		"/host/usr/local/neuware":     {"/usr/local/neuware", corev1.HostPathDirectory, true},
		"/host/proc/driver/cambricon": {"/proc/driver/cambricon", corev1.HostPathDirectory, true},
	})
	// vnpuMounts: DCMI's vNPU lock and configuration, read-write, as
	// Huawei's ascend-device-plugin mounts them.
	vnpuMounts = map[string]hostMount{
		"/run/vnpu_cfg_lock": {"/run/vnpu_cfg_lock", corev1.HostPathDirectoryOrCreate, false},
		"/etc/vnpu.cfg":      {"/etc/vnpu.cfg", corev1.HostPathFile, false},
	}
)

// commonArgs come first in every mode.
var commonArgs = []string{
	"--node-name=$(NODE_NAME)",
	"--pod-uid=$(POD_UID)",
	"-v=2",
	"--logging-format=text",
	"--registrar-dir=/var/lib/kubelet/plugins_registry",
	"--plugin-dir=/var/lib/kubelet/plugins",
	"--cdi-dir=/var/run/cdi",
	"--state-dir=/var/lib/accel-dra",
	"--health-interval=10s",
	"--unhealthy-taint-effect=NoSchedule",
	"--library-hang-limit=1m",
	"--device-metadata=true",
	"--visible-devices-env=auto",
	"--chip-metrics=true",
	"--chip-metrics-interval=10s",
	"--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock",
}

func args(groups ...[]string) []string {
	return slices.Concat(groups...)
}

// realArgs are the arguments after commonArgs on real hardware: the
// group's vendors, chip and partition modes, and each vendor's tool.
func realArgs(vendors, chipModes, partitionMode string, tools ...string) []string {
	return slices.Concat([]string{"--vendors=" + vendors, "--chip-modes=" + chipModes, "--partition-mode=" + partitionMode, "--healthz-addr=:51515"},
		fabricArgs, []string{"--root=/host", "--cdi-host-root=/"}, tools)
}

// fabricArgs follow the health address: the default fabric node labels.
var fabricArgs = []string{"--fabric-labels=true", "--fabric-label-interval=5m"}

// withTemplates inserts --partition-templates after --partition-mode, where
// the DaemonSet passes it.
func withTemplates(args []string, templates string) []string {
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--partition-mode=") })
	return slices.Insert(slices.Clone(args), i+1, "--partition-templates="+templates)
}

// simArgs are the arguments after commonArgs in simulation.
func simArgs(vendors, chipModes, profile, fakeDevices, root string) []string {
	return slices.Concat([]string{"--vendors=" + vendors, "--chip-modes=" + chipModes, "--partition-mode=auto", "--healthz-addr=:51515"}, fabricArgs,
		[]string{"--profile=" + profile, "--fake-devices=" + fakeDevices, "--root=" + root, "--cdi-host-root=" + root})
}

const (
	npuSmiArg = "--npu-smi=/host/usr/local/sbin/npu-smi"
	cnmonArg  = "--cnmon=/host/usr/bin/cnmon"
)

// defaultAgents are the default node groups' DaemonSets with chipModes,
// the Ascend group with extra mounts.
func defaultAgents(chipModes string, ascendExtra map[string]hostMount) map[string]agentWant {
	return map[string]agentWant{
		"ascend": {hostMounts: mounts(kubeletMounts, discoveryMounts, ascendMounts, ascendExtra), affinity: ascendTerm,
			args: args(commonArgs, realArgs("ascend", chipModes, "auto", npuSmiArg)), libraryPath: ascendLibraryPath},
		"cambricon": {hostMounts: mounts(kubeletMounts, discoveryMounts, cambriconMounts), affinity: cambriconTerm,
			args: args(commonArgs, realArgs("cambricon", chipModes, "auto", cnmonArg))},
	}
}

var fakeRoot = map[string]hostMount{
	"/var/lib/accel-dra/fake-root": {"/var/lib/accel-dra/fake-root", corev1.HostPathDirectoryOrCreate, false},
}

var cases = []valuesCase{
	{
		name:            "the default values",
		values:          "",
		deviceClasses:   allClasses,
		agents:          defaultAgents("Whole", nil),
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "Ascend only, with newer hosts' npu-smi",
		values: `
vendors:
  cambricon: {enabled: false}
  ascend: {npuSmi: /host/usr/local/bin/npu-smi}
`,
		deviceClasses: ascendClasses,
		agents: map[string]agentWant{"ascend": {
			hostMounts: mounts(kubeletMounts, discoveryMounts, ascendPlugin, map[string]hostMount{
				"/host/usr/local/bin/npu-smi": {"/usr/local/bin/npu-smi", corev1.HostPathFile, true},
				"/host/usr/local/Ascend":      {"/usr/local/Ascend", corev1.HostPathDirectory, true},
			}),
			affinity: ascendTerm, args: args(commonArgs, realArgs("ascend", "Whole", "auto", "--npu-smi=/host/usr/local/bin/npu-smi")), libraryPath: ascendLibraryPath,
		}},
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "Cambricon only, on nodes with labels of their own, CNDev from /opt",
		values: `
vendors:
  ascend: {enabled: false}
  cambricon:
    cndevLibrary: /host/opt/neuware/lib64/libcndev.so
    hostPaths: [{path: /opt/neuware/lib64/libcndev.so, type: File}]
nodeGroups:
- name: inference
  vendors: [cambricon]
  nodeSelector:
    example.com/mlu: "true"
    example.com/pool: inference
`,
		deviceClasses: withModels([]string{"accelerator.accel-dra.dev", "cambricon-mlu.accel-dra.dev", "cambricon-partition.accel-dra.dev", "cambricon.accel-dra.dev"}, "cambricon"),
		agents: map[string]agentWant{"inference": {
			hostMounts: mounts(kubeletMounts, discoveryMounts, cambriconPlugin, map[string]hostMount{
				"/host/usr/bin/cnmon":                 {"/usr/bin/cnmon", corev1.HostPathFile, true},
				"/host/opt/neuware/lib64/libcndev.so": {"/opt/neuware/lib64/libcndev.so", corev1.HostPathFile, true},
				"/host/proc/driver/cambricon":         {"/proc/driver/cambricon", corev1.HostPathDirectory, true},
			}),
			affinity: map[string]string{"example.com/mlu": "true", "example.com/pool": "inference"},
			args:     args(commonArgs, realArgs("cambricon", "Whole", "auto", cnmonArg, "--cndev-library=/host/opt/neuware/lib64/libcndev.so")),
		}},
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "simulation with fake devices",
		values: `
simulation: {profile: mixed-910b-mlu370, fakeDevices: true}
`,
		deviceClasses: allClasses,
		agents: map[string]agentWant{
			"ascend": {hostMounts: mounts(kubeletMounts, ascendPlugin, fakeRoot), affinity: ascendTerm,
				args: args(commonArgs, simArgs("ascend", "Whole", "mixed-910b-mlu370", "true", "/var/lib/accel-dra/fake-root"))},
			"cambricon": {hostMounts: mounts(kubeletMounts, cambriconPlugin, fakeRoot), affinity: cambriconTerm,
				args: args(commonArgs, simArgs("cambricon", "Whole", "mixed-910b-mlu370", "true", "/var/lib/accel-dra/fake-root"))},
		},
		securityContext: mknodOnly,
		probes:          true,
		policy:          true,
	},
	{
		name: "simulation of slices only, in another fake root, partitioned: no vNPU mounts",
		values: `
simulation: {profile: atlas-800t-a2, root: /srv/accel-dra-sim}
vendors:
  cambricon: {enabled: false}
kubeletPlugin: {chipModes: Partitioned}
`,
		deviceClasses: ascendClasses,
		agents: map[string]agentWant{"ascend": {hostMounts: mounts(kubeletMounts, ascendPlugin, map[string]hostMount{
			"/srv/accel-dra-sim": {"/srv/accel-dra-sim", corev1.HostPathDirectoryOrCreate, true},
		}), affinity: ascendTerm, args: args(commonArgs, simArgs("ascend", "Partitioned", "atlas-800t-a2", "false", "/srv/accel-dra-sim"))}},
		securityContext: unprivileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "no extended-resource classes",
		values: `
deviceClasses: {ascend910: false, ascend310p: false, cambricon-mlu: false}
`,
		deviceClasses:   withModels([]string{"accelerator.accel-dra.dev", "ascend-vnpu.accel-dra.dev", "ascend.accel-dra.dev", "cambricon-partition.accel-dra.dev", "cambricon.accel-dra.dev"}, "ascend", "cambricon"),
		agents:          defaultAgents("Whole", nil),
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "partitions only where the admin asks: Ascend chips Partitioned, so the Ascend group mounts DCMI's vNPU files",
		values: `
kubeletPlugin: {chipModes: "npu-*=Partitioned"}
`,
		deviceClasses:   allClasses,
		agents:          defaultAgents("npu-*=Partitioned", vnpuMounts),
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "empty chip modes are Whole",
		values: `
kubeletPlugin: {chipModes: ""}
`,
		deviceClasses:   allClasses,
		agents:          defaultAgents("Whole", nil),
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "per-group partition modes: vNPUs declared on in one Ascend group, off in another, a mixed group; offered templates per group or from kubeletPlugin",
		values: `
kubeletPlugin: {partitionTemplates: [smlu-50p]}
nodeGroups:
- {name: vnpu, vendors: [ascend], nodeSelector: {accelerator: huawei-ascend, vnpu: "on"}, partitionMode: "on", chipModes: Partitioned, partitionTemplates: [vir10-3c-32g, vir05-1c-16g]}
- {name: whole, vendors: [ascend], nodeSelector: {accelerator: huawei-ascend, vnpu: "off"}, partitionMode: "off", chipModes: Partitioned}
- {name: mixed, vendors: [cambricon, ascend], nodeSelector: {accelerator: mixed}, chipModes: "mlu-*=Partitioned", tolerations: [{key: example.com/mixed, operator: Exists}]}
`,
		deviceClasses: allClasses,
		agents: map[string]agentWant{
			"vnpu": {hostMounts: mounts(kubeletMounts, discoveryMounts, ascendMounts, vnpuMounts), affinity: map[string]string{"accelerator": "huawei-ascend", "vnpu": "on"},
				args: withTemplates(args(commonArgs, realArgs("ascend", "Partitioned", "on", npuSmiArg)), "vir10-3c-32g,vir05-1c-16g"), libraryPath: ascendLibraryPath},
			"whole": {hostMounts: mounts(kubeletMounts, discoveryMounts, ascendMounts), affinity: map[string]string{"accelerator": "huawei-ascend", "vnpu": "off"},
				args: withTemplates(args(commonArgs, realArgs("ascend", "Partitioned", "off", npuSmiArg)), "smlu-50p"), libraryPath: ascendLibraryPath},
			// Both vendors' files; its chip modes name Partitioned, so
			// DCMI's vNPU files too.
			"mixed": {hostMounts: mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts, vnpuMounts), affinity: map[string]string{"accelerator": "mixed"},
				args: withTemplates(args(commonArgs, realArgs("ascend,cambricon", "mlu-*=Partitioned", "auto", npuSmiArg, cnmonArg)), "smlu-50p"), libraryPath: ascendLibraryPath},
		},
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "every node, both vendors in one group, shared chips, no probes and no admission policy",
		values: `
nodeGroups: [{name: all, vendors: [ascend, cambricon]}]
kubeletPlugin: {healthzPort: 0, chipModes: "Shared", visibleDevicesEnv: omit, health: {interval: "0", unhealthyTaintEffect: NoExecute}, fabric: {nodeLabels: false}}
validatingAdmissionPolicy: {enabled: false}
logVerbosity: 5
logging: {format: json}
`,
		deviceClasses: allClasses,
		agents: map[string]agentWant{"all": {
			hostMounts: mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
			args: args(slices.Replace(slices.Replace(slices.Clone(commonArgs), 8, 13, "--health-interval=0", "--unhealthy-taint-effect=NoExecute", "--library-hang-limit=1m", "--device-metadata=true", "--visible-devices-env=omit"), 2, 4, "-v=5", "--logging-format=json"),
				[]string{"--vendors=ascend,cambricon", "--chip-modes=Shared", "--partition-mode=auto", "--root=/host", "--cdi-host-root=/", npuSmiArg, cnmonArg}),
			libraryPath: ascendLibraryPath,
		}},
		securityContext: privileged,
		probes:          false,
		policy:          false,
	},
}

// agentKinds are the kinds rendered for the node agent with the defaults:
// a DaemonSet per default node group (Ascend, Cambricon).
var agentKinds = []string{"*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.DaemonSet", "*v1.DaemonSet", "*v1.ClusterRole",
	"*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding", "*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding"}

func TestEveryRenderedDocumentDecodesStrictlyIntoItsKubernetesType(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c)
			// The agent's objects and the CLI views' ClusterRole.
			want := []string{"*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.ClusterRole"}
			for range c.agents {
				want = append(want, "*v1.DaemonSet")
			}
			for range c.deviceClasses {
				want = append(want, "*v1.DeviceClass")
			}
			if c.policy {
				want = append(want, "*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding",
					"*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding")
			}
			// These cases leave the webhook at its defaults: on, with a
			// certificate made by Helm.
			want = append(want, webhookCases[0].kinds()...)
			sort.Strings(want)
			require.Equal(t, want, r.kinds())
		})
	}
	for _, c := range webhookCases {
		t.Run(c.caseName(), func(t *testing.T) {
			want := slices.Concat(agentKinds, c.kinds())
			for range allClasses {
				want = append(want, "*v1.DeviceClass")
			}
			sort.Strings(want)
			require.Equal(t, want, renderWebhook(t, c).kinds())
		})
	}
}

func TestTheInstalledDeviceClassesAreTheChartsFilesUnchanged(t *testing.T) {
	files := classFiles(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			classes := render(t, c).deviceClasses()
			var names []string
			for name, doc := range classes {
				names = append(names, name)
				require.Equal(t, "accel-dra/templates/deviceclasses.yaml", doc.source)
				file, ok := files[name]
				require.True(t, ok, "the DeviceClass %s comes from the file named after it", name)
				require.Equal(t, strings.TrimSpace(file), strings.TrimSpace(doc.raw), "DeviceClass %s", name)
			}
			sort.Strings(names)
			require.Equal(t, c.deviceClasses, names)
		})
	}
	t.Run("the default values install every file", func(t *testing.T) {
		var names []string
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
		require.Equal(t, allClasses, names)
	})
}

func TestEveryDeviceClassSelectorCompilesWithTheUpstreamCELCompiler(t *testing.T) {
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true})
	for name, doc := range render(t, cases[0]).deviceClasses() {
		t.Run(name, func(t *testing.T) {
			dc := doc.object.(*resourcev1.DeviceClass)
			require.NotEmpty(t, dc.Spec.Selectors)
			for _, s := range dc.Spec.Selectors {
				require.NotNil(t, s.CEL)
				result := compiler.CompileCELExpression(s.CEL.Expression, dracel.Options{})
				require.Nil(t, result.Error, "compiling %q", s.CEL.Expression)
			}
		})
	}
}

// servedDrivers are the DRA drivers of the vendors the agents serve
// (their --vendors arguments), in the order ascend, cambricon.
func servedDrivers(t *testing.T, c valuesCase) []string {
	t.Helper()
	served := map[string]bool{}
	for _, a := range c.agents {
		found := false
		for _, arg := range a.args {
			if vendors, ok := strings.CutPrefix(arg, "--vendors="); ok {
				found = true
				for _, v := range strings.Split(vendors, ",") {
					served[v+".accel-dra.dev"] = true
				}
			}
		}
		require.True(t, found, "an agent of the case has no --vendors argument")
	}
	var drivers []string
	for _, d := range []string{"ascend.accel-dra.dev", "cambricon.accel-dra.dev"} {
		if served[d] {
			drivers = append(drivers, d)
		}
	}
	return drivers
}

// agents are the rendered DaemonSets of c by node group name, checked to
// be exactly one per group the case expects.
func agents(t *testing.T, c valuesCase) map[string]*appsv1.DaemonSet {
	t.Helper()
	out := map[string]*appsv1.DaemonSet{}
	for _, ds := range objectsOf[*appsv1.DaemonSet](render(t, c)) {
		group, ok := strings.CutPrefix(ds.Name, fullname+"-kubeletplugin-")
		require.True(t, ok, "DaemonSet %s is named after its node group", ds.Name)
		require.Equal(t, group, ds.Spec.Template.Labels["accel-dra.dev/node-group"])
		out[group] = ds
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(c.agents)), slices.Collect(maps.Keys(out)), "one DaemonSet per node group")
	return out
}

func TestTheClusterRoleGrantsExactlyWhatTheAgentUses(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"list", "watch", "create", "update", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
				// pkg/claimstatus: server-side apply of status.devices.
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"patch"}},
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/driver"}, ResourceNames: servedDrivers(t, c), Verbs: []string{"associated-node:patch"}},
			}
			if c.policy {
				// pkg/nodeagent: server-side apply of the fabric labels.
				want = append(want, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"patch"}})
			}
			r := render(t, c)
			role := r.clusterRole(t)
			require.Equal(t, want, role.Rules)

			sa := r.serviceAccount(t)
			require.Equal(t, namespace, sa.Namespace)
			binding := r.clusterRoleBinding(t)
			require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
			require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)
			for _, ds := range agents(t, c) {
				require.Equal(t, sa.Name, ds.Spec.Template.Spec.ServiceAccountName, "the agent runs as the bound ServiceAccount")
			}
		})
	}
}

// The API server authorizes each driver's status.devices entries on the
// synthetic resourceclaims/driver subresource, named after the driver
// (k8s.io/kubernetes pkg/registry/resource.AuthorizedForDeviceStatus):
// "associated-node:<verb>" for a ServiceAccount token bound to a pod on the
// claim's node, "arbitrary-node:<verb>" for any claim. The agent's role
// must name only our drivers and only the associated-node verbs, so a
// stolen agent token cannot write another driver's entries or those of
// claims on other nodes.
func TestTheAgentMayWriteOnlyOurDriversDeviceStatusAndOnlyOnItsNode(t *testing.T) {
	ours := []string{"ascend.accel-dra.dev", "cambricon.accel-dra.dev"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var driverRules int
			for _, rule := range render(t, c).clusterRole(t).Rules {
				require.NotContains(t, rule.Resources, "*", "no wildcard resources")
				require.NotContains(t, rule.Verbs, "*", "no wildcard verbs")
				require.NotContains(t, rule.APIGroups, "*", "no wildcard API groups")
				for _, v := range rule.Verbs {
					require.False(t, strings.HasPrefix(v, "arbitrary-node:"), "verb %s lets the agent write claims of any node", v)
				}
				if !slices.Contains(rule.Resources, "resourceclaims/driver") {
					continue
				}
				driverRules++
				require.Equal(t, []string{"resourceclaims/driver"}, rule.Resources, "the driver rule grants nothing else")
				require.NotEmpty(t, rule.ResourceNames, "an empty resourceNames would allow every driver")
				require.Subset(t, ours, rule.ResourceNames)
				for _, v := range rule.Verbs {
					require.True(t, strings.HasPrefix(v, "associated-node:"), "verb %s", v)
				}
			}
			require.Equal(t, 1, driverRules)
		})
	}
}

// agentContainer is the DaemonSet's only container.
func agentContainer(t *testing.T, ds *appsv1.DaemonSet) corev1.Container {
	t.Helper()
	require.Len(t, ds.Spec.Template.Spec.Containers, 1)
	require.Empty(t, ds.Spec.Template.Spec.InitContainers)
	return ds.Spec.Template.Spec.Containers[0]
}

// hostMountsOf are the host paths ds's agent container mounts, by
// container path, checking that every volume is mounted once and the only
// other volume is a bounded /tmp.
func hostMountsOf(t *testing.T, ds *appsv1.DaemonSet) map[string]hostMount {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	got := map[string]hostMount{}
	mounted := map[string]bool{}
	for _, m := range agentContainer(t, ds).VolumeMounts {
		v, ok := volumes[m.Name]
		require.True(t, ok, "volume %s of mount %s", m.Name, m.MountPath)
		require.False(t, mounted[m.Name], "volume %s mounted twice", m.Name)
		mounted[m.Name] = true
		require.Nil(t, m.MountPropagation, "mount %s", m.MountPath)
		if v.HostPath == nil {
			// The only other volume: scratch space, as the root
			// filesystem is read-only.
			require.Equal(t, "/tmp", m.MountPath)
			require.NotNil(t, v.EmptyDir)
			require.NotNil(t, v.EmptyDir.SizeLimit, "/tmp is bounded")
			require.Equal(t, "64Mi", v.EmptyDir.SizeLimit.String())
			continue
		}
		require.NotNil(t, v.HostPath.Type, "hostPath %s has an explicit type", v.HostPath.Path)
		got[m.MountPath] = hostMount{v.HostPath.Path, *v.HostPath.Type, m.ReadOnly}
	}
	require.Len(t, mounted, len(volumes), "every volume is mounted")
	return got
}

func TestTheDaemonSetMountsExactlyTheExpectedHostPaths(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for group, ds := range agents(t, c) {
				require.Equal(t, c.agents[group].hostMounts, hostMountsOf(t, ds), "node group %s", group)
			}
		})
	}
}

// No agent mounts a whole system directory (one pod spec for both
// vendors used to mount all of /usr/local and /usr/bin) or the kubelet's
// whole plugins directory (only its drivers' own), nor creates a file on
// a node (FileOrCreate would make /etc/ascend_install.info on nodes
// without the driver). Only the vNPU groups write outside the kubelet's
// and the agent's own directories.
func TestNoAgentMountsAWholeSystemDirectoryOrCreatesAFile(t *testing.T) {
	whole := []string{"/", "/usr", "/usr/local", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/etc", "/proc", "/run", "/var", "/var/lib/kubelet", "/var/lib/kubelet/plugins"}
	writable := []string{"/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins/ascend.accel-dra.dev", "/var/lib/kubelet/plugins/cambricon.accel-dra.dev",
		"/var/run/cdi", "/var/lib/accel-dra", "/var/lib/accel-dra/fake-root", "/run/vnpu_cfg_lock", "/etc/vnpu.cfg"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for group, ds := range agents(t, c) {
				for path, m := range hostMountsOf(t, ds) {
					require.NotContains(t, whole, filepath.Clean(m.HostPath), "node group %s mounts all of %s at %s", group, m.HostPath, path)
					require.NotEqual(t, corev1.HostPathFileOrCreate, m.Type, "node group %s creates %s on nodes without it", group, m.HostPath)
					require.NotEqual(t, "/etc/ascend_install.info", m.HostPath)
					if !m.ReadOnly {
						require.Contains(t, writable, m.HostPath, "node group %s writes %s", group, m.HostPath)
					}
				}
			}
		})
	}
}

// DCMI's vNPU lock directory and configuration are mounted exactly where
// the group may make vNPUs: real Ascend chips, a partition mode that is
// not off and chip modes that partition.
func TestOnlyVNPUGroupsMountDCMIsVNPUFiles(t *testing.T) {
	withVNPU := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for group, ds := range agents(t, c) {
				a := agentContainer(t, ds).Args
				hasArg := func(prefix, part string) bool {
					return slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, prefix) && strings.Contains(s, part) })
				}
				vnpu := hasArg("--vendors=", "ascend") && !slices.Contains(a, "--partition-mode=off") && hasArg("--chip-modes=", "Partitioned") && !hasArg("--profile=", "")
				got := hostMountsOf(t, ds)
				for path, m := range vnpuMounts {
					if vnpu {
						require.Equal(t, m, got[path], "node group %s makes vNPUs", group)
					} else {
						require.NotContains(t, got, path, "node group %s makes no vNPUs", group)
					}
				}
				if vnpu {
					withVNPU++
				}
			}
		})
	}
	require.Equal(t, 3, withVNPU, "the cases have vNPU groups")
}

func TestEachNodeGroupRunsOnTheNodesItSelects(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for group, ds := range agents(t, c) {
				spec := ds.Spec.Template.Spec
				require.Empty(t, spec.NodeSelector)
				want := c.agents[group].affinity
				if want == nil {
					require.Nil(t, spec.Affinity, "node group %s runs on every node", group)
					continue
				}
				require.NotNil(t, spec.Affinity)
				require.NotNil(t, spec.Affinity.NodeAffinity)
				require.Nil(t, spec.Affinity.PodAffinity)
				require.Nil(t, spec.Affinity.PodAntiAffinity)
				required := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				require.NotNil(t, required)
				require.Len(t, required.NodeSelectorTerms, 1, "node group %s", group)
				term := required.NodeSelectorTerms[0]
				require.Empty(t, term.MatchFields)
				labels := map[string]string{}
				for _, e := range term.MatchExpressions {
					require.Equal(t, corev1.NodeSelectorOpIn, e.Operator)
					require.Len(t, e.Values, 1)
					labels[e.Key] = e.Values[0]
				}
				require.Equal(t, want, labels, "node group %s", group)
			}
		})
	}
}

func TestTheAgentRunsWithTheArgumentsAndPrivilegesOfItsMode(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for group, ds := range agents(t, c) {
				checkAgentContainer(t, c, c.agents[group], agentContainer(t, ds))
			}
		})
	}
}

// checkAgentContainer checks one node group's agent container against
// the case and the group's expectations.
func checkAgentContainer(t *testing.T, c valuesCase, want agentWant, ctr corev1.Container) {
	t.Helper()
	require.Equal(t, []string{"/usr/bin/accel-dra-kubeletplugin"}, ctr.Command)
	require.Equal(t, want.args, ctr.Args)
	require.Equal(t, "ghcr.io/accel-dra/accel-dra:0.1.0", ctr.Image)

	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
	}
	require.Equal(t, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, env["NODE_NAME"].ValueFrom)
	require.Equal(t, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}, env["POD_UID"].ValueFrom)
	require.Equal(t, "50", env["GOGC"].Value, "the chart's GC target (kubeletPlugin.goGC)")
	wantEnv := 3
	if want.libraryPath != "" {
		require.Equal(t, want.libraryPath, env["LD_LIBRARY_PATH"].Value)
		wantEnv++
	}
	require.Len(t, ctr.Env, wantEnv)

	require.Equal(t, c.securityContext, ctr.SecurityContext)
	require.Equal(t, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": mustQuantity(t, "50m"), "memory": mustQuantity(t, "72Mi")},
		Limits:   corev1.ResourceList{"memory": mustQuantity(t, "256Mi")},
	}, ctr.Resources)

	if !c.probes {
		require.Nil(t, ctr.StartupProbe)
		require.Nil(t, ctr.LivenessProbe)
		require.Nil(t, ctr.ReadinessProbe)
		require.Empty(t, ctr.Ports)
		return
	}
	require.Equal(t, []corev1.ContainerPort{{Name: "healthz", ContainerPort: 51515, Protocol: corev1.ProtocolTCP}}, ctr.Ports)
	for probe, path := range map[*corev1.Probe]string{ctr.StartupProbe: "/livez", ctr.LivenessProbe: "/livez", ctr.ReadinessProbe: "/readyz"} {
		require.NotNil(t, probe)
		require.Equal(t, &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}, probe.HTTPGet)
	}
	require.Greater(t, time.Duration(ctr.LivenessProbe.TimeoutSeconds)*time.Second, nodeagent.LiveTimeout,
		"the liveness probe waits longer than /livez's own check")
}

func TestTheDaemonSetRollsOutANewPodBesideTheOldOneAndStaysOnItsNodes(t *testing.T) {
	groups := agents(t, cases[0])
	for _, ds := range groups {
		checkRollout(t, ds)
	}
	// Each DaemonSet's selector picks its own pods only.
	require.NotEqual(t, groups["ascend"].Spec.Selector.MatchLabels, groups["cambricon"].Spec.Selector.MatchLabels)
}

func checkRollout(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	require.Equal(t, namespace, ds.Namespace)
	require.Equal(t, appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxSurge:       ptr.To(intstr.FromInt32(1)),
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		},
	}, ds.Spec.UpdateStrategy)
	spec := ds.Spec.Template.Spec
	require.Equal(t, "system-node-critical", spec.PriorityClassName)
	require.False(t, spec.HostNetwork, "the probes and the API server are reached over the pod network")
	require.False(t, spec.HostPID)
	require.Empty(t, spec.Tolerations)
	// The API server rejects a DaemonSet whose selector does not match
	// its pod template.
	require.NotEmpty(t, ds.Spec.Selector.MatchLabels)
	for k, v := range ds.Spec.Selector.MatchLabels {
		require.Equal(t, v, ds.Spec.Template.Labels[k], "pod label %s", k)
	}
	require.Equal(t, ds.Labels["accel-dra.dev/node-group"], ds.Spec.Selector.MatchLabels["accel-dra.dev/node-group"])
}

func TestEveryFlagTheDaemonSetPassesIsAFlagOfTheAgent(t *testing.T) {
	flags := commandFlags(t, "accel-dra-kubeletplugin")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, ds := range agents(t, c) {
				for _, arg := range agentContainer(t, ds).Args {
					name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
					require.True(t, flags[name], "accel-dra-kubeletplugin --help lists no flag %q (from %s)", name, arg)
				}
			}
		})
	}
}

func TestValuesThatCannotWorkStopTheRenderingWithAReason(t *testing.T) {
	tests := []struct {
		name   string
		values string
		reason string
	}{
		{"no vendor enabled", "vendors: {ascend: {enabled: false}, cambricon: {enabled: false}}",
			"enable at least one of vendors.ascend.enabled and vendors.cambricon.enabled"},
		{"fake devices without a profile", "simulation: {fakeDevices: true}",
			"simulation.fakeDevices needs simulation.profile"},
		{"a DeviceClass the chart does not have", "deviceClasses: {ascnd: true}",
			"deviceClasses.ascnd: the chart has no deviceclasses/ascnd.accel-dra.dev.yaml"},
		{"excluding a per-model class the chart does not have", "modelDeviceClasses: {exclude: [ascend910x.accel-dra.dev]}",
			"modelDeviceClasses.exclude: the chart generates no DeviceClass ascend910x.accel-dra.dev"},
		{"an extra class the chart installs already", "modelDeviceClasses: {extra: [{vendor: cambricon, model: MLU370-X8, template: 25p}]}",
			"modelDeviceClasses.extra[0]: the DeviceClass mlu370-x8-smlu-25p.accel-dra.dev is installed already"},
		{"an extra class twice", "modelDeviceClasses: {enabled: false, extra: [{vendor: ascend, model: Ascend910C}, {vendor: ascend, model: Ascend910C}]}",
			"modelDeviceClasses.extra[1]: the DeviceClass ascend910c.accel-dra.dev is installed already"},
		{"an extra class of a vendor the chart does not have", "modelDeviceClasses: {extra: [{vendor: nvidia, model: H100}]}",
			"modelDeviceClasses.extra[0].vendor: the chart has no vendor nvidia (its vendors: ascend, cambricon)"},
		{"an extra class without a model", "modelDeviceClasses: {extra: [{vendor: ascend, template: vir04}]}",
			"at '/modelDeviceClasses/extra/0': missing property 'model'"},
		{"an existing ServiceAccount without a name", "serviceAccount: {create: false}",
			"serviceAccount.name must name an existing ServiceAccount"},
		{"a misspelt vendor", "vendors: {acsend: {enabled: false}}",
			"vendors.acsend: the chart has no vendor acsend (its vendors: ascend, cambricon)"},
		{"a misspelt key of a vendor", "vendors: {ascend: {npuSmii: /host/usr/local/bin/npu-smi}}",
			"vendors.ascend.npuSmii: vendor ascend has no such value (it has enabled, nodeSelector, hostPaths, libraryPath, npuSmi, dcmiLibrary)"},
		{"a misspelt key (values.schema.json)", "vendors: {ascend: {enabeld: false}}",
			"at '/vendors/ascend/enabeld'"},
		{"a library path that is neither empty, none nor absolute", "vendors: {cambricon: {cndevLibrary: libcndev.so}}",
			"at '/vendors/cambricon/cndevLibrary'"},
		{"a group's vendor the chart does not have", "nodeGroups: [{name: gpu, vendors: [nvidia]}]",
			"nodeGroups[0].vendors: the chart has no vendor nvidia (its vendors: ascend, cambricon)"},
		{"a failure policy the API does not have", "validatingAdmissionPolicy: {failurePolicy: Warn}",
			"at '/validatingAdmissionPolicy/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		{"a relative tool path", "vendors: {cambricon: {cnmon: usr/bin/cnmon}}",
			"at '/vendors/cambricon/cnmon'"},
		{"a tool path outside the node's root", "vendors: {ascend: {npuSmi: /usr/local/sbin/npu-smi}}",
			`vendors.ascend.npuSmi "/usr/local/sbin/npu-smi": the tool's path on the node under /host`},
		{"the old per-vendor node selector", "vendors: {ascend: {nodeSelector: {accelerator: npu}}}",
			"vendors.ascend.nodeSelector is replaced by nodeGroups[].nodeSelector"},
		{"an enabled vendor no group serves", "nodeGroups: [{name: npu, vendors: [ascend], nodeSelector: {accelerator: huawei-ascend}}]",
			"vendors.cambricon is enabled but no nodeGroups entry serves it"},
		{"two groups of one name", "nodeGroups: [{name: a, vendors: [ascend], nodeSelector: {x: a}}, {name: a, vendors: [cambricon], nodeSelector: {x: b}}]",
			`nodeGroups[1].name: "a" is the name of nodeGroups[0] already`},
		{"a vendor's groups overlapping on every node", "nodeGroups: [{name: all, vendors: [ascend, cambricon]}, {name: npu, vendors: [ascend], nodeSelector: {x: a}}]",
			"nodeGroups[0] (all) and nodeGroups[1] both serve ascend and one of them has no nodeSelector"},
		{"a vendor's groups whose selectors a node can match together", "nodeGroups: [{name: npu, vendors: [ascend], nodeSelector: {accelerator: huawei-ascend}}, {name: mixed, vendors: [ascend, cambricon], nodeSelector: {pool: mixed}}]",
			"nodeGroups[0] (npu) and nodeGroups[1] (mixed) both serve ascend and a node with both nodeSelectors' labels is selected by both"},
		{"a chip mode the agent does not have", "kubeletPlugin: {chipModes: Bogus}",
			`nodeGroups[0] (ascend): chipModes entry 1 "Bogus": mode "Bogus" is not Whole, Partitioned or Shared`},
		{"a group's chip modes naming no chip", "nodeGroups: [{name: a, vendors: [ascend, cambricon], chipModes: \"Partitioned, gpu-0=Shared\"}]",
			`nodeGroups[0] (a): chipModes entry 2 "gpu-0=Shared": "gpu-0" is not a chip device name (npu-N, mlu-N or npu-*, mlu-*)`},
		{"an unknown partition template", "kubeletPlugin: {partitionTemplates: [vir99]}",
			`nodeGroups[0] (ascend): partitionTemplates: "vir99" is the slug of no partition template (known: smlu-25p, smlu-50p, vir01,`},
		{"the metrics port on the probes' port", "metrics: {port: 51515}",
			"metrics.port 51515 is kubeletPlugin.healthzPort too: the metrics server and the probe server cannot listen on one port"},
		{"a group without vendors", "nodeGroups: [{name: none, vendors: []}]",
			"at '/nodeGroups/0/vendors'"},
		{"a group name that is no DNS label", "nodeGroups: [{name: Ascend_1, vendors: [ascend]}]",
			"at '/nodeGroups/0/name'"},
		{"a partition mode the agent does not have", "nodeGroups: [{name: a, vendors: [ascend, cambricon], partitionMode: docker}]",
			"at '/nodeGroups/0/partitionMode'"},
		{"a host path type that could create it", "vendors: {ascend: {hostPaths: [{path: /usr/local/Ascend, type: DirectoryOrCreate}]}}",
			"at '/vendors/ascend/hostPaths/0/type'"},
		{"a webhook failure policy the API does not have", "webhook: {failurePolicy: Warn}",
			"at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		{"a webhook timeout the API does not allow", "webhook: {timeoutSeconds: 31}",
			"at '/webhook/timeoutSeconds': maximum: got 31, want 30"},
		{"a health interval that is no duration", "kubeletPlugin: {health: {interval: 10}}",
			"at '/kubeletPlugin/health/interval'"},
		{"a health interval without a unit", "kubeletPlugin: {health: {interval: \"10\"}}",
			"at '/kubeletPlugin/health/interval'"},
		{"a taint effect the API does not have", "kubeletPlugin: {health: {unhealthyTaintEffect: PreferNoSchedule}}",
			"at '/kubeletPlugin/health/unhealthyTaintEffect': value must be one of 'NoSchedule', 'NoExecute'"},
		{"a visible-devices mode the agent does not have", "kubeletPlugin: {visibleDevicesEnv: never}",
			"at '/kubeletPlugin/visibleDevicesEnv': value must be one of 'auto', 'set', 'omit'"},
		{"a log format the agent does not have", "logging: {format: logfmt}",
			"at '/logging/format': value must be one of 'text', 'json'"},
		{"no webhook replica", "webhook: {replicas: 0}",
			"at '/webhook/replicas': minimum: got 0, want 1"},
		{"a misspelt webhook key", "webhook: {certmanager: {enabled: true}}",
			"at '/webhook': additional properties 'certmanager' not allowed"},
		{"an issuer without cert-manager", "webhook: {certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}}",
			"webhook.certManager.issuerRef needs webhook.certManager.enabled"},
		{"an issuer without a name", "webhook: {certManager: {enabled: true, issuerRef: {kind: ClusterIssuer}}}",
			"webhook.certManager.issuerRef.name must name the cert-manager Issuer or ClusterIssuer"},
		{"fabric labels without the policy that keeps the agent to its own Node", "validatingAdmissionPolicy: {enabled: false}",
			"kubeletPlugin.fabric.nodeLabels needs validatingAdmissionPolicy.enabled"},
		{"a fabric source without the fabric labels", "kubeletPlugin: {fabric: {nodeLabels: false, leafLabel: volcano.sh/tor}}",
			"kubeletPlugin.fabric: leafLabel, spineLabel, levelConfigMap, superPodScope and mirrorTopotreeSuperPodID need nodeLabels: true"},
		{"a leaf label that is no label key", "kubeletPlugin: {fabric: {leafLabel: 'volcano.sh/tor rack'}}",
			"at '/kubeletPlugin/fabric/leafLabel'"},
		{"a super pod scope that is no label value", "kubeletPlugin: {fabric: {superPodScope: 'hall 2'}}",
			"at '/kubeletPlugin/fabric/superPodScope'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmTemplate(t, tc.values)
			require.ErrorContains(t, err, tc.reason)
		})
	}
}

func TestTheChartPassesHelmLintStrict(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir(t))
	require.NoError(t, err, out)
	require.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
}

// admissionPolicyFor returns the rendered policy and binding, which
// policy_test.go evaluates.
func admissionPolicyFor(t *testing.T, c valuesCase) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	r := render(t, c)
	return r.policy(t), r.policyBinding(t)
}

// The agent's memory request is its measured RSS: at least the largest
// RSS docs/benchmarks.md reports for the node agent (its "Node agent RSS"
// rows, peaks included), and not more than a quarter above it, so the
// scheduler reserves what the agent uses and no more.
func TestTheAgentsMemoryRequestIsItsMeasuredRSS(t *testing.T) {
	doc, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	mib := regexp.MustCompile(`(\d+(?:\.\d+)?) MiB|peak (\d+(?:\.\d+)?)`)
	largest := 0.0
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| Node agent RSS") {
			continue
		}
		for _, m := range mib.FindAllStringSubmatch(line, -1) {
			v, err := strconv.ParseFloat(m[1]+m[2], 64)
			require.NoError(t, err)
			largest = max(largest, v)
		}
	}
	require.Greater(t, largest, 0.0, "docs/benchmarks.md reports the node agent's RSS")
	req := agentContainer(t, agents(t, cases[0])["ascend"]).Resources.Requests["memory"]
	got := float64(req.Value()) / (1 << 20)
	require.GreaterOrEqual(t, got, largest, "the memory request %s covers the measured RSS %.1f MiB", req.String(), largest)
	require.LessOrEqual(t, got, largest*1.25, "the memory request %s is near the measured RSS %.1f MiB", req.String(), largest)
}

// Before Kubernetes 1.36 the API server does not authorize each driver's
// entries of a claim's status, so the agent's resourceclaims/status patch
// would reach every claim of the cluster: the chart refuses to install
// there.
func TestTheChartNeedsKubernetes136ForGranularClaimStatusAuthorization(t *testing.T) {
	_, err := helmTemplate(t, "", "--kube-version", "1.35.4")
	require.ErrorContains(t, err, "kubeVersion")
	_, err = helmTemplate(t, "", "--kube-version", "1.36.0")
	require.NoError(t, err)
}

// TestAgentGoGC checks kubeletPlugin.goGC: the default sets the agent's
// GOGC to the measured 50, another value replaces it, "" leaves Go's
// default (no variable), and a value Go would not parse fails the schema.
func TestAgentGoGC(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		want         string // "" for no GOGC variable
	}{
		{"default", "", "50"},
		{"off", "kubeletPlugin:\n  goGC: \"off\"\n", "off"},
		{"go's default", "kubeletPlugin:\n  goGC: \"\"\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderValues(t, "goGC: "+tc.name, tc.values)
			var got []string
			for _, e := range agentContainer(t, r.daemonSet(t)).Env {
				if e.Name == "GOGC" {
					got = append(got, e.Value)
				}
			}
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Equal(t, []string{tc.want}, got)
		})
	}
	_, err := helmTemplate(t, "kubeletPlugin:\n  goGC: \"50%\"\n")
	require.ErrorContains(t, err, "goGC")
}

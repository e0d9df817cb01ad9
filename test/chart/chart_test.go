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
	"os"
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

// valuesCase is one values file and what the chart must render for it.
type valuesCase struct {
	name   string
	values string
	// deviceClasses are the names of the DeviceClasses installed.
	deviceClasses []string
	// hostMounts by container path: exactly these host paths, no others.
	hostMounts map[string]hostMount
	// affinity: the node labels of each nodeSelectorTerm; nil for none.
	affinity []map[string]string
	// args of the agent, in order.
	args []string
	// libraryPath is LD_LIBRARY_PATH of the agent; "" for none.
	libraryPath string
	// securityContext of the agent's container.
	securityContext *corev1.SecurityContext
	// probes: the health server and its probes are on.
	probes bool
	// policy: the ValidatingAdmissionPolicy and its binding are installed.
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
	allClasses = withModels(topClasses, "ascend", "cambricon")

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
	// ascendMounts: no file of the host's /etc (no FileOrCreate of
	// /etc/ascend_install.info on Cambricon-only nodes).
	ascendMounts = mounts(ascendPlugin, map[string]hostMount{
		"/host/usr/local": {"/usr/local", corev1.HostPathDirectory, true},
	})
	cambriconMounts = mounts(cambriconPlugin, map[string]hostMount{
		"/host/usr/bin": {"/usr/bin", corev1.HostPathDirectory, true},
	})
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

var cases = []valuesCase{
	{
		name:            "the default values",
		values:          "",
		deviceClasses:   allClasses,
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
		affinity:        []map[string]string{ascendTerm, cambriconTerm},
		args:            args(commonArgs, []string{"--vendors=ascend,cambricon", "--chip-modes=Whole", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/sbin/npu-smi", "--cnmon=/host/usr/bin/cnmon"}),
		libraryPath:     ascendLibraryPath,
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
		deviceClasses:   withModels([]string{"accelerator.accel-dra.dev", "ascend-vnpu.accel-dra.dev", "ascend.accel-dra.dev", "ascend310p.accel-dra.dev", "ascend910.accel-dra.dev"}, "ascend"),
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts),
		affinity:        []map[string]string{ascendTerm},
		args:            args(commonArgs, []string{"--vendors=ascend", "--chip-modes=Whole", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/bin/npu-smi"}),
		libraryPath:     ascendLibraryPath,
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "Cambricon only, on nodes with labels of their own",
		values: `
vendors:
  ascend: {enabled: false}
  cambricon:
    cndevLibrary: /host/opt/neuware/lib64/libcndev.so
    nodeSelector:
      accelerator: null
      example.com/mlu: "true"
      example.com/pool: inference
`,
		deviceClasses: withModels([]string{"accelerator.accel-dra.dev", "cambricon-mlu.accel-dra.dev", "cambricon-partition.accel-dra.dev", "cambricon.accel-dra.dev"}, "cambricon"),
		// /usr/local for Neuware's libcndev.so, which Ascend nodes mount anyway.
		hostMounts: mounts(kubeletMounts, discoveryMounts, cambriconMounts,
			map[string]hostMount{"/host/usr/local": {"/usr/local", corev1.HostPathDirectory, true}}),
		affinity: []map[string]string{{"example.com/mlu": "true", "example.com/pool": "inference"}},
		args: args(commonArgs, []string{"--vendors=cambricon", "--chip-modes=Whole", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--cnmon=/host/usr/bin/cnmon",
			"--cndev-library=/host/opt/neuware/lib64/libcndev.so"}),
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
		hostMounts: mounts(kubeletMounts, ascendPlugin, cambriconPlugin, map[string]hostMount{
			"/var/lib/accel-dra/fake-root": {"/var/lib/accel-dra/fake-root", corev1.HostPathDirectoryOrCreate, false},
		}),
		affinity:        []map[string]string{ascendTerm, cambriconTerm},
		args:            args(commonArgs, []string{"--vendors=ascend,cambricon", "--chip-modes=Whole", "--healthz-addr=:51515", "--profile=mixed-910b-mlu370", "--fake-devices=true", "--root=/var/lib/accel-dra/fake-root", "--cdi-host-root=/var/lib/accel-dra/fake-root"}),
		securityContext: mknodOnly,
		probes:          true,
		policy:          true,
	},
	{
		name: "simulation of slices only, in another fake root",
		values: `
simulation: {profile: atlas-800t-a2, root: /srv/accel-dra-sim}
vendors:
  cambricon: {enabled: false}
`,
		deviceClasses: withModels([]string{"accelerator.accel-dra.dev", "ascend-vnpu.accel-dra.dev", "ascend.accel-dra.dev", "ascend310p.accel-dra.dev", "ascend910.accel-dra.dev"}, "ascend"),
		hostMounts: mounts(kubeletMounts, ascendPlugin, map[string]hostMount{
			"/srv/accel-dra-sim": {"/srv/accel-dra-sim", corev1.HostPathDirectoryOrCreate, true},
		}),
		affinity:        []map[string]string{ascendTerm},
		args:            args(commonArgs, []string{"--vendors=ascend", "--chip-modes=Whole", "--healthz-addr=:51515", "--profile=atlas-800t-a2", "--fake-devices=false", "--root=/srv/accel-dra-sim", "--cdi-host-root=/srv/accel-dra-sim"}),
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
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
		affinity:        []map[string]string{ascendTerm, cambriconTerm},
		args:            args(commonArgs, []string{"--vendors=ascend,cambricon", "--chip-modes=Whole", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/sbin/npu-smi", "--cnmon=/host/usr/bin/cnmon"}),
		libraryPath:     ascendLibraryPath,
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "partitions only where the admin asks: Ascend chips Partitioned",
		values: `
kubeletPlugin: {chipModes: "npu-*=Partitioned"}
`,
		deviceClasses:   allClasses,
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
		affinity:        []map[string]string{ascendTerm, cambriconTerm},
		args:            args(commonArgs, []string{"--vendors=ascend,cambricon", "--chip-modes=npu-*=Partitioned", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/sbin/npu-smi", "--cnmon=/host/usr/bin/cnmon"}),
		libraryPath:     ascendLibraryPath,
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
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
		affinity:        []map[string]string{ascendTerm, cambriconTerm},
		args:            args(commonArgs, []string{"--vendors=ascend,cambricon", "--chip-modes=Whole", "--healthz-addr=:51515", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/sbin/npu-smi", "--cnmon=/host/usr/bin/cnmon"}),
		libraryPath:     ascendLibraryPath,
		securityContext: privileged,
		probes:          true,
		policy:          true,
	},
	{
		name: "every node, shared chips, no probes and no admission policy",
		values: `
vendors:
  ascend: {nodeSelector: null}
kubeletPlugin: {healthzPort: 0, chipModes: "Shared", visibleDevicesEnv: omit, health: {interval: "0", unhealthyTaintEffect: NoExecute}}
validatingAdmissionPolicy: {enabled: false}
logVerbosity: 5
logging: {format: json}
`,
		deviceClasses:   allClasses,
		hostMounts:      mounts(kubeletMounts, discoveryMounts, ascendMounts, cambriconMounts),
		affinity:        nil,
		args:            args(slices.Replace(slices.Replace(slices.Clone(commonArgs), 8, 13, "--health-interval=0", "--unhealthy-taint-effect=NoExecute", "--library-hang-limit=1m", "--device-metadata=true", "--visible-devices-env=omit"), 2, 4, "-v=5", "--logging-format=json"), []string{"--vendors=ascend,cambricon", "--chip-modes=Shared", "--root=/host", "--cdi-host-root=/", "--npu-smi=/host/usr/local/sbin/npu-smi", "--cnmon=/host/usr/bin/cnmon"}),
		libraryPath:     ascendLibraryPath,
		securityContext: privileged,
		probes:          false,
		policy:          false,
	},
}

// agentKinds are the kinds rendered for the node agent with the defaults.
var agentKinds = []string{"*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.DaemonSet", "*v1.ClusterRole",
	"*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding"}

func TestEveryRenderedDocumentDecodesStrictlyIntoItsKubernetesType(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c)
			// The agent's objects and the CLI views' ClusterRole.
			want := []string{"*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.DaemonSet", "*v1.ClusterRole"}
			for range c.deviceClasses {
				want = append(want, "*v1.DeviceClass")
			}
			if c.policy {
				want = append(want, "*v1.ValidatingAdmissionPolicy", "*v1.ValidatingAdmissionPolicyBinding")
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

// servedDrivers are the DRA drivers of the vendors the agent serves
// (its --vendors argument).
func servedDrivers(t *testing.T, c valuesCase) []string {
	t.Helper()
	for _, a := range c.args {
		if vendors, ok := strings.CutPrefix(a, "--vendors="); ok {
			var drivers []string
			for _, v := range strings.Split(vendors, ",") {
				drivers = append(drivers, v+".accel-dra.dev")
			}
			return drivers
		}
	}
	require.FailNow(t, "the case has no --vendors argument")
	return nil
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
			r := render(t, c)
			role := r.clusterRole(t)
			require.Equal(t, want, role.Rules)

			sa := r.serviceAccount(t)
			require.Equal(t, namespace, sa.Namespace)
			binding := r.clusterRoleBinding(t)
			require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
			require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)
			require.Equal(t, sa.Name, r.daemonSet(t).Spec.Template.Spec.ServiceAccountName, "the agent runs as the bound ServiceAccount")
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

func TestTheDaemonSetMountsExactlyTheExpectedHostPaths(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := render(t, c).daemonSet(t)
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
			require.Equal(t, c.hostMounts, got)
		})
	}
}

func TestTheNodeAffinityHasOneTermPerEnabledVendor(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := render(t, c).daemonSet(t).Spec.Template.Spec
			require.Empty(t, spec.NodeSelector)
			if c.affinity == nil {
				require.Nil(t, spec.Affinity, "runs on every node")
				return
			}
			require.NotNil(t, spec.Affinity)
			require.NotNil(t, spec.Affinity.NodeAffinity)
			require.Nil(t, spec.Affinity.PodAffinity)
			require.Nil(t, spec.Affinity.PodAntiAffinity)
			required := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			require.NotNil(t, required)
			var got []map[string]string
			for _, term := range required.NodeSelectorTerms {
				require.Empty(t, term.MatchFields)
				labels := map[string]string{}
				for _, e := range term.MatchExpressions {
					require.Equal(t, corev1.NodeSelectorOpIn, e.Operator)
					require.Len(t, e.Values, 1)
					labels[e.Key] = e.Values[0]
				}
				got = append(got, labels)
			}
			require.Equal(t, c.affinity, got)
		})
	}
}

func TestTheAgentRunsWithTheArgumentsAndPrivilegesOfItsMode(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctr := agentContainer(t, render(t, c).daemonSet(t))
			require.Equal(t, []string{"/usr/bin/accel-dra-kubeletplugin"}, ctr.Command)
			require.Equal(t, c.args, ctr.Args)
			require.Equal(t, "ghcr.io/accel-dra/accel-dra:0.1.0", ctr.Image)

			env := map[string]corev1.EnvVar{}
			for _, e := range ctr.Env {
				env[e.Name] = e
			}
			require.Equal(t, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, env["NODE_NAME"].ValueFrom)
			require.Equal(t, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}, env["POD_UID"].ValueFrom)
			wantEnv := 2
			if c.libraryPath != "" {
				require.Equal(t, c.libraryPath, env["LD_LIBRARY_PATH"].Value)
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
		})
	}
}

func TestTheDaemonSetRollsOutANewPodBesideTheOldOneAndStaysOnItsNodes(t *testing.T) {
	ds := render(t, cases[0]).daemonSet(t)
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
}

func TestEveryFlagTheDaemonSetPassesIsAFlagOfTheAgent(t *testing.T) {
	flags := commandFlags(t, "accel-dra-kubeletplugin")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, arg := range agentContainer(t, render(t, c).daemonSet(t)).Args {
				name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
				require.True(t, flags[name], "accel-dra-kubeletplugin --help lists no flag %q (from %s)", name, arg)
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
			"at '/modelDeviceClasses/extra/0/vendor': value must be one of 'ascend', 'cambricon'"},
		{"an extra class without a model", "modelDeviceClasses: {extra: [{vendor: ascend, template: vir04}]}",
			"at '/modelDeviceClasses/extra/0': missing property 'model'"},
		{"an existing ServiceAccount without a name", "serviceAccount: {create: false}",
			"serviceAccount.name must name an existing ServiceAccount"},
		{"a misspelt key (values.schema.json)", "vendors: {acsend: {enabled: false}}",
			"at '/vendors': additional properties 'acsend' not allowed"},
		{"a failure policy the API does not have", "validatingAdmissionPolicy: {failurePolicy: Warn}",
			"at '/validatingAdmissionPolicy/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		{"a relative tool path", "vendors: {cambricon: {cnmon: usr/bin/cnmon}}",
			"at '/vendors/cambricon/cnmon'"},
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
	req := agentContainer(t, render(t, cases[0]).daemonSet(t)).Resources.Requests["memory"]
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

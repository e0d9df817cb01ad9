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

// Command accel-dra-kubeletplugin is the accel-dra node agent: it discovers
// the node's Ascend and Cambricon chips, publishes them as ResourceSlices
// and prepares allocated chips for containers through CDI, as the kubelet
// DRA plugin of ascend.accel-dra.dev and cambricon.accel-dra.dev.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/chipmetrics"
	"github.com/accel-dra/accel-dra/pkg/devicemonitor"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/logflags"
	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "accel-dra-kubeletplugin:", err)
		os.Exit(1)
	}
}

// agentFlags are the binary's flags: the node agent's options, grouped
// as nodeagent.Options are, and the few values main turns into them.
type agentFlags struct {
	o                  nodeagent.Options
	kubeconfig, podUID string
	logging            *logflags.Config
}

func newCommand() *cobra.Command {
	// The vendors the agent serves: every one accel-dra supports.
	reg := all.Registry()
	// Each vendor's management library, opened once, here, and handed to
	// discovery, the partition tools, telemetry and the liveness probe.
	a := &agentFlags{o: nodeagent.Options{Discovery: source.Options{Registry: reg, Opened: reg.NewLibraries()}}}
	cmd := &cobra.Command{
		Use:   "accel-dra-kubeletplugin",
		Short: "accel-dra node agent: publish Ascend and Cambricon chips as DRA devices and prepare them through CDI",
		Long: `accel-dra-kubeletplugin runs on every accelerator node (as a DaemonSet).

It discovers the chips under --root (device files, sysfs, npu-smi and cnmon
output) or simulates a node with --profile, then serves each vendor found
as its own DRA driver (ascend.accel-dra.dev, cambricon.accel-dra.dev):
it registers with the kubelet, publishes the node's ResourceSlices, and on
NodePrepareResources writes one CDI spec per claim (device nodes, driver
mounts, visible-devices env) and records it in a checkpoint under
--state-dir, so a restart loses nothing. SIGTERM stops it cleanly.

Every flag can also be set by the environment variable in brackets.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return a.run(cmd) },
	}
	f := cmd.Flags()
	a.addDiscoveryFlags(f, reg)
	a.addPluginFlags(f)
	a.addCDIFlags(f, reg)
	a.addPublishFlags(f)
	a.addHealthFlags(f)
	a.addMetricsFlags(f)
	a.addFabricFlags(f)
	// Kubernetes' logging flags (--logging-format text or json, -v,
	// --vmodule, ...); logs go to stderr.
	a.logging = logflags.Add(f, "ACCEL_DRA_LOGGING_FORMAT")
	cmd.MarkFlagsMutuallyExclusive("profile", "tool-output")
	return cmd
}

// run checks what the flags cannot check alone, makes the API client and
// runs the agent.
func (a *agentFlags) run(cmd *cobra.Command) error {
	o := &a.o
	if err := flagenv.Apply(cmd.Flags()); err != nil {
		return err
	}
	if err := a.logging.Apply(cmd.ErrOrStderr()); err != nil {
		return err
	}
	if o.Discovery.ToolTimeout <= 0 {
		return fmt.Errorf("--tool-timeout %s: want a positive duration such as 30s", o.Discovery.ToolTimeout)
	}
	if o.Discovery.LibraryCallTimeout <= 0 {
		return fmt.Errorf("--library-call-timeout %s: want a positive duration such as 10s", o.Discovery.LibraryCallTimeout)
	}
	if err := vendors.CheckPartitionMode(o.Discovery.PartitionMode); err != nil {
		return fmt.Errorf("--partition-mode: %w", err)
	}
	if o.Health.LibraryHangLimit < o.Discovery.LibraryCallTimeout {
		return fmt.Errorf("--library-hang-limit %s: want at least --library-call-timeout (%s): a call is hung only after its deadline", o.Health.LibraryHangLimit, o.Discovery.LibraryCallTimeout)
	}
	cfg, err := clientConfig(a.kubeconfig)
	if err != nil {
		return err
	}
	o.KubeClient, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	o.Plugin.PodUID = types.UID(a.podUID)
	if o.CDI.Hook, err = hookBinary(cmd.Flags().Changed("cdi-hook"), o.CDI.Hook); err != nil {
		return err
	}
	return nodeagent.Run(cmd.Context(), *o)
}

func (a *agentFlags) addDiscoveryFlags(f *pflag.FlagSet, reg vendors.Registry) {
	o := &a.o
	host, _ := os.Hostname()
	f.StringVar(&o.Discovery.NodeName, "node-name", host, "name of this node: pool and slice owner [NODE_NAME]")
	f.StringVar(&a.kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses the in-cluster service account [KUBECONFIG]")
	f.StringVar(&o.Discovery.Root, "root", "/", "host root to discover chips under (/dev, /sys, driver files) [ACCEL_DRA_ROOT]")
	f.StringVar(&o.Discovery.Profile, "profile", "", "simulate a node with this hardware profile (bundled name or file) instead of discovering real chips [ACCEL_DRA_PROFILE]")
	f.StringVar(&o.Discovery.ToolOutput, "tool-output", "", "read recorded npu-smi/cnmon output from this directory instead of running the tools [ACCEL_DRA_TOOL_OUTPUT]")
	f.BoolVar(&o.FakeDevices, "fake-devices", false, "with --profile: create the simulated chips' device nodes (as /dev/null clones) and driver files under --root, so pods can run without hardware [ACCEL_DRA_FAKE_DEVICES=true]")
	f.StringSliceVar(&o.Discovery.Vendors, "vendors", nil, source.VendorsHelp(reg)+" [ACCEL_DRA_VENDORS]")
	f.StringVar(&o.Discovery.PartitionMode, "partition-mode", vendors.PartitionModeAuto, source.PartitionModeHelp+" [ACCEL_DRA_PARTITION_MODE]")
	o.Discovery.Tools = map[string]string{}
	source.AddToolFlags(f, reg, o.Discovery.Tools, true)
	o.Discovery.Libraries = map[string]string{}
	source.AddLibraryFlags(f, reg, o.Discovery.Libraries, true, "")
	f.DurationVar(&o.Discovery.ToolTimeout, "tool-timeout", discovery.DefaultToolTimeout, "longest one run of npu-smi or cnmon may take before it is killed and its query fails (a tool hung in the driver must not hang the agent) [ACCEL_DRA_TOOL_TIMEOUT]")
	f.DurationVar(&o.Discovery.LibraryCallTimeout, "library-call-timeout", vendors.DefaultLibraryCallTimeout, "longest one call into libdcmi.so or libcndev may take; a call without an answer by then fails, and the library's later calls fail at once until it returns [ACCEL_DRA_LIBRARY_CALL_TIMEOUT]")
}

func (a *agentFlags) addPluginFlags(f *pflag.FlagSet) {
	o := &a.o
	f.StringVar(&a.podUID, "pod-uid", "", "UID of this pod (downward API metadata.uid); enables rolling updates, where a new pod serves beside the old one; needs kubelet 1.33+ [POD_UID]")
	f.StringVar(&o.Plugin.RegistrarDir, "registrar-dir", kubeletplugin.KubeletRegistryDir, "kubelet plugin registration directory [ACCEL_DRA_REGISTRAR_DIR]")
	f.StringVar(&o.Plugin.PluginDir, "plugin-dir", kubeletplugin.KubeletPluginsDir, "kubelet plugins directory; each driver gets <dir>/<driver name>/dra.sock [ACCEL_DRA_PLUGIN_DIR]")
	f.StringVar(&o.Plugin.StateDir, "state-dir", "/var/lib/accel-dra", "directory for the checkpoint of prepared claims, one subdirectory per driver [ACCEL_DRA_STATE_DIR]")
}

func (a *agentFlags) addCDIFlags(f *pflag.FlagSet, reg vendors.Registry) {
	o := &a.o
	f.StringVar(&o.CDI.Dir, "cdi-dir", "/var/run/cdi", "directory the container runtime reads CDI specs from [ACCEL_DRA_CDI_DIR]")
	f.StringVar(&o.CDI.HostRoot, "cdi-host-root", "", "the node's root as the container runtime sees it, prefix of host paths in CDI specs; set / when --root is the node's / mounted into the plugin's container; default: --root [ACCEL_DRA_CDI_HOST_ROOT]")
	f.StringVar(&o.CDI.VisibleDevicesEnv, "visible-devices-env", cdi.VisibleDevicesAuto, cdi.VisibleDevicesEnvHelp(reg)+" [ACCEL_DRA_VISIBLE_DEVICES_ENV]")
	f.StringVar(&o.CDI.Hook, "cdi-hook", "", "the static "+cdihook.File+" binary, installed in --state-dir as the createContainer hook of Ascend CDI specs; default: "+cdihook.File+" next to this binary; empty when set: no hook (the driver libraries are found only where the image looks) [ACCEL_DRA_CDI_HOOK]")
	f.BoolVar(&o.CDI.DeviceMetadata, "device-metadata", true, "give each container a read-only file per request and driver with the facts of its devices (uuid, model, index, pciBusID, driverVersion, partition template and id, RoCE address) under /var/run/kubernetes.io/dra-device-attributes/ (KEP-5304 device metadata, written through a CDI spec of its own in --cdi-dir) [ACCEL_DRA_DEVICE_METADATA=false]")
}

func (a *agentFlags) addPublishFlags(f *pflag.FlagSet) {
	o := &a.o
	f.StringVar(&o.Publish.ChipModes, "chip-modes", "", partitions.PolicyHelp+" [ACCEL_DRA_CHIP_MODES]")
	f.StringSliceVar(&o.Publish.PartitionTemplates, "partition-templates", nil, "with Partitioned chips: offer only these partition templates, by the slug of their DeviceClass and device names (vir10-3c-32g, smlu-50p); fewer devices cost the scheduler less per claim; empty offers every template of the model [ACCEL_DRA_PARTITION_TEMPLATES]")
	f.StringVar(&o.Publish.UnhealthyTaintEffect, "unhealthy-taint-effect", "NoSchedule", "effect of the device taints of unhealthy chips (a key per cause under accel-dra.dev/; a warning level keeps effect None): NoSchedule (no new claims get them) or NoExecute (also evict the pods using them unless they tolerate the taint) [ACCEL_DRA_UNHEALTHY_TAINT_EFFECT]")
}

func (a *agentFlags) addHealthFlags(f *pflag.FlagSet) {
	o := &a.o
	f.DurationVar(&o.Health.Interval, "health-interval", devicemonitor.DefaultInterval, "how often to re-read the chips (npu-smi/cnmon health, device files, PCI functions) to taint unhealthy chips, untaint recovered ones and publish chips added or removed; 0 reads them only at start [ACCEL_DRA_HEALTH_INTERVAL]")
	f.StringVar(&o.Health.Addr, "healthz-addr", "", "address for HTTP /livez, /readyz (ready once every driver is registered with the kubelet) and Prometheus /metrics, e.g. :51515; empty disables [ACCEL_DRA_HEALTHZ_ADDR]")
	f.DurationVar(&o.Health.LibraryHangLimit, "library-hang-limit", nodeagent.DefaultLibraryHangLimit, "how long a call into libdcmi.so or libcndev may stay without an answer before /livez fails, so the kubelet restarts the agent and the new process loads the library afresh (a native call cannot be interrupted) [ACCEL_DRA_LIBRARY_HANG_LIMIT]")
}

func (a *agentFlags) addMetricsFlags(f *pflag.FlagSet) {
	o := &a.o
	f.StringVar(&o.Metrics.Addr, "metrics-addr", "", "address for Prometheus /metrics alone, e.g. 127.0.0.1:51516 to keep the metrics on loopback; /metrics then leaves --healthz-addr; empty serves them on --healthz-addr [ACCEL_DRA_METRICS_ADDR]")
	f.BoolVar(&o.Metrics.Secure.Enabled, "metrics-secure", false, "serve --metrics-addr over HTTPS to callers with a bearer token the API server accepts (TokenReview) who may get the non-resource URL /metrics (SubjectAccessReview); needs --metrics-addr, since the kubelet's probes on --healthz-addr stay plain HTTP [ACCEL_DRA_METRICS_SECURE=true]")
	f.StringVar(&o.Metrics.Secure.CertFile, "metrics-tls-cert-file", "", "with --metrics-secure: PEM serving certificate of /metrics, reloaded when it changes; empty with --metrics-tls-key-file: a self-signed certificate made at start [ACCEL_DRA_METRICS_TLS_CERT_FILE]")
	f.StringVar(&o.Metrics.Secure.KeyFile, "metrics-tls-key-file", "", "with --metrics-secure: PEM private key of --metrics-tls-cert-file [ACCEL_DRA_METRICS_TLS_KEY_FILE]")
	f.BoolVar(&o.Metrics.Chips, "chip-metrics", true, "export every chip's utilization, memory, temperature, power and health, labelled with the claim, pod and container holding it (accel_dra_chip_*; docs/health-metrics.md) [ACCEL_DRA_CHIP_METRICS=false]")
	f.DurationVar(&o.Metrics.ChipInterval, "chip-metrics-interval", chipmetrics.DefaultInterval, "how often the chip metrics read the chips through the vendor libraries [ACCEL_DRA_CHIP_METRICS_INTERVAL]")
	f.StringVar(&o.Metrics.PodResourcesSocket, "pod-resources-socket", chipmetrics.DefaultPodResourcesSocket, "the kubelet's PodResources socket, where the chip metrics find the pods and containers of a claim; empty leaves those labels out [ACCEL_DRA_POD_RESOURCES_SOCKET]")
}

func (a *agentFlags) addFabricFlags(f *pflag.FlagSet) {
	o := &a.o.Fabric
	f.BoolVar(&o.Labels, "fabric-labels", false, "write the fabric labels accel-dra.dev/superpod (from the chips' super pod), fabric-leaf and fabric-spine (from --fabric-leaf-label, --fabric-spine-label, --fabric-level-configmap) on this node; needs patch on nodes [ACCEL_DRA_FABRIC_LABELS=true]")
	f.StringVar(&o.SuperPodScope, "superpod-scope", "", "prefix of the super pod label value (<scope>.sp-<id>), one per super-pod cluster: a super pod id is unique only within its super-pod cluster [ACCEL_DRA_SUPERPOD_SCOPE]")
	f.StringVar(&o.LeafLabel, "fabric-leaf-label", "", "existing node label whose value names the node's leaf switch, e.g. volcano.sh/tor [ACCEL_DRA_FABRIC_LEAF_LABEL]")
	f.StringVar(&o.SpineLabel, "fabric-spine-label", "", "existing node label whose value names the node's spine [ACCEL_DRA_FABRIC_SPINE_LABEL]")
	f.StringVar(&o.LevelConfigMap, "fabric-level-configmap", "", "namespace/name of the admin's ConfigMap mapping node names to leaf and spine (key "+fabric.LevelMapKey+"); needs get on it [ACCEL_DRA_FABRIC_LEVEL_CONFIGMAP]")
	f.BoolVar(&o.Mirror, "mirror-topotree-superpodid", false, "also write mind-cluster's "+fabric.MirrorSuperPod+" label with the chips' super pod id, only where the node has none or the same [ACCEL_DRA_MIRROR_TOPOTREE_SUPERPODID=true]")
	f.DurationVar(&o.Interval, "fabric-label-interval", nodeagent.DefaultFabricInterval, "how often the fabric labels are checked against their sources [ACCEL_DRA_FABRIC_LABEL_INTERVAL]")
}

// The agent's API request rate: the kubelet's own defaults
// (--kube-api-qps, --kube-api-burst) instead of client-go's 5 and 10.
// Each prepare takes a Get of the claim (the helper) and a Get and an
// apply of its status (pkg/claimstatus), so at client-go's defaults a
// burst of a few pods on a node waited hundreds of milliseconds per
// prepare in client-side throttling (docs/benchmarks.md, "The prepare
// tail (measurement)").
const (
	apiQPS   = 50
	apiBurst = 100
)

func clientConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = apiQPS, apiBurst
	return cfg, nil
}

// hookBinary is the CDI hook binary to install: path when --cdi-hook was
// set (empty: none), else accel-dra-cdi-hook next to the agent's binary,
// as the image ships it.
func hookBinary(set bool, path string) (string, error) {
	if set {
		return path, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the CDI hook next to the agent's binary: %w; set --cdi-hook", err)
	}
	return filepath.Join(filepath.Dir(self), cdihook.File), nil
}

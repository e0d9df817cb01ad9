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

// Package framework runs the tier-4 cluster of docs/architecture.md on this machine:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
// 127.0.0.1; one real node (containerd + runc + kubelet, a CNI bridge,
// images imported locally) whose accel-dra-kubeletplugin simulates the
// mixed-910b-mlu370 profile with real (null-clone) device nodes; and kwok
// nodes for the rest of demo/cluster.yaml, each with its own node agent
// publishing the profile's ResourceSlices. Every node agent is the real
// binary, run as a host process with a ServiceAccount token bound to a
// stand-in pod on its node, so the Helm chart's RBAC and
// ValidatingAdmissionPolicy apply to it as they would to the DaemonSet.
//
// The binaries come from hack/e2e/build.sh. Component logs are kept under
// the artifacts directory; the cluster's processes, mounts and network
// leftovers are recorded in a state file so Teardown can remove them even
// from another process (hack/e2e/demo-cluster.sh down) or after a crash.
package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// hostPaths are created by containerd and the kubelet whatever their
// configuration says.
var hostPaths = []string{"/run/containerd", "/var/lib/kubelet", "/var/lib/cni", "/usr/libexec/kubernetes"}

// Names of things in the cluster.
const (
	// AgentNamespace is the chart's release namespace.
	AgentNamespace = "accel-dra"
	// ReleaseName is the chart's release name.
	ReleaseName = "accel-dra"
	// RealNodeProfile is the profile of the node that runs a real kubelet.
	RealNodeProfile = "mixed-910b-mlu370"
	// NodeTypeLabel tells the real node ("real") from kwok's ("kwok").
	NodeTypeLabel = "accel-dra.dev/e2e-node"
	// StandInLabel marks the pods that stand in for the DaemonSet's pods:
	// the node agents' tokens are bound to them.
	StandInLabel = "accel-dra.dev/e2e-agent-stand-in"
	// FieldManager is the server-side apply manager of the harness.
	FieldManager = "accel-dra-e2e"
	// ChartFieldManager owns the chart's objects: the harness installs
	// the chart as this manager and the chart test upgrades it as the
	// same one, as repeated server-side `helm upgrade`s would.
	ChartFieldManager = "helm"
	bridgeName        = "adrae2e0"
	cniNetwork        = "accel-dra-e2e"
	podSubnet         = "10.244.250.0/24"
)

// Options say where things are.
type Options struct {
	// RepoRoot is the accel-dra checkout (demo/, deployments/).
	RepoRoot string
	// BinDir holds the binaries of hack/e2e/build.sh.
	BinDir string
	// ArtifactsDir receives component logs and the state file's copy.
	ArtifactsDir string
	// StateFile records the running cluster for Teardown.
	StateFile string
	// Detached clusters outlive the process that started them.
	Detached bool
	// Logf reports progress.
	Logf func(format string, args ...any)
	// ClientQPS, when set, is the API client QPS and burst of
	// kube-scheduler and kube-controller-manager (default 50 and 20):
	// what scheduler_perf gives its scheduler, so that a throughput
	// benchmark measures scheduling, not client-side rate limits.
	ClientQPS int
	// ControllerManagerArgs are more kube-controller-manager arguments,
	// e.g. a longer --node-monitor-grace-period where kwok's heartbeats
	// of many nodes lag on a loaded machine.
	ControllerManagerArgs []string
}

// OptionsFromEnv derives the options from the environment:
// ACCEL_DRA_E2E_CACHE (default <repo>/_output/e2e-cache, bin/ inside),
// ACCEL_DRA_E2E_BIN (overrides the bin dir) and ACCEL_DRA_E2E_ARTIFACTS
// (default <repo>/_output/e2e-artifacts/<time>).
func OptionsFromEnv(stateName string) (Options, error) {
	repo, err := findRepoRoot()
	if err != nil {
		return Options{}, err
	}
	cache := os.Getenv("ACCEL_DRA_E2E_CACHE")
	if cache == "" {
		cache = filepath.Join(repo, "_output", "e2e-cache")
	}
	bin := os.Getenv("ACCEL_DRA_E2E_BIN")
	if bin == "" {
		bin = filepath.Join(cache, "bin")
	}
	artifacts := os.Getenv("ACCEL_DRA_E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(repo, "_output", "e2e-artifacts", stateName+"-"+time.Now().Format("20060102-150405"))
	}
	return Options{
		RepoRoot:     repo,
		BinDir:       bin,
		ArtifactsDir: artifacts,
		StateFile:    filepath.Join(cache, stateName+".state.json"),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		},
	}, nil
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/accel-dra/accel-dra\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository: no go.mod of github.com/accel-dra/accel-dra above the working directory")
		}
		dir = parent
	}
}

// State is what Teardown needs to remove a cluster; it is written to the
// state file as components start.
type State struct {
	RunDir           string `json:"runDir"`
	ArtifactsDir     string `json:"artifactsDir"`
	Kubeconfig       string `json:"kubeconfig"`
	ContainerdSocket string `json:"containerdSocket"`
	Ctr              string `json:"ctr"`
	Runc             string `json:"runc"`
	// RuncRoot is runc\'s state dir of the CRI namespace.
	RuncRoot    string `json:"runcRoot"`
	KubeletRoot string `json:"kubeletRoot"`
	RealNode    string `json:"realNode"`
	NodeIP      string `json:"nodeIP"`
	CDIDir      string `json:"cdiDir"`
	// HostPaths are directories outside the run dir that did not exist
	// before the cluster and that its components create anyway
	// (/run/containerd for shim sockets, /var/lib/kubelet/device-plugins,
	// the CNI result cache); Teardown removes them.
	HostPaths   []string `json:"hostPaths"`
	NetnsBefore []string `json:"netnsBefore"`
	// ServiceRule is the iptables rule that sends the pods' traffic for
	// the kubernetes Service to the API server, RouteLocalnetBefore the
	// sysctl it changed (servicenet.go).
	ServiceRule []string `json:"serviceRule,omitempty"`
	// Image is the accel-dra image archive imported into containerd.
	Image               string  `json:"image,omitempty"`
	RouteLocalnetBefore string  `json:"routeLocalnetBefore,omitempty"`
	Procs               []*proc `json:"procs"`
}

// Cluster is a running cluster.
type Cluster struct {
	opts  Options
	mu    sync.Mutex
	State State
	pki   *pki

	// Admin is a cluster-admin client (system:masters).
	AdminConfig *rest.Config
	Admin       kubernetes.Interface
	Dynamic     dynamic.Interface
	Mapper      meta.ResettableRESTMapper

	// Nodes of demo/cluster.yaml in order, with their profiles.
	Nodes []NodeInfo
	// Agents by node name.
	Agents map[string]*Agent
	// Chart is the rendered Helm chart (or the fallback objects).
	Chart ChartObjects

	apiserverURL string
	// schedulerURL is kube-scheduler's secure endpoint (/metrics).
	schedulerURL string
	stopped      bool
}

// NodeInfo is one node of demo/cluster.yaml.
type NodeInfo struct {
	Name, Profile string
	// ChipModes is the agent's --chip-modes (the node's chipModes in the
	// cluster file); empty: the agent's default, every chip Whole.
	ChipModes string
	Real      bool
	Labels    map[string]string
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

// Start brings the whole cluster up. On error the part that started is
// torn down again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the e2e cluster runs containerd and a kubelet and needs root")
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	for _, p := range hostPaths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			c.State.HostPaths = append(c.State.HostPaths, p)
		}
	}
	c.State.NetnsBefore = listNetns()
	defer func() {
		if err != nil {
			c.logf("Start failed, tearing down: %v (logs in %s)", err, opts.ArtifactsDir)
			c.Stop(context.Background())
		}
	}()
	if err := c.saveState(); err != nil {
		return nil, err
	}
	if err := c.readClusterFile(); err != nil {
		return nil, err
	}
	steps := []step{
		{"control plane", c.startControlPlane},
		{"kubernetes Service route", c.routeServiceToAPIServer},
		{"containerd", c.startContainerd},
		{"kubelet", c.startKubelet},
		{"kwok", c.startKwok},
		{"chart", c.installChart},
		{"node agents", c.startAgents},
	}
	if err := c.run(ctx, steps); err != nil {
		return nil, err
	}
	return c, nil
}

type step struct {
	name string
	fn   func(context.Context) error
}

// run runs the start steps in order, logging how long each took.
func (c *Cluster) run(ctx context.Context, steps []step) error {
	for _, s := range steps {
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("starting %s: %w", s.name, err)
		}
		c.logf("Started %s in %s", s.name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// newCluster removes what a previous run with the same state file left
// and makes the directories of a new cluster.
func newCluster(opts Options) (*Cluster, error) {
	if err := CleanupLeftovers(opts.StateFile, opts.Logf); err != nil {
		return nil, err
	}
	for _, dir := range []string{opts.ArtifactsDir, filepath.Dir(opts.StateFile)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	// Unix socket paths are limited to 108 bytes: keep the run dir short.
	// os.MkdirTemp's suffix is 1 to 10 digits; a fixed 6 keeps the
	// longest socket (a DaemonSet agent's registration socket under k/)
	// at 104 bytes whatever the draw.
	runDir, err := shortTempDir("adra-e2e-")
	if err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	c := &Cluster{opts: opts, Agents: map[string]*Agent{}}
	c.State.RunDir, c.State.ArtifactsDir = runDir, opts.ArtifactsDir
	return c, nil
}

func (c *Cluster) readClusterFile() error {
	path := filepath.Join(c.opts.RepoRoot, "demo", "cluster.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the demo cluster: %w", err)
	}
	sc, err := v1alpha1.ParseSimulatedCluster(path, data)
	if err != nil {
		return err
	}
	for _, n := range sc.Nodes {
		for _, name := range n.NodeNames() {
			info := NodeInfo{Name: name, Profile: n.Profile, ChipModes: n.ChipModes, Labels: n.Labels}
			if n.Profile == RealNodeProfile && c.State.RealNode == "" {
				info.Real = true
				c.State.RealNode = name
			}
			c.Nodes = append(c.Nodes, info)
		}
	}
	if c.State.RealNode == "" {
		return fmt.Errorf("%s has no node of profile %s for the real kubelet", path, RealNodeProfile)
	}
	return nil
}

// RealNode is the name of the node with the real kubelet.
func (c *Cluster) RealNode() string { return c.State.RealNode }

// CDIDir is where the real node's agent writes CDI specs.
func (c *Cluster) CDIDir() string { return c.State.CDIDir }

// PodResourcesDir is the real node's kubelet PodResources directory (its
// kubelet.sock), under the relocated kubelet root.
func (c *Cluster) PodResourcesDir() string {
	return filepath.Join(c.State.KubeletRoot, "pod-resources")
}

// Kubeconfig is the admin kubeconfig file.
func (c *Cluster) Kubeconfig() string { return c.State.Kubeconfig }

// ArtifactsDir holds the component logs.
func (c *Cluster) ArtifactsDir() string { return c.State.ArtifactsDir }

// Options returns the options the cluster was started with.
func (c *Cluster) Options() Options { return c.opts }

func (c *Cluster) saveState() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, err := json.MarshalIndent(c.State, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding cluster state: %w", err)
	}
	for _, path := range []string{c.opts.StateFile, filepath.Join(c.State.ArtifactsDir, "cluster-state.json")} {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("writing cluster state: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("writing cluster state: %w", err)
		}
	}
	return nil
}

// start runs a component and records it in the state file.
func (c *Cluster) start(name string, env []string, bin string, args ...string) (*proc, error) {
	p, err := startProc(name, c.State.ArtifactsDir, c.opts.Detached, env, bin, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.State.Procs = append(c.State.Procs, p)
	c.mu.Unlock()
	return p, c.saveState()
}

func (c *Cluster) proc(name string) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.State.Procs) - 1; i >= 0; i-- {
		if c.State.Procs[i].Name == name {
			return c.State.Procs[i]
		}
	}
	return nil
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.opts.BinDir, name) }

// ensureBuilt runs hack/e2e/build.sh component when binary is not in the
// bin directory yet. hack/e2e/run.sh builds some components
// (ACCEL_DRA_E2E_LATER) while the tests that do not need them run, and
// runs the tests that do last; a test that needs one earlier waits here
// for that build (build.sh waits for a build already under way).
func (c *Cluster) ensureBuilt(ctx context.Context, component, binary string) error {
	if _, err := os.Stat(c.bin(binary)); err == nil {
		return nil
	}
	script := filepath.Join(c.opts.RepoRoot, "hack", "e2e", "build.sh")
	c.logf("%s is not built yet: running %s %s", binary, script, component)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", script, component)
	// build.sh's bin directory is <cache>/bin.
	cmd.Env = append(os.Environ(), "ACCEL_DRA_E2E_CACHE="+filepath.Dir(c.opts.BinDir))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s (%s %s): %w\n%s", component, script, component, err, out)
	}
	if _, err := os.Stat(c.bin(binary)); err != nil {
		return fmt.Errorf("%s %s built, but %s is not in the bin directory: %w", script, component, binary, err)
	}
	c.logf("%s built in %s", component, time.Since(start).Round(time.Second))
	return nil
}

func (c *Cluster) dir(parts ...string) (string, error) {
	d := filepath.Join(append([]string{c.State.RunDir}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", d, err)
	}
	return d, nil
}

// waitFor polls cond every interval until it is true, ctx ends or
// timeout passes; p, when set, must keep running meanwhile.
func waitFor(ctx context.Context, what string, timeout time.Duration, p *proc, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p != nil {
			if err := p.exitErr(); err != nil {
				return false, err
			}
		}
		ok, err := cond(ctx)
		if ctx.Err() == nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// nodeIP is the machine's first non-loopback IPv4 address: the kubelet
// cannot serve on loopback, and the API server reaches it there.
func nodeIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || iface.Name == bridgeName {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("no non-loopback IPv4 address for the node")
}

// kubeconfig writes a kubeconfig for a client certificate or a token.
func (c *Cluster) kubeconfig(name string, kp *keyPair, token string) (string, error) {
	cfg := clientcmdConfig(c.apiserverURL, c.pki.CAFile, name, kp, token)
	dir, err := c.dir("kubeconfigs")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", name, err)
	}
	return path, nil
}

// Stop tears the cluster down: pods on the real node are deleted first
// while the kubelet and the agent still run (so claims are unprepared),
// then every process in reverse start order, then mounts, network
// namespaces, the bridge and the run directory. Logs stay.
func (c *Cluster) Stop(ctx context.Context) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	if c.Admin != nil && c.State.RealNode != "" {
		drainNode(ctx, c.Admin, c.State.RealNode, c.logf)
	}
	Teardown(c.State, c.opts.Logf)
	_ = os.Remove(c.opts.StateFile)
}

// drainNode deletes the pods on a node and waits (bounded) for the
// kubelet to finish them, so their claims are unprepared: workloads
// first, the agents' stand-ins last.
func drainNode(ctx context.Context, cs kubernetes.Interface, node string, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for _, standIns := range []bool{false, true} {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			logf("Listing pods of %s for teardown: %v", node, err)
			return
		}
		var left []corev1.Pod
		for _, p := range pods.Items {
			if (p.Labels[StandInLabel] != "") == standIns {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			continue
		}
		grace := int64(1)
		for _, p := range left {
			_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
		err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for _, p := range left {
				if _, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			logf("Pods on %s did not finish before teardown: %v", node, err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func newAdminClients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, meta.ResettableRESTMapper, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating admin client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	return cs, dyn, mapper, nil
}

// shortTempDir creates a directory under the system temp dir named prefix
// and six hex digits.
func shortTempDir(prefix string) (string, error) {
	for range 100 {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%06x", prefix, rand.Uint32()&0xffffff))
		if err := os.Mkdir(dir, 0o700); err == nil || !errors.Is(err, os.ErrExist) {
			return dir, err
		}
	}
	return "", fmt.Errorf("no free name %s* in %s", prefix, os.TempDir())
}

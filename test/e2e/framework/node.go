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

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerdConfig relocates everything under the run dir and applies
// what this machine kind needs (notes/real-node.md): no CAP_SYS_RESOURCE
// (restrict_oom_score_adj), cgroupfs (SystemdCgroup = false), CDI specs
// from the node agent's directory, netns under the state dir, no NRI, and
// every registry pointed at a closed loopback port so that nothing is
// ever pulled from outside this machine.
const containerdConfig = `version = 4
root = '%[1]s/root'
state = '%[1]s/state'
imports = []
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.zfs', 'io.containerd.snapshotter.v1.erofs', 'io.containerd.snapshotter.v1.blockfile']

[plugins.'io.containerd.server.v1.grpc']
  address = '%[2]s'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '%[2]s.ttrpc'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '%[3]s'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '%[1]s/certs.d'

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_criu = false
  cdi_spec_dirs = ['%[4]s']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '%[5]s'
        Root = '%[1]s/runc'
        SystemdCgroup = false
    # A stand-in for ascend-docker-runtime (hack/e2e/ascend-runtime), as its
    # installer registers it, for pods of the RuntimeClass ascend.
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.ascend.options]
        BinaryName = '%[6]s'
        Root = '%[1]s/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '%[1]s/net.d'
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`

// registryHosts sends every registry to a closed port on loopback.
const registryHosts = `# accel-dra e2e: no registry is reachable or wanted; images are imported.
server = "http://127.0.0.1:1"
[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
`

// cniConfig is a bridge with the host as gateway but no masquerading:
// pods get an address on a private /24; the host reaches them (the
// kubelet's HTTP probes, the API server calling the chart's webhook) and
// they reach the host (the kubernetes Service, see servicenet.go), but
// nothing beyond it: their one route is the Service range, via the host;
// ip_forward stays as it is and no source is NATed.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "%s",
  "plugins": [{
    "type": "bridge",
    "bridge": "%s",
    "isGateway": true,
    "ipMasq": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "%s"}]], "routes": [{"dst": "` + serviceCIDR + `"}], "dataDir": "%s"}
  }]
}
`

func (c *Cluster) startContainerd(ctx context.Context) error {
	dir, err := c.dir("containerd")
	if err != nil {
		return err
	}
	cdiDir, err := c.dir("cdi")
	if err != nil {
		return err
	}
	c.State.CDIDir = cdiDir
	c.State.ContainerdSocket = filepath.Join(dir, "containerd.sock")
	c.State.Ctr = c.bin("ctr")
	for _, sub := range []string{"certs.d/_default", "net.d", "ipam"} {
		if _, err := c.dir("containerd", sub); err != nil {
			return err
		}
	}
	runc, err := filepath.EvalSymlinks(c.bin("runc"))
	if err != nil {
		return fmt.Errorf("finding runc: %w", err)
	}
	c.State.Runc, c.State.RuncRoot = runc, filepath.Join(dir, "runc", "k8s.io")
	files := map[string]string{
		"config.toml":                     fmt.Sprintf(containerdConfig, dir, c.State.ContainerdSocket, PauseImage, cdiDir, runc, c.bin("ascend-runtime")),
		"certs.d/_default/hosts.toml":     registryHosts,
		"net.d/10-accel-dra-e2e.conflist": fmt.Sprintf(cniConfig, cniNetwork, bridgeName, podSubnet, filepath.Join(dir, "ipam")),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing containerd %s: %w", name, err)
		}
	}
	if err := c.saveState(); err != nil {
		return err
	}
	// The shim is found on PATH.
	// The ascend-runtime stand-in finds runc and the real node agent's
	// fake device files through the shim, which passes this on.
	env := []string{"PATH=" + c.opts.BinDir + ":" + os.Getenv("PATH"),
		"ACCEL_DRA_E2E_RUNC=" + runc, "ACCEL_DRA_E2E_DEV_ROOT=" + c.agentRoot(c.State.RealNode)}
	p, err := c.start("containerd", env, c.bin("containerd"), "--config", filepath.Join(dir, "config.toml"), "--log-level", "info")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "containerd", time.Minute, p, func(context.Context) (bool, error) {
		_, err := c.ctr("version")
		return err == nil, err
	}); err != nil {
		return err
	}
	return c.importImages()
}

// ctr runs ctr against the node's containerd in the CRI namespace and
// returns its stdout.
func (c *Cluster) ctr(args ...string) (string, error) {
	out, err := runContext(context.Background(), time.Minute, c.State.Ctr, append([]string{"--address", c.State.ContainerdSocket, "--namespace", "k8s.io"}, args...)...)
	return out.stdout, err
}

func (c *Cluster) importImages() error {
	dir, err := c.dir("images")
	if err != nil {
		return err
	}
	busybox, err := busyboxImage("/bin/busybox")
	if err != nil {
		return err
	}
	pause, err := pauseImage(c.bin("pause"))
	if err != nil {
		return err
	}
	for _, img := range []image{busybox, pause} {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.name)+".tar")
		if err := writeDockerArchive(path, img); err != nil {
			return err
		}
		if _, err := c.ctr("images", "import", "--platform", "linux/amd64", path); err != nil {
			return fmt.Errorf("importing %s: %w", img.name, err)
		}
	}
	accel, err := c.importAccelDRAImage()
	if err != nil {
		return err
	}
	out, err := c.ctr("images", "ls", "-q")
	if err != nil {
		return err
	}
	for _, want := range append([]string{BusyboxImage, PauseImage}, accel...) {
		if !strings.Contains(out, want) {
			return fmt.Errorf("image %s missing after import; containerd has:\n%s", want, out)
		}
	}
	return nil
}

func (c *Cluster) startKubelet(ctx context.Context) error {
	// "k", not "kubelet": the DRA socket of a DaemonSet pod's agent is
	// <root>/plugins/<driver>/dra-<pod UID>.sock, and a unix socket path
	// has at most 107 bytes.
	root, err := c.dir("k")
	if err != nil {
		return err
	}
	c.State.KubeletRoot = root
	podLogs, err := c.dir("pod-logs")
	if err != nil {
		return err
	}
	node := c.State.RealNode
	nodeLabels := []string{NodeTypeLabel + "=real"}
	for _, n := range c.Nodes {
		if n.Real {
			for _, k := range sortedKeys(n.Labels) {
				nodeLabels = append(nodeLabels, k+"="+n.Labels[k])
			}
		}
	}
	kp, err := c.pki.client("kubelet-"+node, "system:node:"+node, "system:nodes")
	if err != nil {
		return err
	}
	kc, err := c.kubeconfig("kubelet", &kp, "")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[4]s}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://%[5]s
podLogsDir: %[6]s
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
makeIPTablesUtilChains: false
localStorageCapacityIsolation: false
oomScoreAdj: 0
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%}
serializeImagePulls: false
registerNode: true
syncFrequency: 10s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 5s
shutdownGracePeriod: 0s
`, c.State.NodeIP, port, healthz, c.pki.CAFile, c.State.ContainerdSocket, podLogs)
	configFile := filepath.Join(c.State.RunDir, "kubelet-config.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return fmt.Errorf("writing kubelet config: %w", err)
	}
	if err := c.saveState(); err != nil {
		return err
	}
	p, err := c.start("kubelet", nil, c.bin("kubelet"),
		"--config="+configFile,
		"--kubeconfig="+kc,
		"--root-dir="+root,
		"--cert-dir="+filepath.Join(root, "pki"),
		"--volume-plugin-dir="+filepath.Join(root, "volume-plugins"),
		"--hostname-override="+node,
		"--node-ip="+c.State.NodeIP,
		"--node-labels="+strings.Join(nodeLabels, ","),
		"--v=2",
	)
	if err != nil {
		return err
	}
	return waitFor(ctx, "node "+node+" Ready", 2*time.Minute, p, func(ctx context.Context) (bool, error) {
		n, err := c.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(n), nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

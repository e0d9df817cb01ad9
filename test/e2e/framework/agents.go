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
	"net/http"
	"path/filepath"
	"sort"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// Registry is the vendors the agents serve, built as their main builds
// it.
var Registry = all.Registry()

// Agent is the accel-dra-kubeletplugin process of one node.
type Agent struct {
	Node    string
	Profile string
	// ChipModes is passed as --chip-modes where set.
	ChipModes string
	// Real is the node with the kubelet; there the agent registers with
	// it and creates fake device nodes that containers open.
	Real bool
	// Drivers the profile's chips need, sorted.
	Drivers []string
	// Chips per driver in the profile.
	Chips map[string]int
	// StandIn is the pod the agent's token is bound to, in AgentNamespace.
	StandIn    string
	StandInUID types.UID
	// Token is the agent's ServiceAccount token (bound to StandIn).
	Token      string
	Kubeconfig string
	// Root holds the fake devices (real node) and the agent's dirs.
	Root, CDIDir, StateDir, RegistrarDir, PluginDir string
	HealthAddr                                      string

	args []string
	// env is added to the agent's environment (SetAgentEnv), e.g. the mock
	// vendor library's fixture.
	env  []string
	proc *proc
}

func (c *Cluster) startAgents(ctx context.Context) error {
	for _, n := range c.Nodes {
		a, err := c.newAgent(ctx, n)
		if err != nil {
			return err
		}
		c.Agents[n.Name] = a
		if err := c.runAgent(a); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.Agents) {
		if err := c.WaitForAgent(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) newAgent(ctx context.Context, n NodeInfo) (*Agent, error) {
	p, err := profile.Load(Registry, n.Profile)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	// Checked here, so a typo fails the start naming the node rather than
	// as an agent that never publishes.
	if _, err := partitions.ParsePolicy(Registry, n.ChipModes); err != nil {
		return nil, fmt.Errorf("node %s: chipModes: %w", n.Name, err)
	}
	a := &Agent{Node: n.Name, Profile: n.Profile, ChipModes: n.ChipModes, Real: n.Real, Chips: map[string]int{}, StandIn: "agent-stand-in-" + n.Name}
	for _, g := range p.Chips {
		d := Registry.DriverFor(inventory.Vendor(g.Vendor))
		if a.Chips[d] == 0 {
			a.Drivers = append(a.Drivers, d)
		}
		a.Chips[d] += g.Count
	}
	sort.Strings(a.Drivers)
	base, err := c.dir("agents", n.Name)
	if err != nil {
		return nil, err
	}
	a.Root, a.StateDir = c.agentRoot(n.Name), filepath.Join(base, "state")
	if n.Real {
		a.CDIDir = c.State.CDIDir
		a.RegistrarDir = filepath.Join(c.State.KubeletRoot, "plugins_registry")
		a.PluginDir = filepath.Join(c.State.KubeletRoot, "plugins")
	} else {
		// No kubelet: the agent registers into a directory nobody
		// watches and still publishes its slices.
		a.CDIDir, a.RegistrarDir, a.PluginDir = filepath.Join(base, "cdi"), filepath.Join(base, "registry"), filepath.Join(base, "plugins")
	}
	if err := c.createStandIn(ctx, a); err != nil {
		return nil, err
	}
	tr, err := c.Admin.CoreV1().ServiceAccounts(AgentNamespace).CreateToken(ctx, c.Chart.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](48 * 3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: a.StandIn, UID: a.StandInUID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting the token of the agent on %s: %w", n.Name, err)
	}
	a.Token = tr.Status.Token
	if a.Kubeconfig, err = c.kubeconfig("agent-"+n.Name, nil, a.Token); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	a.HealthAddr = fmt.Sprintf("127.0.0.1:%d", port)
	a.args = []string{
		"--node-name=" + a.Node,
		"--kubeconfig=" + a.Kubeconfig,
		"--profile=" + a.Profile,
		"--root=" + a.Root,
		"--cdi-dir=" + a.CDIDir,
		"--state-dir=" + a.StateDir,
		"--registrar-dir=" + a.RegistrarDir,
		"--plugin-dir=" + a.PluginDir,
		"--healthz-addr=" + a.HealthAddr,
		"--v=2",
		"--chip-metrics-interval=" + AgentChipMetricsInterval.String(),
	}
	// Only the real node has a kubelet, whose PodResources give the chip
	// metrics their pod and container labels.
	podResources := ""
	if a.Real {
		podResources = filepath.Join(c.PodResourcesDir(), "kubelet.sock")
	}
	a.args = append(a.args, "--pod-resources-socket="+podResources)
	if a.ChipModes != "" {
		a.args = append(a.args, "--chip-modes="+a.ChipModes)
	}
	if a.Real {
		a.args = append(a.args, "--fake-devices")
	}
	return a, nil
}

// createStandIn creates the pod that stands in for the chart's DaemonSet
// pod on the agent's node. Its token carries the node's name, which the
// chart's ValidatingAdmissionPolicy checks. On the real node the kubelet
// runs it (the pause image); kwok plays it on the others.
func (c *Cluster) createStandIn(ctx context.Context, a *Agent) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: a.StandIn, Namespace: AgentNamespace, Labels: map[string]string{StandInLabel: a.Node}},
		Spec: corev1.PodSpec{
			NodeName:                      a.Node,
			ServiceAccountName:            c.Chart.ServiceAccount,
			AutomountServiceAccountToken:  ptr.To(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "agent", Image: PauseImage, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
	created, err := c.Admin.CoreV1().Pods(AgentNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = c.Admin.CoreV1().Pods(AgentNamespace).Get(ctx, a.StandIn, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating the stand-in pod of the agent on %s: %w", a.Node, err)
	}
	a.StandInUID = created.UID
	return nil
}

func (c *Cluster) runAgent(a *Agent) error {
	p, err := c.start("agent-"+a.Node, a.env, c.bin("accel-dra-kubeletplugin"), a.args...)
	if err != nil {
		return err
	}
	a.proc = p
	return nil
}

// WaitForAgent waits until the agent of node has published, for each of
// its drivers, every whole chip of the profile (devices of type "chip";
// partitions may come on top), and, on the real node, until the kubelet
// has registered every driver (/readyz).
func (c *Cluster) WaitForAgent(ctx context.Context, node string) error {
	a := c.Agents[node]
	return waitFor(ctx, "the agent of "+node, 2*time.Minute, a.proc, func(ctx context.Context) (bool, error) {
		slices, err := c.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false, err
		}
		devices := map[string]int{}
		for _, s := range slices.Items {
			for _, d := range s.Spec.Devices {
				if ptr.Deref(d.Attributes[names.AttrType].StringValue, "") == "chip" {
					devices[s.Spec.Driver]++
				}
			}
		}
		for _, d := range a.Drivers {
			if devices[d] != a.Chips[d] {
				return false, fmt.Errorf("driver %s: %d of %d chips published", d, devices[d], a.Chips[d])
			}
		}
		if !a.Real {
			return true, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.HealthAddr+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("/readyz: %s", resp.Status)
		}
		return true, nil
	})
}

// KillAgent kills the agent of node with SIGKILL, as a crash or an OOM
// kill would: no unregistration, no cleanup.
func (c *Cluster) KillAgent(node string) error {
	a := c.Agents[node]
	if a == nil || a.proc == nil {
		return fmt.Errorf("no agent on node %s", node)
	}
	return a.proc.kill()
}

// RestartAgent starts the agent of node again with the same flags,
// directories and token.
func (c *Cluster) RestartAgent(ctx context.Context, node string) error {
	if err := c.StartAgent(node); err != nil {
		return err
	}
	return c.WaitForAgent(ctx, node)
}

// AgentPID is the process id of node's agent (0: none), to tell whether
// it was restarted.
func (c *Cluster) AgentPID(node string) int {
	if a := c.Agents[node]; a != nil && a.proc != nil {
		return a.proc.PID
	}
	return 0
}

// AgentLog is the path of the agent's log file.
func (c *Cluster) AgentLog(node string) string {
	if a := c.Agents[node]; a != nil && a.proc != nil {
		return a.proc.LogFile
	}
	return ""
}

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
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// tcpProxy forwards TCP connections from a fixed loopback address to the
// API server. While it is down the address refuses connections and the
// connections it had are cut: to an agent behind it the API server is
// unreachable. TLS passes through, so the agent still checks the API
// server's certificate (which names 127.0.0.1, whatever the port).
type tcpProxy struct {
	addr, target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]struct{}
}

// newTCPProxy reserves a loopback port for a proxy to target; it starts
// down.
func newTCPProxy(t *testing.T, target string) *tcpProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{addr: l.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	require.NoError(t, l.Close())
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) up(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", p.addr)
	require.NoError(t, err)
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed by down
			}
			go p.forward(c)
		}
	}()
	t.Logf("proxy %s → %s up", p.addr, p.target)
}

func (p *tcpProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// track records a forwarded pair, or closes it if the proxy went down
// meanwhile.
func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// down refuses new connections and cuts the open ones.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// agentLogSinceStart is the agent's log since its latest start (the
// harness writes a "=== <time>: <command>" line at each start).
func agentLogSinceStart(t *testing.T, node string) string {
	t.Helper()
	data, err := os.ReadFile(cluster.AgentLog(node))
	require.NoError(t, err)
	s := string(data)
	if i := strings.LastIndex(s, "\n=== "); i >= 0 {
		s = s[i:]
	}
	return s
}

// waitForAgentLog waits until the agent's log since its latest start
// contains want at least n times, while the agent keeps running.
func waitForAgentLog(t *testing.T, node, want string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cluster.AgentRunning(node); err != nil {
			return false, err
		}
		return strings.Count(agentLogSinceStart(t, node), want) >= n, nil
	})
	require.NoError(t, err, "the agent of %s logs %q %d times (log %s)", node, want, n, cluster.AgentLog(node))
}

// publishedSlices lists the node's slices by name.
func publishedSlices(t *testing.T, node string) (map[string]resourceapi.ResourceSlice, string) {
	t.Helper()
	list, err := cluster.Admin.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	require.NoError(t, err)
	out := map[string]resourceapi.ResourceSlice{}
	for _, s := range list.Items {
		out[s.Name] = s
	}
	return out, list.ResourceVersion
}

// requireExpectedSlices asserts that the node publishes exactly what its
// profile makes: per driver one pool with the expected number of slices
// (no duplicates) and the expected device names.
func requireExpectedSlices(t *testing.T, node, profileName string) {
	t.Helper()
	p, err := profile.Load(framework.Registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(framework.Registry, node, p).Discover(t.Context())
	require.NoError(t, err)
	want := resourceslices.DriverResourcesFor(framework.Registry, node, inv, resourceslices.Options{})
	got, _ := publishedSlices(t, node)
	slices, devices := map[string]int{}, map[string][]string{}
	for _, s := range got {
		require.Equal(t, node, s.Spec.Pool.Name, "slice %s", s.Name)
		slices[s.Spec.Driver]++
		for _, d := range s.Spec.Devices {
			devices[s.Spec.Driver] = append(devices[s.Spec.Driver], d.Name)
		}
	}
	require.Len(t, slices, len(want), "drivers publishing on %s", node)
	for driver, res := range want {
		pool := res.Pools[node]
		var names []string
		for _, s := range pool.Slices {
			for _, d := range s.Devices {
				names = append(names, d.Name)
			}
		}
		sort.Strings(names)
		sort.Strings(devices[driver])
		assert.Equal(t, len(pool.Slices), slices[driver], "%s: slices of pool %s (a duplicate would show here)", driver, node)
		assert.Equal(t, names, devices[driver], "%s: devices of pool %s", driver, node)
	}
}

// TestTheAgentWaitsForAnUnreachableAPIServerAndConverges starts a node
// agent (a kwok node, a simulated profile) whose kubeconfig points at a
// proxy the test controls. With the proxy down the agent keeps running
// and retries and nothing is published; once the proxy is up its slices
// appear. Then, with the slices published, the proxy goes down and the
// agent is restarted: it waits again, and when the proxy comes back it
// takes its slices over (same slices, none created or deleted).
func TestTheAgentWaitsForAnUnreachableAPIServerAndConverges(t *testing.T) {
	const node, profileName = "outage-0", "mlu270"
	proxy := newTCPProxy(t, cluster.APIServerHost())
	_, err := cluster.AddAgentNode(t.Context(), framework.NodeInfo{Name: node, Profile: profileName}, "https://"+proxy.addr)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := cluster.RemoveAgentNode(context.Background(), node); err != nil {
			t.Errorf("removing node %s: %v", node, err)
		}
	})

	// The API server is unreachable from the start.
	require.NoError(t, cluster.StartAgent(node))
	waitForAgentLog(t, node, "waiting for the API server", 1)
	waitForAgentLog(t, node, "connection refused", 3)
	require.NoError(t, cluster.AgentRunning(node), "the agent keeps running while it cannot reach the API server")
	got, _ := publishedSlices(t, node)
	require.Empty(t, got, "nothing published while the API server is unreachable")

	proxy.up(t)
	require.NoError(t, cluster.WaitForAgent(t.Context(), node), "the agent publishes once the API server is back (log %s)", cluster.AgentLog(node))
	waitForAgentLog(t, node, "Driver started", 1)
	requireExpectedSlices(t, node, profileName)

	// Published; the API server goes away and the agent restarts.
	before, rv := publishedSlices(t, node)
	w, err := cluster.Admin.ResourceV1().ResourceSlices().Watch(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, ResourceVersion: rv})
	require.NoError(t, err)
	defer w.Stop()
	proxy.down()
	require.NoError(t, cluster.KillAgent(node))
	require.NoError(t, cluster.StartAgent(node))
	waitForAgentLog(t, node, "connection refused", 3)
	require.NotContains(t, agentLogSinceStart(t, node), "Driver started", "the restarted agent has not published yet")

	proxy.up(t)
	waitForAgentLog(t, node, "Driver started", 1)
	require.NoError(t, cluster.WaitForAgent(t.Context(), node))
	// Let the restarted slice controller sync its pool.
	time.Sleep(5 * time.Second)

	events := map[watch.EventType]int{}
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch of the node's slices ended early: it would miss a change")
			events[ev.Type]++
		default:
			done = true
		}
	}
	t.Logf("slice events while the agent restarted without the API server: %v", events)
	assert.Zero(t, events[watch.Added], "no slice was created")
	assert.Zero(t, events[watch.Deleted], "no slice was deleted")
	after, _ := publishedSlices(t, node)
	require.Len(t, after, len(before))
	for name, s := range before {
		require.Contains(t, after, name)
		assert.Equal(t, s.UID, after[name].UID, "slice %s taken over, not recreated", name)
		assert.Equal(t, s.Spec.Pool.Generation, after[name].Spec.Pool.Generation, "slice %s: same pool generation", name)
	}
	requireExpectedSlices(t, node, profileName)
	require.NoError(t, cluster.AgentRunning(node))
}

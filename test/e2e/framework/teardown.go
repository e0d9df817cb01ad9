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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// stopGrace is how long each component gets between SIGTERM and SIGKILL.
var stopGrace = map[string]time.Duration{
	"kube-apiserver": 20 * time.Second,
	"etcd":           10 * time.Second,
	"containerd":     15 * time.Second,
	"kubelet":        15 * time.Second,
}

// CleanupLeftovers tears down a cluster recorded in stateFile that is no
// longer wanted (a crashed or killed run). A missing file is fine.
func CleanupLeftovers(stateFile string, logf func(string, ...any)) error {
	st, ok, err := ReadState(stateFile)
	if err != nil || !ok {
		return err
	}
	if logf != nil {
		logf("Removing the leftovers of an earlier cluster (%s)", stateFile)
	}
	Teardown(st, logf)
	return os.Remove(stateFile)
}

// ReadState reads a state file; ok is false when there is none.
func ReadState(stateFile string) (st State, ok bool, err error) {
	data, err := os.ReadFile(stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("reading cluster state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, false, fmt.Errorf("decoding cluster state %s: %w", stateFile, err)
	}
	return st, true, nil
}

// Running reports whether every process of a recorded cluster still runs.
func (st State) Running() bool {
	if len(st.Procs) == 0 {
		return false
	}
	latest := map[string]*proc{}
	for _, p := range st.Procs {
		latest[p.Name] = p
	}
	for _, p := range latest {
		if !sameProcess(p.PID, p.Args) {
			return false
		}
	}
	return true
}

// StopRecorded stops the cluster recorded in stateFile from another
// process (demo-cluster down): the real node's pods are deleted through
// the API first, so the kubelet and the agent unprepare their claims,
// then Teardown. It reports whether there was a cluster.
func StopRecorded(ctx context.Context, stateFile string, logf func(string, ...any)) (bool, error) {
	st, ok, err := ReadState(stateFile)
	if err != nil || !ok {
		return false, err
	}
	if st.Kubeconfig != "" && st.RealNode != "" {
		if cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig); err == nil {
			cfg.Timeout = 10 * time.Second
			if cs, err := kubernetes.NewForConfig(cfg); err == nil {
				drainNode(ctx, cs, st.RealNode, logf)
			}
		}
	}
	Teardown(st, logf)
	return true, os.Remove(stateFile)
}

// Teardown stops a cluster's processes in reverse start order (so the API
// server stops before etcd, the kubelet before containerd), kills what
// containerd left running, unmounts everything under the run directory
// (the kubelet's self bind mount, rootfs overlays, netns), deletes the CNI
// bridge and its cache entries and /run/containerd if the cluster created
// it, and removes the run directory. It works from a State alone, so
// another process can run it. Errors are logged, not returned: teardown
// goes on as far as it can.
func Teardown(st State, logf func(string, ...any)) {
	say := func(format string, args ...any) {
		if logf != nil {
			logf(format, args...)
		}
	}
	for i := len(st.Procs) - 1; i >= 0; i-- {
		p := st.Procs[i]
		if done, _ := p.exited(); p.Name == "containerd" && !done {
			killContainers(st, say)
		}
		grace, ok := stopGrace[p.Name]
		if !ok {
			grace = 10 * time.Second
		}
		if err := p.stop(grace); err != nil {
			say("Teardown: %v", err)
		}
	}
	if st.ContainerdSocket != "" {
		// Shims of our containerd, found by their -address argument.
		for _, pid := range pidsWithArg(st.ContainerdSocket) {
			say("Teardown: killing containerd shim %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Containers whose containerd or shim died first (a killed test
	// binary) are still known to runc.
	if st.Runc != "" && st.RuncRoot != "" {
		if out, err := runContext(context.Background(), 30*time.Second, st.Runc, "--root", st.RuncRoot, "list", "-q"); err == nil {
			for _, id := range strings.Fields(out.stdout) {
				say("Teardown: removing leftover container %s", id)
				_, _ = run(30*time.Second, st.Runc, "--root", st.RuncRoot, "delete", "--force", id)
			}
		}
	}
	unrouteService(st, say)
	if st.RunDir != "" {
		unmountUnder(st.RunDir, say)
	}
	netnsBefore := map[string]bool{}
	for _, n := range st.NetnsBefore {
		netnsBefore[n] = true
	}
	for _, n := range listNetns() {
		if !netnsBefore[n] && strings.HasPrefix(filepath.Base(n), "cni-") {
			_ = unix.Unmount(n, unix.MNT_DETACH)
			_ = os.Remove(n)
		}
	}
	if _, err := net.InterfaceByName(bridgeName); err == nil {
		if _, err := run(10*time.Second, "ip", "link", "delete", bridgeName); err != nil {
			say("Teardown: %v", err)
		}
	}
	cniCache, _ := filepath.Glob("/var/lib/cni/results/" + cniNetwork + "-*")
	for _, f := range cniCache {
		_ = os.Remove(f)
	}
	for _, p := range st.HostPaths {
		unmountUnder(p, say)
		if err := os.RemoveAll(p); err != nil {
			say("Teardown: removing %s: %v", p, err)
		}
	}
	if st.RunDir != "" && strings.HasPrefix(filepath.Base(st.RunDir), "adra-e2e-") {
		if err := os.RemoveAll(st.RunDir); err != nil {
			say("Teardown: removing %s: %v", st.RunDir, err)
		}
	}
}

// killContainers kills every task of the node's containerd, so no
// container outlives the cluster.
func killContainers(st State, say func(string, ...any)) {
	if st.Ctr == "" || st.ContainerdSocket == "" {
		return
	}
	if _, err := os.Stat(st.ContainerdSocket); err != nil {
		return
	}
	ctr := func(args ...string) (string, error) {
		out, err := runContext(context.Background(), 30*time.Second, st.Ctr, append([]string{"--address", st.ContainerdSocket, "--namespace", "k8s.io"}, args...)...)
		return out.stdout, err
	}
	out, err := ctr("tasks", "ls", "-q")
	if err != nil {
		say("Teardown: listing containers: %v", err)
		return
	}
	ids := strings.Fields(out)
	for _, id := range ids {
		_, _ = ctr("tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range ids {
		if _, err := ctr("tasks", "delete", "--force", id); err != nil {
			say("Teardown: %v", err)
		}
	}
}

// unmountUnder lazily unmounts every mount point at or below dir, deepest
// first.
func unmountUnder(dir string, say func(string, ...any)) {
	dir = filepath.Clean(dir)
	for range 3 {
		points := mountPoints()
		var mine []string
		for _, mp := range points {
			if mp == dir || strings.HasPrefix(mp, dir+"/") {
				mine = append(mine, mp)
			}
		}
		if len(mine) == 0 {
			return
		}
		sort.Slice(mine, func(i, j int) bool { return len(mine[i]) > len(mine[j]) })
		for _, mp := range mine {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				say("Teardown: unmounting %s: %v", mp, err)
			}
		}
	}
}

func mountPoints() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// listNetns lists the named network namespaces of the host.
func listNetns() []string {
	var out []string
	for _, dir := range []string{"/run/netns", "/var/run/netns"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

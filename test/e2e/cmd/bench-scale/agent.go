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

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/accel-dra/accel-dra/test/scale"
)

// agentMemory is the resident memory of the real node agent binary
// serving one node of profile against the real API server, in MiB.
type agentMemory struct {
	profile, modes        string
	slices                int
	rss, anon, file, peak float64
	afterSettle           time.Duration
	// shares and resident: its resident pages of the binary by package
	// and in all, when symbols were given.
	shares   []residentShare
	resident float64
}

// measureAgent runs bin (the accel-dra-kubeletplugin binary) for node
// with a simulated profile and fake devices, waits until its slices are
// published and it has settled for settle, and reads its /proc status.
// No kubelet registers it: the memory the 16 prepared claims add is
// measured by BenchmarkAgentMemory (test/plugin), under 1 MiB.
func measureAgent(ctx context.Context, client kubernetes.Interface, kubeconfig, bin, symbols, profile, modes string, node corev1.Node, settle time.Duration) (agentMemory, error) {
	m := agentMemory{profile: profile, modes: modes, afterSettle: settle}
	res, err := scale.ResourcesFor(ctx, node.Name, profile, modes)
	if err != nil {
		return m, err
	}
	for _, r := range res {
		for _, p := range r.Pools {
			m.slices += len(p.Slices)
		}
	}
	dir, err := os.MkdirTemp("", "adra-agent-mem-")
	if err != nil {
		return m, fmt.Errorf("creating the agent's directory: %w", err)
	}
	defer os.RemoveAll(dir)
	log, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return m, fmt.Errorf("creating the agent's log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--node-name="+node.Name, "--profile="+profile,
		"--fake-devices", "--chip-modes="+modes, "--root="+filepath.Join(dir, "root"),
		"--cdi-dir="+filepath.Join(dir, "cdi"), "--state-dir="+filepath.Join(dir, "state"),
		"--registrar-dir="+filepath.Join(dir, "registry"), "--plugin-dir="+filepath.Join(dir, "plugins"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return m, fmt.Errorf("starting the node agent %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited: //nolint:errcheck // stopped by us: its exit status says nothing
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	drivers := make([]string, 0, len(res))
	for d := range res {
		drivers = append(drivers, d)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			data, _ := os.ReadFile(log.Name())
			return false, fmt.Errorf("the node agent exited: %s\n%s", fmt.Sprint(err), data)
		default:
		}
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
		if err != nil {
			return false, err
		}
		return len(list.Items) >= m.slices, nil
	})
	if err != nil {
		return m, fmt.Errorf("waiting for the node agent's %d slices: %w", m.slices, err)
	}
	time.Sleep(settle)
	pid := cmd.Process.Pid
	for _, f := range []struct {
		name string
		into *float64
	}{{"VmRSS", &m.rss}, {"RssAnon", &m.anon}, {"RssFile", &m.file}, {"VmHWM", &m.peak}} {
		if *f.into, err = scale.ProcStatusMiB(pid, f.name); err != nil {
			return m, err
		}
	}
	if symbols != "" {
		if m.shares, m.resident, err = residentByPackage(pid, bin, symbols); err != nil {
			return m, err
		}
	}
	defer func() {
		_ = scale.DeleteSlices(context.WithoutCancel(ctx), client, time.Minute, drivers...)
	}()
	return m, nil
}

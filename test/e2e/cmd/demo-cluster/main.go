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

// Command demo-cluster brings up the tier-4 e2e cluster of test/e2e (real
// control plane, one real containerd + kubelet node, kwok nodes, the real
// node agents) with the demo applied, prints per pod the chips it got and
// what its container sees, and leaves the cluster running; `down` stops
// it and removes everything it left on the machine.
//
//	go run -tags e2e ./test/e2e/cmd/demo-cluster up|down|status
//
// hack/e2e/demo-cluster.sh builds the binaries first and runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: demo-cluster up|down|status")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "demo-cluster:", err)
		os.Exit(1)
	}
}

func run(verb string) error {
	opts, err := framework.OptionsFromEnv("demo-cluster")
	if err != nil {
		return err
	}
	opts.Detached = true
	stableKubeconfig := filepath.Join(filepath.Dir(opts.StateFile), "demo-cluster.kubeconfig")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		return up(ctx, opts, stableKubeconfig)
	case "down":
		had, err := framework.StopRecorded(ctx, opts.StateFile, opts.Logf)
		if err != nil {
			return err
		}
		_ = os.Remove(stableKubeconfig)
		if !had {
			fmt.Println("demo-cluster: no cluster was running")
			return nil
		}
		fmt.Println("demo-cluster: stopped and cleaned up")
		return nil
	case "status":
		st, ok, err := framework.ReadState(opts.StateFile)
		if err != nil {
			return err
		}
		if !ok || !st.Running() {
			fmt.Println("demo-cluster: not running")
			return nil
		}
		printAccess(st, stableKubeconfig)
		return nil
	}
	return fmt.Errorf("unknown command %q: want up, down or status", verb)
}

func up(ctx context.Context, opts framework.Options, stableKubeconfig string) error {
	if st, ok, err := framework.ReadState(opts.StateFile); err != nil {
		return err
	} else if ok && st.Running() {
		fmt.Println("demo-cluster: already running")
		printAccess(st, stableKubeconfig)
		return nil
	}
	start := time.Now()
	c, err := framework.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w (component logs in %s)", err, opts.ArtifactsDir)
	}
	// From here on a failure leaves the cluster up for inspection;
	// `down` removes it.
	if data, err := os.ReadFile(c.Kubeconfig()); err == nil {
		_ = os.WriteFile(stableKubeconfig, data, 0o600)
	}
	opts.Logf("Cluster up in %s; applying the demo", time.Since(start).Round(time.Millisecond))
	_, workloads, err := c.ApplyDemo(ctx, "kubectl")
	if perr := c.PrintDemo(ctx, os.Stdout, workloads); perr != nil {
		err = errors.Join(err, perr)
	}
	printAccess(c.State, stableKubeconfig)
	if err != nil {
		return fmt.Errorf("applying the demo: %w (the cluster is still up: hack/e2e/demo-cluster.sh down)", err)
	}
	return nil
}

func printAccess(st framework.State, stableKubeconfig string) {
	fmt.Printf(`
The cluster is running (real node %s, node IP %s).
  kubeconfig:     %s
                  (also %s)
  component logs: %s
  try:            KUBECONFIG=%s kubectl get nodes,resourceslices,resourceclaims,pods -A
  stop it:        hack/e2e/demo-cluster.sh down
`, st.RealNode, st.NodeIP, st.Kubeconfig, stableKubeconfig, st.ArtifactsDir, stableKubeconfig)
}

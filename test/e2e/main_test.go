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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// cluster is shared by every test: starting it takes about half a minute.
var cluster *framework.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	opts, err := framework.OptionsFromEnv("e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var once sync.Once
	var mu sync.Mutex
	teardown := func() {
		once.Do(func() {
			mu.Lock()
			c := cluster
			mu.Unlock()
			if c != nil {
				start := time.Now()
				c.Stop(context.Background())
				opts.Logf("Cluster torn down in %s", time.Since(start).Round(time.Millisecond))
			}
		})
	}
	defer teardown()
	// Ctrl-C and SIGTERM still tear the cluster down; the components run
	// in their own process groups and do not see the terminal's signal.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		opts.Logf("Got %s: tearing the cluster down (logs in %s)", s, opts.ArtifactsDir)
		cancel()
		teardown()
		os.Exit(130)
	}()
	// go test -timeout panics without running deferred calls: tear the
	// cluster down a little before that.
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
			margin := min(d/10, 2*time.Minute)
			time.AfterFunc(d-margin, func() {
				opts.Logf("The test timeout (%s) is near: tearing the cluster down (logs in %s)", d, opts.ArtifactsDir)
				teardown()
			})
		}
	}

	start := time.Now()
	c, err := framework.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the e2e cluster: %v\ncomponent logs: %s\n", err, opts.ArtifactsDir)
		return 1
	}
	mu.Lock()
	cluster = c
	mu.Unlock()
	opts.Logf("Cluster up in %s; kubeconfig %s; component logs in %s", time.Since(start).Round(time.Millisecond), c.Kubeconfig(), c.ArtifactsDir())
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e tests failed; component logs (etcd, kube-*, containerd, kubelet, kwok, agent-<node>) are in %s\n", c.ArtifactsDir())
	}
	return code
}

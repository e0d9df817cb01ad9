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

// Command fakeapi-server serves test/fakeapi's fake clientset over HTTP on
// a loopback port, holding one Node, and writes a kubeconfig for it: the
// API server of the benchmarks that run the node agent binary as its own
// process (test/plugin, docs/benchmarks.md), so that what the fake does
// with each request is not in the agent's process. It runs until SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/accel-dra/accel-dra/test/fakeapi"
)

func main() {
	node := flag.String("node", "node-0", "name of the Node the API server holds")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file to write once the server listens (required)")
	flag.Parse()
	if err := run(*node, *kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "fakeapi-server:", err)
		os.Exit(1)
	}
}

func run(node, kubeconfig string) error {
	if kubeconfig == "" {
		return errors.New("-kubeconfig: required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c := fakeapi.NewClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID(node + "-uid")}})
	fakeapi.CheapStatusApply(c)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: fakeapi.Handler(c)} //nolint:gosec // a loopback test server
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	// Written once the port is known, through a rename, so the reader
	// never sees half a file.
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fake"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	cfg.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "fake"}
	cfg.AuthInfos["fake"] = &clientcmdapi.AuthInfo{}
	cfg.CurrentContext = "fake"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig+".tmp"); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := os.Rename(kubeconfig+".tmp", kubeconfig); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

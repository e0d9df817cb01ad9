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

// Command minplugin is the simplest Go kubelet plugin built from upstream
// parts: the kubeletplugin helper of k8s.io/dynamic-resource-allocation
// with one static device, no vendor code, no CDI spec and no checkpoint.
// Its memory is the floor of any driver built on that helper, which the
// node agent's is compared with (docs/benchmarks.md, "The agent's memory").
// It runs until SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// Device is the plugin's one device.
const Device = "dev-0"

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (required)")
	flag.StringVar(&o.node, "node-name", "", "name of this node (required)")
	flag.StringVar(&o.driver, "driver-name", "min.accel-dra.dev", "DRA driver name")
	flag.StringVar(&o.registrarDir, "registrar-dir", kubeletplugin.KubeletRegistryDir, "kubelet plugin registration directory")
	flag.StringVar(&o.pluginDir, "plugin-dir", kubeletplugin.KubeletPluginsDir, "kubelet plugins directory; the socket is <dir>/<driver name>/dra.sock")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(klog.NewContext(ctx, klog.Background()), o); err != nil {
		fmt.Fprintln(os.Stderr, "minplugin:", err)
		os.Exit(1)
	}
}

type options struct{ kubeconfig, node, driver, registrarDir, pluginDir string }

func run(ctx context.Context, o options) error {
	if o.kubeconfig == "" || o.node == "" {
		return fmt.Errorf("-kubeconfig and -node-name are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", o.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	dataDir := filepath.Join(o.pluginDir, o.driver)
	for _, dir := range []string{o.registrarDir, dataDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("creating the socket directory: %w", err)
		}
	}
	helper, err := kubeletplugin.Start(ctx, plugin{}, kubeletplugin.KubeClient(client), kubeletplugin.NodeName(o.node),
		kubeletplugin.DriverName(o.driver), kubeletplugin.RegistrarDirectoryPath(o.registrarDir),
		kubeletplugin.PluginDataDirectoryPath(dataDir), kubeletplugin.HealthService(false))
	if err != nil {
		return fmt.Errorf("starting the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	err = helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		o.node: {Slices: []resourceslice.Slice{{Devices: []resourceapi.Device{{Name: Device}}}}},
	}})
	if err != nil {
		return fmt.Errorf("publishing the device: %w", err)
	}
	<-ctx.Done()
	return nil
}

// plugin prepares every claim by naming its allocated devices of this
// driver: no files, no state.
type plugin struct{}

func (plugin) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		var r kubeletplugin.PrepareResult
		if c.Status.Allocation != nil {
			for _, d := range c.Status.Allocation.Devices.Results {
				r.Devices = append(r.Devices, kubeletplugin.Device{Requests: []string{d.Request}, PoolName: d.Pool, DeviceName: d.Device})
			}
		}
		out[c.UID] = r
	}
	return out, nil
}

func (plugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = nil
	}
	return out, nil
}

// WatchHealthStatus is never called: the health service is off.
func (plugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func (plugin) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

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

package scale

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// The peer sides of the benchmark (issue 43): the ResourceSlices of the
// drivers a user would pick instead of ours, reproduced from their source
// as their kubelet plugins publish them, with their documented
// DeviceClasses and our claims' shapes written for them
// (testdata/peers.yaml). No peer code runs: the sides measure what their
// slices cost kube-scheduler, next to ours in the same run. The shapes
// and what they leave out are in peers_nvidia.go and peers_huawei.go.

// PeersFile holds the peers' DeviceClasses and claims.
const PeersFile = "test/scale/testdata/peers.yaml"

// Peer is one peer side's slices and claims.
type Peer struct {
	// Name says which driver and shape, for the benchmark's rows.
	Name string
	// Driver is the DRA driver name its slices carry.
	Driver string
	// Resources is what the peer's kubelet plugin on the i-th node,
	// named node, publishes.
	Resources func(node string, i int) resourceslice.DriverResources
	// Templates are its claims in PeersFile, the pods' templates in turn.
	Templates []string
}

// The peer sides: NVIDIA's GPUs whole (with the Fabric Manager gate, for
// the partition attributes the 4-GPU claim matches on) and as DynamicMIG
// publishes them, Huawei's NPUs.
var (
	NVIDIAGPUs = Peer{
		Name:   "NVIDIA-shaped: 8 × H100, FabricManagerPartitioning",
		Driver: NVIDIADriver,
		Resources: func(node string, i int) resourceslice.DriverResources {
			return NVIDIAResources(node, i, NVIDIAGates{FabricManagerPartitioning: true})
		},
		Templates: []string{"nvidia-one-by-product-name", "nvidia-four-in-a-partition4"},
	}
	NVIDIAMIG = Peer{
		Name:   "NVIDIA MIG-shaped: 8 × H100, DynamicMIG (GPU + 28 MIG devices each, counter sets)",
		Driver: NVIDIADriver,
		Resources: func(node string, i int) resourceslice.DriverResources {
			return NVIDIAResources(node, i, NVIDIAGates{DynamicMIG: true})
		},
		Templates: []string{"nvidia-mig-quarter", "nvidia-mig-half"},
	}
	HuaweiNPUs = Peer{
		Name:      "Huawei-DRA-shaped: 8 × Ascend 910B (deviceType, physicId)",
		Driver:    HuaweiDriver,
		Resources: HuaweiResources,
		Templates: []string{"huawei-one-by-device-type", "huawei-four"},
	}
)

// Peers are the peer sides in the order the benchmark runs them.
var Peers = []Peer{NVIDIAGPUs, HuaweiNPUs, NVIDIAMIG}

// PeerWorkload reads the peer's classes and claims from PeersFile in the
// repository at repo; none of the chart's classes, which the peer's
// cluster would not have.
func PeerWorkload(repo string, p Peer) (Workload, error) {
	return loadWorkload([]string{filepath.Join(repo, PeersFile)}, PeersFile, p.Templates)
}

// PublishPeer publishes the peer's slices of nodes as its kubelet plugins
// would, one upstream resourceslice controller per node (owner: the
// Node), and returns when all are in the API server.
func PublishPeer(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, p Peer, timeout time.Duration) (*Publisher, error) {
	return publish(ctx, client, nodes, timeout, func(_ context.Context, name string, i int) (map[string]resourceslice.DriverResources, error) {
		if p.Resources == nil {
			return nil, fmt.Errorf("peer side %q has no slices", p.Name)
		}
		return map[string]resourceslice.DriverResources{p.Driver: p.Resources(name, i)}, nil
	})
}

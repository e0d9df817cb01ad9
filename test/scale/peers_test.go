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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/test/fakeapi"
)

// attribute kinds, as the peers' sources set them.
const (
	kindString  = "string"
	kindInt     = "int"
	kindVersion = "version"
)

func attributeKind(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return kindString
	case a.IntValue != nil:
		return kindInt
	case a.VersionValue != nil:
		return kindVersion
	}
	return "other"
}

// The attributes of each kind of peer device, from the sources
// peers_nvidia.go and peers_huawei.go cite: deviceinfo.go GpuInfo.Attributes
// (with addFabricManagerAttributes) and mig.go CommonAttributesMig, and
// the Ascend generations' DeviceAttributes.
var (
	nvidiaCommon = map[resourceapi.QualifiedName]string{
		"type": kindString, "productName": kindString, "brand": kindString, "architecture": kindString,
		"cudaComputeCapability": kindVersion, "driverVersion": kindVersion, "cudaDriverVersion": kindVersion,
		"resource.kubernetes.io/pciBusID": kindString, "resource.kubernetes.io/pcieRoot": kindString,
		"resource.kubernetes.io/numaNode": kindInt,
	}
	nvidiaGPU   = with(nvidiaCommon, map[resourceapi.QualifiedName]string{"uuid": kindString})
	nvidiaGPUFM = with(nvidiaGPU, map[resourceapi.QualifiedName]string{
		"gpuModuleID": kindInt, "partition1": kindInt, "partition2": kindInt, "partition4": kindInt, "partition8": kindInt,
	})
	nvidiaMIG   = with(nvidiaCommon, map[resourceapi.QualifiedName]string{"parentUUID": kindString, "profile": kindString})
	huaweiNPU   = map[resourceapi.QualifiedName]string{"deviceType": kindString, "physicId": kindInt}
	migCapacity = []resourceapi.QualifiedName{"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory"}
)

func with(a, b map[resourceapi.QualifiedName]string) map[resourceapi.QualifiedName]string {
	out := map[resourceapi.QualifiedName]string{}
	for _, m := range []map[resourceapi.QualifiedName]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// publishPeer publishes p's slices of nodes to a fake API server as the
// benchmark does and returns them.
func publishPeer(t *testing.T, p Peer, nodes int) ([]corev1.Node, []*resourceapi.ResourceSlice) {
	t.Helper()
	ctx := context.Background()
	ns, objs := testNodes(nodes)
	client := fakeapi.NewClient(objs...)
	pub, err := PublishPeer(ctx, client, ns, p, time.Minute)
	require.NoError(t, err)
	t.Cleanup(pub.Stop)
	require.Equal(t, []string{p.Driver}, pub.Drivers)
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, pub.Slices)
	var out []*resourceapi.ResourceSlice
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return ns, out
}

// TestPeerSlices checks each peer's published slices against its source:
// slices and devices per node, every device's attribute names and kinds,
// capacities and counter sets.
func TestPeerSlices(t *testing.T) {
	for _, tc := range []struct {
		peer                    Peer
		slicesPerNode, devices  int
		counterSets             int
		attributes              map[string]map[resourceapi.QualifiedName]string // by device kind
		capacity                map[string][]resourceapi.QualifiedName
		consumesCountersPerKind map[string]bool
	}{
		{peer: NVIDIAGPUs, slicesPerNode: 1, devices: 8,
			attributes: map[string]map[resourceapi.QualifiedName]string{"gpu": nvidiaGPUFM},
			capacity:   map[string][]resourceapi.QualifiedName{"gpu": {"memory"}}},
		// 8 GPUs of 1 + 7 + 3 + 2 + 1 + 1 + 7 + 7 devices (the GPU and the
		// mock H100's profiles' placements), a counter set each.
		{peer: NVIDIAMIG, slicesPerNode: 9, devices: 8 * 29, counterSets: 8,
			attributes:              map[string]map[resourceapi.QualifiedName]string{"gpu": nvidiaGPU, "mig": nvidiaMIG},
			capacity:                map[string][]resourceapi.QualifiedName{"gpu": migCapacity, "mig": migCapacity},
			consumesCountersPerKind: map[string]bool{"gpu": true, "mig": true}},
		{peer: HuaweiNPUs, slicesPerNode: 1, devices: 8,
			attributes: map[string]map[resourceapi.QualifiedName]string{"npu": huaweiNPU},
			capacity:   map[string][]resourceapi.QualifiedName{"npu": nil}},
	} {
		t.Run(tc.peer.Name, func(t *testing.T) {
			_, slices := publishPeer(t, tc.peer, 2)
			require.Len(t, slices, 2*tc.slicesPerNode)
			devices, sets := map[string]int{}, map[string]int{}
			for _, s := range slices {
				require.Equal(t, tc.peer.Driver, s.Spec.Driver)
				node := *s.Spec.NodeName
				require.Equal(t, node, s.Spec.Pool.Name, "one pool per node, named after it")
				sets[node] += len(s.Spec.SharedCounters)
				// What the API server admits (resource.k8s.io/v1 limits).
				require.LessOrEqual(t, len(s.Spec.SharedCounters), resourceapi.ResourceSliceMaxCounterSets, s.Name)
				for _, cs := range s.Spec.SharedCounters {
					require.LessOrEqual(t, len(cs.Counters), resourceapi.ResourceSliceMaxCountersPerCounterSet, cs.Name)
				}
				require.LessOrEqual(t, len(s.Spec.Devices), resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures, s.Name)
				for _, d := range s.Spec.Devices {
					devices[node]++
					require.Empty(t, validation.IsDNS1123Label(d.Name), "device name %s", d.Name)
					require.LessOrEqual(t, len(d.Attributes)+len(d.Capacity), resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice, d.Name)
					kind := "npu"
					if tc.peer.Driver == NVIDIADriver {
						kind = *d.Attributes["type"].StringValue
					}
					require.Contains(t, tc.attributes, kind, d.Name)
					got := map[resourceapi.QualifiedName]string{}
					for k, a := range d.Attributes {
						got[k] = attributeKind(a)
					}
					require.Equal(t, tc.attributes[kind], got, d.Name)
					var caps []resourceapi.QualifiedName
					for k := range d.Capacity {
						caps = append(caps, k)
					}
					require.ElementsMatch(t, tc.capacity[kind], caps, d.Name)
					require.Equal(t, tc.consumesCountersPerKind[kind], len(d.ConsumesCounters) == 1, d.Name)
				}
			}
			for _, n := range []string{NodeName(0), NodeName(1)} {
				require.Equal(t, tc.devices, devices[n], n)
				require.Equal(t, tc.counterSets, sets[n], n)
			}
		})
	}
}

// peerNode allocates claims on one node of published peer slices with
// the upstream allocator, as kube-scheduler's DRA filter does, each
// claim seeing what the earlier ones took.
type peerNode struct {
	t       *testing.T
	node    *corev1.Node
	slices  []*resourceapi.ResourceSlice
	classes *simulate.Inputs
	state   structured.AllocatedState
}

// newPeerNode is the first node of p's slices published by publishPeer,
// nothing allocated.
func newPeerNode(t *testing.T, p Peer, nodes []corev1.Node, slices []*resourceapi.ResourceSlice) *peerNode {
	w, err := PeerWorkload("../..", p)
	require.NoError(t, err)
	classes := &simulate.Inputs{Classes: map[string]*resourceapi.DeviceClass{}}
	for _, c := range w.Classes {
		classes.Classes[c.Name] = c
	}
	return &peerNode{t: t, node: &nodes[0], slices: slices, classes: classes, state: simulate.NewAllocatedState()}
}

// allocate allocates a claim of template from PeersFile, nil if it does
// not fit.
func (n *peerNode) allocate(template string) []resourceapi.DeviceRequestAllocationResult {
	n.t.Helper()
	w, err := loadWorkload([]string{"../../" + PeersFile}, PeersFile, []string{template})
	require.NoError(n.t, err)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: template}, Spec: w.Templates[0].Spec.Spec}
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, simulate.Features, n.state, n.classes, n.slices, cel.NewCache(100, cel.Features{EnableConsumableCapacity: true}))
	require.NoError(n.t, err)
	res, err := a.Allocate(ctx, n.node, []*resourceapi.ResourceClaim{claim})
	require.NoError(n.t, err)
	if res == nil {
		return nil
	}
	simulate.AddAllocation(n.state, &res[0])
	return res[0].Devices.Results
}

// TestPeerClaimsAllocate runs each peer claim through the upstream
// allocator against the peer's published slices: each gets the devices
// it asks for, on the node's pool, and the node fills up as the shape
// says (the 4-GPU claim in Fabric Manager partitions of four, the MIG
// halves by their counters, the NPUs by count).
func TestPeerClaimsAllocate(t *testing.T) {
	type published struct {
		nodes  []corev1.Node
		slices []*resourceapi.ResourceSlice
	}
	peers := map[string]published{}
	for _, tc := range []struct {
		peer     Peer
		template string
		devices  int    // per claim
		prefix   string // of every device's name
		fit      int    // claims of it on one node
	}{
		{NVIDIAGPUs, "nvidia-one-by-product-name", 1, "gpu-", 8},
		{NVIDIAGPUs, "nvidia-four-in-a-partition4", 4, "gpu-", 2},
		// Two 3g.40gb per GPU take its memory and its memory slices.
		{NVIDIAMIG, "nvidia-mig-half", 1, "gpu-", 16},
		// Three 2g.20gb per GPU: the mock H100 has three placements.
		{NVIDIAMIG, "nvidia-mig-quarter", 1, "gpu-", 24},
		{HuaweiNPUs, "huawei-one-by-device-type", 1, "npu-", 8},
		{HuaweiNPUs, "huawei-four", 4, "npu-", 2},
	} {
		// Publishing takes the controllers' first sync: once per peer.
		if _, ok := peers[tc.peer.Name]; !ok {
			nodes, slices := publishPeer(t, tc.peer, 2)
			peers[tc.peer.Name] = published{nodes, slices}
		}
		t.Run(tc.template, func(t *testing.T) {
			n := newPeerNode(t, tc.peer, peers[tc.peer.Name].nodes, peers[tc.peer.Name].slices)
			seen := map[string]bool{}
			for c := range tc.fit {
				res := n.allocate(tc.template)
				require.Len(t, res, tc.devices, "claim %d", c+1)
				for _, r := range res {
					require.Equal(t, tc.peer.Driver, r.Driver)
					require.Equal(t, n.node.Name, r.Pool)
					require.True(t, strings.HasPrefix(r.Device, tc.prefix), r.Device)
					require.False(t, seen[r.Device], "%s allocated twice", r.Device)
					seen[r.Device] = true
				}
			}
			require.Nil(t, n.allocate(tc.template), "claim %d does not fit", tc.fit+1)
		})
	}
}

// TestPeerClaimsTakeWhatTheyAsk checks what the devices are: the
// partition4 claim's four GPUs share a partition, the MIG claims get
// their profile.
func TestPeerClaimsTakeWhatTheyAsk(t *testing.T) {
	attrs := func(slices []*resourceapi.ResourceSlice, device string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		for _, s := range slices {
			if *s.Spec.NodeName != NodeName(0) {
				continue
			}
			for _, d := range s.Spec.Devices {
				if d.Name == device {
					return d.Attributes
				}
			}
		}
		return nil
	}
	nodes, slices := publishPeer(t, NVIDIAGPUs, 2)
	n := newPeerNode(t, NVIDIAGPUs, nodes, slices)
	partitions := map[int64]int{}
	for range 2 {
		for _, r := range n.allocate("nvidia-four-in-a-partition4") {
			partitions[*attrs(n.slices, r.Device)["partition4"].IntValue]++
		}
	}
	require.Equal(t, map[int64]int{2: 4, 3: 4}, partitions, "two partitions of four GPUs")
	nodes, slices = publishPeer(t, NVIDIAMIG, 2)
	m := newPeerNode(t, NVIDIAMIG, nodes, slices)
	for template, profile := range map[string]string{"nvidia-mig-quarter": "2g.20gb", "nvidia-mig-half": "3g.40gb"} {
		res := m.allocate(template)
		require.Len(t, res, 1)
		a := attrs(m.slices, res[0].Device)
		require.Equal(t, "mig", *a["type"].StringValue, res[0].Device)
		require.Equal(t, profile, *a["profile"].StringValue, res[0].Device)
	}
}

// TestPeerWorkloads checks the peers' claims name only the peer's own
// classes, none of ours.
func TestPeerWorkloads(t *testing.T) {
	for _, p := range Peers {
		t.Run(p.Name, func(t *testing.T) {
			w, err := PeerWorkload("../..", p)
			require.NoError(t, err)
			domain := p.Driver[strings.Index(p.Driver, "."):] // the classes share the driver's domain
			classes := map[string]bool{}
			for _, c := range w.Classes {
				require.False(t, strings.Contains(c.Name, "accel-dra.dev"), c.Name)
				classes[c.Name] = true
			}
			require.Len(t, w.Templates, len(p.Templates))
			for i, tmpl := range w.Templates {
				require.Equal(t, p.Templates[i], tmpl.Name)
				for _, r := range tmpl.Spec.Spec.Devices.Requests {
					require.True(t, classes[r.Exactly.DeviceClassName], "template %s: class %s", tmpl.Name, r.Exactly.DeviceClassName)
					require.True(t, strings.HasSuffix(r.Exactly.DeviceClassName, domain), tmpl.Name)
				}
			}
		})
	}
}

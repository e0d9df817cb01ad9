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
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/test/scale"
)

// The peer sides of issue 43: the slices of the drivers a user would
// pick instead of ours (test/scale/peers*.go, their sources cited there
// and in docs/benchmarks.md), on the same nodes with as many pods as our
// sides of the same kind, and our ratios to them.

// The names the ratio lines find sides by: the peers', and ours they are
// compared with (prefixes of the names main.go gives them). A side that
// is not in the run leaves its lines out.
const (
	peerPrefix        = "peer: "
	oursNextToPeers   = "ours, chips Whole, next to the peers (side 1's slices and claims)"
	oursOneVendor     = "ours, chips Whole, one vendor as the peers: every node 8 × Ascend 910B3, claims a and b"
	oursWholePrefix   = "ours, chips Whole: "
	oursPartitioned   = "ours, chips Partitioned (chip + 6 slots)"
	sharesPartitioned = "shares: Partitioned"
)

// withPeerSides appends to sides ours Whole again (so the peers have a
// reference the machine's drift has not moved), NVIDIA's GPUs, Huawei's
// NPUs and NVIDIA's GPUs as DynamicMIG publishes them, the last with
// pods, the Partitioned sides' pod count; then ours in the peers'
// setting, every node alike and the peers' two claim shapes, compared
// with the NVIDIA-shaped side.
func withPeerSides(sides []side, client kubernetes.Interface, repo string, pods, partitionedPods int) ([]side, error) {
	ours, err := scale.OurWorkload(repo)
	if err != nil {
		return nil, err
	}
	oneVendor, err := scale.LoadWorkload(repo, "test/bench/testdata/claims.yaml", scale.OneVendorTemplates)
	if err != nil {
		return nil, err
	}
	whole := scale.Slices{Modes: string(partitions.ModeWhole)}
	sides = append(sides, oursSide(client, oursNextToPeers, ours, whole, pods, 0))
	nvidia := len(sides)
	for _, p := range scale.Peers {
		w, err := scale.PeerWorkload(repo, p)
		if err != nil {
			return nil, err
		}
		n := pods
		s := peerSide(client, p, w, n)
		if p.Name == scale.NVIDIAMIG.Name {
			// 232 devices a node: at 1000 nodes the API server and this
			// process held 18 GiB and grew until the 24 GiB machine ran
			// out of memory (2026-12-07), so it runs only when -order
			// names it, on fewer nodes.
			s.pods = partitionedPods
			s.onlyByOrder = true
		}
		sides = append(sides, s)
	}
	whole.Profile = scale.OneVendorProfile
	return append(sides, oursSide(client, oursOneVendor, oneVendor, whole, pods, nvidia)), nil
}

// peerSide publishes p's slices as its kubelet plugins would and
// schedules w's pods.
func peerSide(client kubernetes.Interface, p scale.Peer, w scale.Workload, pods int) side {
	return side{name: peerPrefix + p.Name + " (" + strings.Join(p.Templates, ", ") + ")", workload: w, pods: pods,
		publish: publishing(client, func(ctx context.Context, nodes []corev1.Node) (*scale.Publisher, error) {
			return scale.PublishPeer(ctx, client, nodes, p, 5*time.Minute)
		})}
}

// printPeerRatios prints ours to each peer from the same run: pods/s,
// scheduler CPU per pod, nodes evaluated per pod and CPU per evaluated
// node, each ours ÷ the peer's. Issue 43's goal: ours Whole at least 1.0×
// the NVIDIA-shaped side's pods/s, with no more CPU per pod.
func printPeerRatios(rs []result) {
	find := func(prefix string) int {
		for i, r := range rs {
			if strings.HasPrefix(r.side, prefix) && !r.failed {
				return i
			}
		}
		return -1
	}
	pairs := []struct{ ours, peer string }{
		{oursOneVendor, scale.NVIDIAGPUs.Name},
		{oursNextToPeers, scale.NVIDIAGPUs.Name},
		{oursWholePrefix, scale.NVIDIAGPUs.Name},
		{oursOneVendor, scale.HuaweiNPUs.Name},
		{oursNextToPeers, scale.HuaweiNPUs.Name},
		{oursWholePrefix, scale.HuaweiNPUs.Name},
		{sharesPartitioned, scale.NVIDIAMIG.Name},
		{oursPartitioned, scale.NVIDIAMIG.Name},
	}
	printed := false
	for _, pair := range pairs {
		o, p := find(pair.ours), find(peerPrefix+pair.peer)
		if o < 0 || p < 0 {
			continue
		}
		if !printed {
			fmt.Println()
			fmt.Println("| ours ÷ peer (same run) | pods/s | scheduler CPU/pod | nodes evaluated/pod | CPU/evaluated node |")
			fmt.Println("|---|---|---|---|---|")
			printed = true
		}
		fmt.Printf("| #%d ÷ #%d: %s ÷ %s | %s | %s | %s | %s |\n", o, p, rs[o].side, pair.peer,
			ratio(rs[o].sched.PodsPerSecond(), rs[p].sched.PodsPerSecond()),
			ratio(cpuPerPod(rs[o]), cpuPerPod(rs[p])), ratio(rs[o].evaluated, rs[p].evaluated),
			ratio(cpuPerPod(rs[o])/rs[o].evaluated, cpuPerPod(rs[p])/rs[p].evaluated))
	}
}

// ratio is a ÷ b as the tables print it, "—" where b is none.
func ratio(a, b float64) string {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a/b, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

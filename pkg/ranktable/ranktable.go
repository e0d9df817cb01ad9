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

// Package ranktable writes the HCCL rank table of a multi-node job from
// the claim status the node agents write for every prepared chip
// (v1alpha1.DeviceStatusData: index, deviceIP, superPodID,
// superDeviceID): version 1.0 for chips without a super pod (910B),
// 1.2 with super_pod_list for super pod chips (Atlas A3). The format is
// mind-cluster's ascend-operator's (component/ascend-operator/pkg/ranktable:
// common/common.go BaseGenerator and getDeviceList, common/server.go,
// v1dot2/ranktable.go).
package ranktable

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// Versions of the rank table (ascend-operator common.Version1,
// common.Version1Dot2).
const (
	Version1     = "1.0"
	Version1Dot2 = "1.2"
	// StatusCompleted is the status of a table every rank of which is
	// known (ascend-operator utils.CompletedRTStatus).
	StatusCompleted = "completed"
)

// Table is an HCCL rank table (hccl.json).
type Table struct {
	Status      string   `json:"status"`
	ServerList  []Server `json:"server_list"`
	ServerCount string   `json:"server_count"`
	Version     string   `json:"version"`
	// SuperPodList groups the servers by super pod (version 1.2 only).
	SuperPodList []SuperPod `json:"super_pod_list,omitempty"`
}

// Server is one pod of the job: its node (server_id and host_ip, the
// node's address, as ascend-operator takes them) and its ranks.
type Server struct {
	DeviceList  []Device `json:"device"`
	ServerID    string   `json:"server_id"`
	HostIP      string   `json:"host_ip"`
	ContainerIP string   `json:"container_ip,omitempty"`
}

// Device is one rank: a chip by its physical id, the address of its RoCE
// port, its SDID (version 1.2) and its rank.
type Device struct {
	DeviceID      string `json:"device_id"`
	DeviceIP      string `json:"device_ip"`
	SuperDeviceID string `json:"super_device_id,omitempty"`
	RankID        string `json:"rank_id"`
}

// SuperPod lists the servers of one super pod.
type SuperPod struct {
	SuperPodID string           `json:"super_pod_id"`
	ServerList []SuperPodServer `json:"server_list"`
}

// SuperPodServer names a server of a super pod.
type SuperPodServer struct {
	ServerID string `json:"server_id"`
}

// Member is one pod of the job, in rank order, with the chips prepared for
// it.
type Member struct {
	// Pod is namespace/name, for errors.
	Pod string
	// HostIP is the node's address, PodIP the pod's.
	HostIP, PodIP string
	Chips         []Chip
}

// Chip is one prepared device of a member's claims.
type Chip struct {
	// Claim is namespace/name and Device the allocated device, for errors.
	Claim, Device string
	Data          v1alpha1.DeviceStatusData
}

// Build is the rank table of members, ranks numbered in member order and,
// within a member, by chip index, as ascend-operator numbers them
// (rank = member index × chips per member + position). One table holds
// chips of one generation: all with a super pod (1.2) or none (1.0).
func Build(members []Member) (Table, error) {
	if len(members) == 0 {
		return Table{}, errors.New("no pods: the job has none to rank")
	}
	version, err := versionOf(members)
	if err != nil {
		return Table{}, err
	}
	t := Table{Status: StatusCompleted, Version: version, ServerCount: strconv.Itoa(len(members))}
	hosts := map[string]string{}
	rank := 0
	for _, m := range members {
		if m.HostIP == "" {
			return Table{}, fmt.Errorf("pod %s: no host IP (status.hostIP): it is not on a node yet", m.Pod)
		}
		if other, ok := hosts[m.HostIP]; ok {
			return Table{}, fmt.Errorf("pods %s and %s are on one node (host IP %s): a rank table has one server per node; keep the job's pods on separate nodes (podAntiAffinity on kubernetes.io/hostname)", other, m.Pod, m.HostIP)
		}
		hosts[m.HostIP] = m.Pod
		server := Server{ServerID: m.HostIP, HostIP: m.HostIP, ContainerIP: m.PodIP}
		chips := slices.SortedFunc(slices.Values(m.Chips), func(a, b Chip) int { return cmp.Compare(index(a), index(b)) })
		for _, c := range chips {
			d, err := device(m.Pod, c, version, rank)
			if err != nil {
				return Table{}, err
			}
			server.DeviceList = append(server.DeviceList, d)
			rank++
		}
		t.ServerList = append(t.ServerList, server)
	}
	if version == Version1Dot2 {
		t.SuperPodList = superPods(members)
	}
	return t, nil
}

// versionOf is the table version of the members' chips: 1.2 where every
// chip has a super pod, 1.0 where none has; a pod without chips and a mix
// are errors.
func versionOf(members []Member) (string, error) {
	var with, without *Chip
	var withPod, withoutPod string
	for _, m := range members {
		if len(m.Chips) == 0 {
			return "", fmt.Errorf("pod %s has no prepared chip of accel-dra: every pod of the job must hold chips", m.Pod)
		}
		for i := range m.Chips {
			c := &m.Chips[i]
			switch {
			case c.Data.SuperPodID != "" && with == nil:
				with, withPod = c, m.Pod
			case c.Data.SuperPodID == "" && without == nil:
				without, withoutPod = c, m.Pod
			}
		}
	}
	switch {
	case with != nil && without != nil:
		return "", fmt.Errorf("mixed generations: pod %s has %s (%s) in super pod %s, pod %s has %s (%s) in none: one rank table holds chips of one generation",
			withPod, with.Device, with.Data.Model, with.Data.SuperPodID, withoutPod, without.Device, without.Data.Model)
	case with != nil:
		return Version1Dot2, nil
	}
	return Version1, nil
}

func index(c Chip) int {
	if c.Data.Index == nil {
		return -1
	}
	return *c.Data.Index
}

// device is the rank of chip c of pod.
func device(pod string, c Chip, version string, rank int) (Device, error) {
	what := fmt.Sprintf("pod %s, claim %s, device %s", pod, c.Claim, c.Device)
	if c.Data.Index == nil {
		return Device{}, fmt.Errorf("%s: the claim status has no index", what)
	}
	if c.Data.DeviceIP == "" {
		return Device{}, fmt.Errorf("%s: no device IP in the claim status (deviceIP): HCCL needs the address of each chip's RoCE port (hccn_tool -i %d -ip -s ...)", what, *c.Data.Index)
	}
	addr, err := address(c.Data.DeviceIP)
	if err != nil {
		return Device{}, fmt.Errorf("%s: deviceIP: %w", what, err)
	}
	d := Device{DeviceID: strconv.Itoa(*c.Data.Index), DeviceIP: addr, RankID: strconv.Itoa(rank)}
	if version == Version1Dot2 {
		if c.Data.SuperDeviceID == nil {
			return Device{}, fmt.Errorf("%s: no super device ID in the claim status (superDeviceID) of a chip in super pod %s", what, c.Data.SuperPodID)
		}
		d.SuperDeviceID = strconv.FormatInt(*c.Data.SuperDeviceID, 10)
	}
	return d, nil
}

// address is the address of an interface address in CIDR form, or of a
// bare address.
func address(s string) (string, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an address", s)
	}
	return a.String(), nil
}

// superPods groups the servers by their chips' super pod, in the order
// the super pods first appear.
func superPods(members []Member) []SuperPod {
	var out []SuperPod
	at := map[string]int{}
	for _, m := range members {
		id := m.Chips[0].Data.SuperPodID
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, SuperPod{SuperPodID: id})
		}
		out[i].ServerList = append(out[i].ServerList, SuperPodServer{ServerID: m.HostIP})
	}
	return out
}

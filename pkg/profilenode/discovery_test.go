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

package profilenode_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func discover(t *testing.T, node, name string) inventory.Inventory {
	t.Helper()
	p, err := profile.Load(registry, name)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, node, p).Discover(context.Background())
	require.NoError(t, err)
	require.NoError(t, inv.Validate())
	return inv
}

func linkGroups(inv inventory.Inventory, v inventory.Vendor) []string {
	var out []string
	for _, c := range inv.ChipsOf(v) {
		out = append(out, c.LinkGroup)
	}
	return out
}

func TestProfilesGiveTheTopologyOfTheRealServers(t *testing.T) {
	tests := []struct {
		profile string
		vendor  inventory.Vendor
		model   string
		memory  int64
		cores   int
		groups  []string
	}{
		{"atlas-800-910a", ascend.Vendor, "Ascend910A", 32 << 30, 30,
			[]string{"hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-1", "hccs-1", "hccs-1", "hccs-1"}},
		{"atlas-800t-a2", ascend.Vendor, "Ascend910B3", 64 << 30, 20,
			[]string{"hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0", "hccs-0"}},
		{"atlas-300i-duo", ascend.Vendor, "Ascend310P3", 44280 << 20, 8,
			[]string{"pcie-0", "pcie-1", "pcie-2", "pcie-3"}},
		{"mlu370-x8", cambricon.Vendor, "MLU370-X8", 23308 << 20, 16,
			[]string{"mlulink-0", "mlulink-0", "mlulink-1", "mlulink-1", "mlulink-2", "mlulink-2", "mlulink-3", "mlulink-3"}},
		{"mlu270", cambricon.Vendor, "MLU270-S4", 16 << 30, 16,
			[]string{"pcie-0", "pcie-1", "pcie-2", "pcie-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			inv := discover(t, "node-a", tt.profile)
			require.Equal(t, []inventory.Vendor{tt.vendor}, inv.Vendors())
			require.Equal(t, tt.groups, linkGroups(inv, tt.vendor))
			for i, c := range inv.Chips {
				require.Equal(t, i, c.Index)
				require.Equal(t, tt.model, c.Model)
				require.Equal(t, tt.memory, c.MemoryBytes)
				require.Equal(t, tt.cores, c.Cores)
				require.True(t, c.Healthy)
				require.NotEmpty(t, c.PCIeRoot)
				require.NotNil(t, c.NUMANode)
			}
		})
	}
}

func TestAMixedNodeNumbersEachVendorFromZero(t *testing.T) {
	inv := discover(t, "mixed", "mixed-910b-mlu370")
	npus, mlus := inv.ChipsOf(ascend.Vendor), inv.ChipsOf(cambricon.Vendor)
	require.Len(t, npus, 4)
	require.Len(t, mlus, 4)
	require.Equal(t, 0, npus[0].Index)
	require.Equal(t, 0, mlus[0].Index)
	require.Equal(t, []string{"/dev/davinci0"}, npus[0].DeviceNodes)
	require.Equal(t, []string{"/dev/cambricon_dev0", "/dev/cambricon_ipcm0"}, mlus[0].DeviceNodes)
	require.Equal(t, []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, inv.SharedDeviceNodes[ascend.Vendor])
	require.Equal(t, []string{"/dev/cambricon_ctl"}, inv.SharedDeviceNodes[cambricon.Vendor])
	require.NotEqual(t, npus[0].PCIBusID, mlus[0].PCIBusID, "bus ids must not collide across vendors")
}

func TestUUIDsAreStablePerNodeAndDifferAcrossNodes(t *testing.T) {
	a1, a2, b := discover(t, "train-0", "atlas-800-910a"), discover(t, "train-0", "atlas-800-910a"), discover(t, "train-1", "atlas-800-910a")
	seen := map[string]bool{}
	for i := range a1.Chips {
		require.Equal(t, a1.Chips[i].UUID, a2.Chips[i].UUID)
		require.NotEqual(t, a1.Chips[i].UUID, b.Chips[i].UUID)
		require.False(t, seen[a1.Chips[i].UUID], "duplicate UUID")
		seen[a1.Chips[i].UUID] = true
	}
}

func TestUnhealthyChipsOfAProfileAreReportedUnhealthy(t *testing.T) {
	p, err := profile.Load(registry, "mlu590")
	require.NoError(t, err)
	p.Chips[0].Unhealthy = []int{2, 5}
	inv, err := profilenode.New(registry, "n", p).Discover(context.Background())
	require.NoError(t, err)
	for _, c := range inv.Chips {
		require.Equal(t, c.Index != 2 && c.Index != 5, c.Healthy, "chip %d", c.Index)
	}
}

func TestABadDriverVersionNamesTheProfileField(t *testing.T) {
	p, err := profile.Load(registry, "mlu270")
	require.NoError(t, err)
	p.Chips[0].DriverVersion = "not a version"
	_, err = profilenode.New(registry, "n", p).Discover(context.Background())
	require.ErrorContains(t, err, "profile mlu270: chips[0].driverVersion")
}

func TestTrainingProfilesGiveEachNPUTheRoCEAddressOfTheProfile(t *testing.T) {
	tests := []struct {
		profile string
		vendor  inventory.Vendor
		want    []string // in index order; nil: no device IPs
	}{
		{"atlas-800-910a", ascend.Vendor, []string{
			"192.168.100.101/24", "192.168.101.101/24", "192.168.102.101/24", "192.168.103.101/24",
			"192.168.100.100/24", "192.168.101.100/24", "192.168.102.100/24", "192.168.103.100/24"}},
		{"atlas-800t-a2", ascend.Vendor, []string{
			"10.20.0.2/24", "10.20.0.3/24", "10.20.0.4/24", "10.20.0.5/24", "10.20.0.6/24", "10.20.0.7/24", "10.20.0.8/24", "10.20.0.9/24"}},
		{"mixed-910b-mlu370", ascend.Vendor, []string{"10.20.1.2/24", "10.20.1.3/24", "10.20.1.4/24", "10.20.1.5/24"}},
		{"mixed-910b-mlu370", cambricon.Vendor, nil},
		{"atlas-300i-duo", ascend.Vendor, nil},
		{"mlu590", cambricon.Vendor, nil},
	}
	for _, tt := range tests {
		t.Run(tt.profile+"/"+string(tt.vendor), func(t *testing.T) {
			var got []string
			for _, c := range discover(t, "node-a", tt.profile).ChipsOf(tt.vendor) {
				if c.DeviceIP != "" {
					got = append(got, c.DeviceIP)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestABadDeviceIPNamesTheProfileField(t *testing.T) {
	p, err := profile.Load(registry, "atlas-800t-a2")
	require.NoError(t, err)
	p.Chips[0].DeviceIPs[3] = "10.20.0.5"
	_, err = profilenode.New(registry, "n", p).Discover(context.Background())
	require.ErrorContains(t, err, "profile atlas-800t-a2: chips[0].deviceIPs[3]")
}

// A profile group with partitionModeOff simulates a node whose vendor
// partition mode is off; the bundled profiles have it on.
func TestAProfileCanSimulateThePartitionModeOff(t *testing.T) {
	for _, c := range discover(t, "node-a", "mixed-910b-mlu370").Chips {
		require.Empty(t, c.PartitionModeOff, "bundled profiles have partition mode on: %s %d", c.Vendor, c.Index)
	}
	p, err := profile.Load(registry, "atlas-800t-a2")
	require.NoError(t, err)
	p.Chips[0].PartitionModeOff = true
	inv, err := profilenode.New(registry, "node-a", p).Discover(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, inv.Chips)
	for _, c := range inv.Chips {
		require.Equal(t, "the hardware profile sets partitionModeOff", c.PartitionModeOff)
	}
}

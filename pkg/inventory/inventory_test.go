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

package inventory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

func TestReasonToolHealthIsAValidCamelCaseReason(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"Alarm", "HealthAlarm"},
		{"UNKNOWN", "HealthUnknown"},
		{"critical", "HealthCritical"},
		{" (warning) ", "HealthWarning"},
		{"Not Ready", "HealthNotready"},
		{"", "Health"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			require.Equal(t, tc.want, inventory.ReasonToolHealth(tc.value))
		})
	}
}

func TestMarkUnhealthyKeepsTheFirstReasonAndEveryCause(t *testing.T) {
	c := inventory.Chip{Healthy: true}
	require.Empty(t, c.Reasons())
	c.MarkUnhealthy(inventory.ReasonPCIDeviceMissing, "PCI function gone")
	c.MarkUnhealthy("HealthAlarm", "npu-smi reports health Alarm")
	c.MarkUnhealthy(inventory.ReasonPCIDeviceMissing, "again")
	require.False(t, c.Healthy)
	require.Equal(t, inventory.ReasonPCIDeviceMissing, c.HealthReason)
	require.Equal(t, "PCI function gone", c.HealthMessage)
	require.Equal(t, []string{inventory.ReasonPCIDeviceMissing, "HealthAlarm"}, c.Reasons(), "each reason once, in order")

	set := inventory.Chip{HealthReason: inventory.ReasonDeviceFileMissing}
	require.Equal(t, []string{inventory.ReasonDeviceFileMissing}, set.Reasons(), "a reason set without MarkUnhealthy")
}

func TestOnlyTheVendorsWarningLevelIsAWarning(t *testing.T) {
	for reason, warning := range map[string]bool{
		inventory.ReasonToolHealth("Warning"):  true,
		inventory.ReasonToolHealth("Alarm"):    false,
		inventory.ReasonToolHealth("Critical"): false,
		inventory.ReasonToolHealth("UNKNOWN"):  false,
		inventory.ReasonDriverNotRunning:       false,
		inventory.ReasonLibraryError:           false,
		inventory.ReasonSuperPodLinkAbnormal:   false,
	} {
		require.Equal(t, warning, inventory.Warning(reason), reason)
	}
}

func TestValidateAcceptsADeviceIPOnlyWithItsPrefixLength(t *testing.T) {
	tests := []struct {
		name, deviceIP, want string
	}{
		{name: "no device IP", deviceIP: ""},
		{name: "IPv4 interface address", deviceIP: "192.168.100.101/24"},
		{name: "IPv6 interface address", deviceIP: "fd00:10::2/64"},
		{name: "a bare address has lost its netmask", deviceIP: "192.168.100.101",
			want: `huawei chip 0: device IP "192.168.100.101" is not an address with prefix length (e.g. 192.168.100.101/24)`},
		{name: "not an address", deviceIP: "eth0/24", want: `huawei chip 0: device IP "eth0/24"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := inventory.Inventory{Chips: []inventory.Chip{{Vendor: ascend.Vendor, Model: "Ascend910B3",
				LinkType: inventory.LinkHCCS, LinkGroup: "hccs-0", DeviceIP: tt.deviceIP}}}
			err := inv.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

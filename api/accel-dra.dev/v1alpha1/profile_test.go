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

package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// profileVendors are the two real vendors as the registry lists them
// (vendors.Registry.ProfileVendors).
var profileVendors = []v1alpha1.ProfileVendor{{Vendor: "huawei", LinkType: "hccs"}, {Vendor: "cambricon", LinkType: "mlulink"}}

func TestDeviceIPsOfAProfileAreOneInterfaceAddressPerNPU(t *testing.T) {
	const head = "apiVersion: accel-dra.dev/v1alpha1\nkind: HardwareProfile\nname: lab\nchips:\n"
	const npus = "- {vendor: huawei, model: Ascend910B3, count: 2, memory: 64Gi, cores: 20, linkType: hccs, linkGroupSize: 2, driverVersion: 24.1.0"
	tests := []struct {
		name, chips, want string
	}{
		{name: "a profile without device IPs still parses",
			chips: npus + "}\n"},
		{name: "IPv4 and IPv6 interface addresses",
			chips: npus + ", deviceIPs: [10.20.0.2/24, 'fd00::3/64']}\n"},
		{name: "one address per chip",
			chips: npus + ", deviceIPs: [10.20.0.2/24]}\n",
			want:  `chips[0].deviceIPs: 1 addresses for 2 chips, want one per chip`},
		{name: "an address without its netmask",
			chips: npus + ", deviceIPs: [10.20.0.2/24, 10.20.0.3]}\n",
			want:  `chips[0].deviceIPs[1]: "10.20.0.3" is not an address with prefix length (e.g. 192.168.100.101/24)`},
		{name: "the same address twice in the profile",
			chips: npus + ", deviceIPs: [10.20.0.2/24, 10.20.0.3/24]}\n" + npus + ", deviceIPs: [10.20.0.4/24, 10.20.0.3/24]}\n",
			want:  `chips[1].deviceIPs[1]: address 10.20.0.3 is also chips[0].deviceIPs[1]`},
		{name: "Cambricon chips have none",
			chips: "- {vendor: cambricon, model: MLU370-X8, count: 1, memory: 24Gi, cores: 16, linkType: pcie, driverVersion: 5.10.22, deviceIPs: [10.20.0.2/24]}\n",
			want:  `chips[0].deviceIPs: cambricon chips have no device IP`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v1alpha1.ParseHardwareProfile("lab.yaml", []byte(head+tt.chips), profileVendors)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, `lab.yaml: HardwareProfile "lab": `+tt.want)
		})
	}
}

// The vendors a profile may name, and their link types, are the ones it is
// given: the API package names none.
func TestAProfilesVendorsAndLinkTypesAreTheGivenOnes(t *testing.T) {
	const head = "apiVersion: accel-dra.dev/v1alpha1\nkind: HardwareProfile\nname: lab\nchips:\n"
	tests := []struct {
		name, chips, want string
	}{
		{name: "a vendor's own link type",
			chips: "- {vendor: cambricon, model: MLU370-X8, count: 2, memory: 24Gi, cores: 16, linkType: mlulink, linkGroupSize: 2, driverVersion: 5.10.22}\n"},
		{name: "a vendor not given",
			chips: "- {vendor: acme, model: ACME-1, count: 1, memory: 16Gi, cores: 8, linkType: pcie, driverVersion: 1.2.3}\n",
			want:  `chips[0].vendor: "acme" is not one of huawei, cambricon`},
		{name: "another vendor's link type",
			chips: "- {vendor: cambricon, model: MLU370-X8, count: 2, memory: 24Gi, cores: 16, linkType: hccs, linkGroupSize: 2, driverVersion: 5.10.22}\n",
			want:  `chips[0].linkType: cambricon chips have no hccs links`},
		{name: "a link type of no vendor",
			chips: "- {vendor: huawei, model: Ascend910B3, count: 2, memory: 64Gi, cores: 20, linkType: nvlink, linkGroupSize: 2, driverVersion: 24.1.0}\n",
			want:  `chips[0].linkType: "nvlink" is not one of hccs, mlulink, pcie`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v1alpha1.ParseHardwareProfile("lab.yaml", []byte(head+tt.chips), profileVendors)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, `lab.yaml: HardwareProfile "lab": `+tt.want)
		})
	}
}

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
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

func TestDeviceStatusDataHasTheContractKeysAndWritesChipZero(t *testing.T) {
	tests := []struct {
		name string
		data v1alpha1.DeviceStatusData
		want string
	}{
		{name: "a whole Ascend chip with its RoCE address",
			data: v1alpha1.DeviceStatusData{UUID: "u-0", Model: "Ascend910B3", Index: ptr.To(0), PCIBusID: "0000:c1:00.0",
				DriverVersion: "24.1.0", DeviceIP: "10.20.0.2/24"},
			want: `{"uuid":"u-0","model":"Ascend910B3","index":0,"pciBusID":"0000:c1:00.0","driverVersion":"24.1.0","deviceIP":"10.20.0.2/24"}`},
		{name: "a partition names its template and instance, instance 0 included",
			data: v1alpha1.DeviceStatusData{UUID: "u-3", Model: "Ascend910B3", Index: ptr.To(3), Template: "vir05_1c_16g", InstanceID: ptr.To(0)},
			want: `{"uuid":"u-3","model":"Ascend910B3","index":3,"template":"vir05_1c_16g","instanceID":0}`},
		{name: "nothing known is an empty object, still valid status data",
			want: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.data)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(raw))

			var back v1alpha1.DeviceStatusData
			require.NoError(t, json.Unmarshal(raw, &back))
			require.Equal(t, tt.data, back, "a launcher reads back what the driver wrote")
		})
	}
}

func TestAttributesGiveTheSameFactsUnderTheSameKeys(t *testing.T) {
	tests := []struct {
		name string
		data v1alpha1.DeviceStatusData
		want map[string]resourceapi.DeviceAttribute
	}{
		{name: "every field",
			data: v1alpha1.DeviceStatusData{UUID: "u-1", Model: "Ascend910B3", Index: ptr.To(1), PCIBusID: "0000:c2:00.0",
				DriverVersion: "24.1.0-rc2+b030", Template: "vir10_3c_32g", InstanceID: ptr.To(101), DeviceIP: "10.20.0.3/24"},
			want: map[string]resourceapi.DeviceAttribute{
				"uuid":          {StringValue: ptr.To("u-1")},
				"model":         {StringValue: ptr.To("Ascend910B3")},
				"index":         {IntValue: ptr.To[int64](1)},
				"pciBusID":      {StringValue: ptr.To("0000:c2:00.0")},
				"driverVersion": {VersionValue: ptr.To("24.1.0-rc2+b030")},
				"template":      {StringValue: ptr.To("vir10_3c_32g")},
				"instanceID":    {IntValue: ptr.To[int64](101)},
				"deviceIP":      {StringValue: ptr.To("10.20.0.3/24")},
			}},
		{name: "a super pod chip's place in its super pod, SDID 0 included",
			data: v1alpha1.DeviceStatusData{DeviceIP: "10.20.0.3/24", SuperPodID: "1", SuperDeviceID: ptr.To[int64](0), ServerIndex: ptr.To[int64](2)},
			want: map[string]resourceapi.DeviceAttribute{
				"deviceIP":      {StringValue: ptr.To("10.20.0.3/24")},
				"superPodID":    {StringValue: ptr.To("1")},
				"superDeviceID": {IntValue: ptr.To[int64](0)},
				"serverIndex":   {IntValue: ptr.To[int64](2)},
			}},
		{name: "index 0 is an attribute, empty fields are none",
			data: v1alpha1.DeviceStatusData{Model: "MLU370-X8", Index: ptr.To(0)},
			want: map[string]resourceapi.DeviceAttribute{
				"model": {StringValue: ptr.To("MLU370-X8")},
				"index": {IntValue: ptr.To[int64](0)},
			}},
		{name: "a driver version that is not semver is a string",
			data: v1alpha1.DeviceStatusData{DriverVersion: "23.0.rc3"},
			want: map[string]resourceapi.DeviceAttribute{"driverVersion": {StringValue: ptr.To("23.0.rc3")}}},
		{name: "a leading zero is not semver",
			data: v1alpha1.DeviceStatusData{DriverVersion: "5.010.22"},
			want: map[string]resourceapi.DeviceAttribute{"driverVersion": {StringValue: ptr.To("5.010.22")}}},
		{name: "nothing known gives no attributes",
			want: map[string]resourceapi.DeviceAttribute{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.data.Attributes())
		})
	}
}

func TestNetworkDataIsTheDeviceIPInTheCanonicalCIDRFormTheAPIServerAccepts(t *testing.T) {
	tests := []struct {
		name, deviceIP string
		want           []string // nil: no networkData
	}{
		{name: "an IPv4 interface address", deviceIP: "192.168.100.101/24", want: []string{"192.168.100.101/24"}},
		{name: "an IPv6 interface address is shortened", deviceIP: "2001:0db8:0:0::5/64", want: []string{"2001:db8::5/64"}},
		{name: "an IPv4-mapped address is written as IPv4", deviceIP: "::ffff:10.20.0.2/120", want: []string{"10.20.0.2/24"}},
		{name: "a bare address gets the host prefix", deviceIP: "10.20.0.2", want: []string{"10.20.0.2/32"}},
		{name: "a bare IPv6 address gets the host prefix", deviceIP: "fd00::2", want: []string{"fd00::2/128"}},
		{name: "no device IP", deviceIP: ""},
		{name: "not an address", deviceIP: "npu-0"},
		{name: "a zone cannot be sent", deviceIP: "fe80::1%eth0"},
		{name: "a prefix longer than the address", deviceIP: "10.0.0.1/33"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := v1alpha1.DeviceStatusData{DeviceIP: tt.deviceIP}.NetworkData()
			if tt.want == nil {
				require.Nil(t, nd)
				return
			}
			require.Equal(t, &resourceapi.NetworkDeviceData{IPs: tt.want}, nd)
			for _, ip := range nd.IPs {
				// The same check as the API server's validation of
				// status.devices[].networkData.ips.
				require.Empty(t, validation.IsValidInterfaceAddress(field.NewPath("ips"), ip))
			}
		})
	}
}

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

package v1alpha1

import (
	"fmt"
	"net/netip"
	"regexp"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// DeviceStatusData is the `data` of each of our entries in a
// ResourceClaim's status.devices[] (resourceapi.AllocatedDeviceStatus),
// written by the node agent once it has prepared the claim. Launchers read
// it to learn which chip a container got, e.g. to write an HCCL rank table:
//
//	var d v1alpha1.DeviceStatusData
//	err := json.Unmarshal(claim.Status.Devices[i].Data.Raw, &d)
//
// The same facts, under the same keys, are the device's attributes in the
// device metadata file (see Attributes). Fields the node does not know are
// left out; more fields may be added, so decode leniently.
type DeviceStatusData struct {
	// UUID is the stable serial number or UUID of the chip.
	UUID string `json:"uuid,omitempty"`
	// Model is the chip's model, e.g. Ascend910B3, MLU370-X8.
	Model string `json:"model,omitempty"`
	// Index is the physical index of the chip on the node, the N of
	// /dev/davinciN or /dev/cambricon_devN. A pointer so that chip 0 is
	// written.
	Index *int `json:"index,omitempty"`
	// PCIBusID is the chip's extended BDF address, e.g. 0000:c1:00.0.
	PCIBusID string `json:"pciBusID,omitempty"`
	// DriverVersion is the vendor driver's version, in semver form where
	// it has one (e.g. 24.1.0-rc2).
	DriverVersion string `json:"driverVersion,omitempty"`
	// Template is the partition template of a partition device, e.g.
	// vir05_1c_16g (Ascend vNPU) or the sMLU profile; empty for a whole
	// or shared chip.
	Template string `json:"template,omitempty"`
	// InstanceID is the vendor's id of the partition (the vNPU id, the
	// sMLU instance id); nil for a whole or shared chip.
	InstanceID *int `json:"instanceID,omitempty"`
	// DeviceIP is the address of the chip's own RoCE port (Ascend), in
	// the CIDR form of an interface address: address and prefix length,
	// e.g. 192.168.100.101/24, the address and netmask that
	// `hccn_tool -i N -ip -g` prints. The address alone is what an HCCL
	// rank table calls device_ip (netip.ParsePrefix(d.DeviceIP) and
	// .Addr()). The same value is the entry's networkData.ips[0].
	DeviceIP string `json:"deviceIP,omitempty"`
	// SuperPodID is the super pod the chip is in (Atlas A3 and later, the
	// accel-dra.dev/superPod attribute); what an HCCL rank table v1.2
	// calls super_pod_id.
	SuperPodID string `json:"superPodID,omitempty"`
	// SuperDeviceID is the chip's SDID within its super pod (the
	// accel-dra.dev/superDeviceID attribute), an HCCL rank table's
	// super_device_id.
	SuperDeviceID *int64 `json:"superDeviceID,omitempty"`
	// ServerIndex is the index of the chip's server in its super pod (the
	// accel-dra.dev/serverIndex attribute).
	ServerIndex *int64 `json:"serverIndex,omitempty"`
}

// Keys of DeviceStatusData in JSON and as device attributes (unqualified,
// so in the driver's own domain in the metadata file).
const (
	StatusKeyUUID          = "uuid"
	StatusKeyModel         = "model"
	StatusKeyIndex         = "index"
	StatusKeyPCIBusID      = "pciBusID"
	StatusKeyDriverVersion = "driverVersion"
	StatusKeyTemplate      = "template"
	StatusKeyInstanceID    = "instanceID"
	StatusKeyDeviceIP      = "deviceIP"
	StatusKeySuperPodID    = "superPodID"
	StatusKeySuperDeviceID = "superDeviceID"
	StatusKeyServerIndex   = "serverIndex"
)

// Attributes returns the same facts as device attributes, keyed as in
// JSON, in the form of kubeletplugin.DeviceMetadata.Attributes (the device
// metadata file of KEP-5304). Empty fields are left out. driverVersion is a
// version attribute when it is semver as the API server accepts it in a
// ResourceSlice, else a string, so a CEL-style consumer can compare it.
func (d DeviceStatusData) Attributes() map[string]resourceapi.DeviceAttribute {
	attrs := map[string]resourceapi.DeviceAttribute{}
	str := func(key, value string) {
		if value != "" {
			attrs[key] = resourceapi.DeviceAttribute{StringValue: ptr.To(value)}
		}
	}
	num := func(key string, value *int) {
		if value != nil {
			attrs[key] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*value))}
		}
	}
	str(StatusKeyUUID, d.UUID)
	str(StatusKeyModel, d.Model)
	num(StatusKeyIndex, d.Index)
	str(StatusKeyPCIBusID, d.PCIBusID)
	if d.DriverVersion != "" {
		if isSemver(d.DriverVersion) {
			attrs[StatusKeyDriverVersion] = resourceapi.DeviceAttribute{VersionValue: ptr.To(d.DriverVersion)}
		} else {
			str(StatusKeyDriverVersion, d.DriverVersion)
		}
	}
	str(StatusKeyTemplate, d.Template)
	num(StatusKeyInstanceID, d.InstanceID)
	str(StatusKeyDeviceIP, d.DeviceIP)
	str(StatusKeySuperPodID, d.SuperPodID)
	for key, value := range map[string]*int64{StatusKeySuperDeviceID: d.SuperDeviceID, StatusKeyServerIndex: d.ServerIndex} {
		if value != nil {
			attrs[key] = resourceapi.DeviceAttribute{IntValue: ptr.To(*value)}
		}
	}
	return attrs
}

// NetworkData returns DeviceIP as the entry's networkData: ips holds it in
// the canonical CIDR form the API server requires ("192.168.100.101/24";
// validation of status.devices[].networkData.ips rejects a bare address or
// a non-canonical spelling). A DeviceIP without a prefix length gets the
// host prefix (/32, /128): the subnet is unknown then. Nil when there is
// no DeviceIP or it is not an address, so one bad value cannot fail the
// whole status write.
func (d DeviceStatusData) NetworkData() *resourceapi.NetworkDeviceData {
	ip, ok := CanonicalInterfaceAddress(d.DeviceIP)
	if !ok {
		return nil
	}
	return &resourceapi.NetworkDeviceData{IPs: []string{ip}}
}

// CanonicalInterfaceAddress returns s, an interface address in CIDR form
// ("192.168.100.101/24") or a bare address, in the canonical CIDR form of
// k8s.io/apimachinery's IsValidInterfaceAddress: address (not masked)
// as net.IP prints it, then the prefix length. ok is false if s is empty or
// neither form.
func CanonicalInterfaceAddress(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	var addr netip.Addr
	var bits int
	if p, err := netip.ParsePrefix(s); err == nil {
		addr, bits = p.Addr(), p.Bits()
	} else if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		addr, bits = a, a.BitLen()
	} else {
		return "", false
	}
	// net.IP prints an IPv4-mapped IPv6 address as IPv4; so does the API
	// server's canonical form, with the prefix counted in IPv4 bits.
	if addr.Is4In6() {
		if bits < 96 {
			return "", false
		}
		addr, bits = addr.Unmap(), bits-96
	}
	return fmt.Sprintf("%s/%d", addr, bits), true
}

// semverRe is the API server's check of a version attribute
// (k8s.io/kubernetes pkg/apis/resource/validation, semver.org 2.0.0).
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// isSemver says whether s is a version the API server accepts as a version
// attribute (semver 2.0.0, at most 64 characters).
func isSemver(s string) bool {
	return len(s) <= resourceapi.DeviceAttributeMaxValueLength && semverRe.MatchString(s)
}

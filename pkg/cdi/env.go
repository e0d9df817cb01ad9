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

package cdi

import (
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Environment variables the driver sets in every container that gets a
// claim's devices. The vendors' own variables (visible devices, runtime
// options) are theirs: vendors.CDIEdits.
const (
	// EnvDriver is the DRA driver that prepared the claim.
	EnvDriver = "DRA_DRIVER"
	// EnvClaimUID is the ResourceClaim's UID.
	EnvClaimUID = "DRA_CLAIM_UID"
	// EnvClaim is the ResourceClaim as namespace/name.
	EnvClaim = "DRA_CLAIM"
	// EnvDevicePrefix starts the per-device variables
	// DRA_DEVICE_<NAME>_DRIVER, _CLAIM_UID, _UUID and _MODEL, where <NAME> is
	// the DRA device name upper-cased with non-alphanumerics as "_"
	// (npu-3 → DRA_DEVICE_NPU_3_UUID).
	EnvDevicePrefix = "DRA_DEVICE_"
	// EnvAdminAccess is "true" in a container whose claim has only
	// admin-access devices of the driver (a monitoring or debugging pod):
	// it sees chips other claims use, and must not use them for work.
	// Mixed claims have DRA_DEVICE_<NAME>_ADMIN_ACCESS per device instead.
	EnvAdminAccess = "DRA_ADMIN_ACCESS"
	// Every variable above starts with v1alpha1.ReservedEnvPrefix: user
	// configuration may set none of them, now or when more are added
	// (v1alpha1.ValidateEnv).

	// Suffixes of the per-device variables DRA_DEVICE_<NAME>_<SUFFIX> the
	// driver sets for partitions, shares and admin access (never for a whole
	// chip a claim holds):
	//   - PARTITION: the vendor template or sMLU profile (vir04, 25p.5827mb);
	//   - MEMORY: bytes of device memory of the partition or share;
	//   - CORES: AI cores / MLU cores of the partition, or the cores the
	//     share reserved (0: none reserved, time-shared);
	//   - SHARE_ID: the allocation's shareID, one per claim on a shared chip;
	//   - ADMIN_ACCESS: "true" on a device allocated with admin access.
	EnvSuffixAdminAccess = "ADMIN_ACCESS"
	EnvSuffixPartition   = "PARTITION"
	EnvSuffixMemory      = "MEMORY"
	EnvSuffixCores       = "CORES"
	EnvSuffixShareID     = "SHARE_ID"
)

// vendorEdits is what a vendor's own container runtime or device plugin
// puts into a container, which our CDI specs reproduce, with the names the
// specs carry.
type vendorEdits struct {
	vendors.CDIEdits
	// kind is the CDI vendor/class of the vendor's specs.
	kind string
	// driver is the DRA driver name of the vendor.
	driver string
}

// editsOf returns the CDI edits of vendor v.
func editsOf(v vendors.Vendor) vendorEdits {
	return vendorEdits{CDIEdits: v.CDI(), kind: v.Names().CDIKind, driver: v.Names().Driver}
}

// mountOptions make a read-only bind mount that cannot smuggle in setuid
// binaries or device files; rprivate keeps host mount events out. The
// same options as the NVIDIA container toolkit's CDI specs use.
var mountOptions = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}

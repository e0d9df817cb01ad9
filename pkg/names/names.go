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

// Package names holds the names users type that every vendor shares, fixed
// by docs/architecture.md: the attribute domain and its keys. A vendor's own names
// (driver, CDI kind, --vendors option, device prefix) are its package's,
// reached through pkg/vendors.
package names

import (
	resourceapi "k8s.io/api/resource/v1"
)

// Domain is the shared attribute domain, the same on every driver so one
// CEL expression works across vendors.
const Domain = "accel-dra.dev"

// Shared attribute and capacity keys, fully qualified.
const (
	AttrVendor        resourceapi.QualifiedName = Domain + "/vendor"
	AttrFamily        resourceapi.QualifiedName = Domain + "/family"
	AttrModel         resourceapi.QualifiedName = Domain + "/model"
	AttrType          resourceapi.QualifiedName = Domain + "/type"
	AttrIndex         resourceapi.QualifiedName = Domain + "/index"
	AttrUUID          resourceapi.QualifiedName = Domain + "/uuid"
	AttrLinkGroup     resourceapi.QualifiedName = Domain + "/linkGroup"
	AttrLinkType      resourceapi.QualifiedName = Domain + "/linkType"
	AttrNUMANode      resourceapi.QualifiedName = Domain + "/numaNode"
	AttrDriverVersion resourceapi.QualifiedName = Domain + "/driverVersion"
	AttrHealthy       resourceapi.QualifiedName = Domain + "/healthy"

	// The fabric attributes, published only where the value is known.
	AttrSuperPod      resourceapi.QualifiedName = Domain + "/superPod"
	AttrSuperDeviceID resourceapi.QualifiedName = Domain + "/superDeviceID"
	AttrServerIndex   resourceapi.QualifiedName = Domain + "/serverIndex"
	AttrModule        resourceapi.QualifiedName = Domain + "/module"

	CapMemory resourceapi.QualifiedName = Domain + "/memory"
	CapCores  resourceapi.QualifiedName = Domain + "/cores"
	// CapShareUnits is the capacity of a Shared chip whose driver carves
	// only fixed templates (vendors.UnitGrid): a share asks for a number
	// of template units, its cores and memory follow from it.
	CapShareUnits resourceapi.QualifiedName = Domain + "/shareUnits"

	// TypeChip is the accel-dra.dev/type of a whole chip.
	TypeChip = "chip"

	// Device taint keys, one per cause of an unhealthy chip, as NVIDIA's
	// DRA driver has one per health dimension (gpu.nvidia.com/xid,
	// gpu-lost). The value is the chip's health reason
	// (inventory.Reason*); the effect is None for a warning-level state,
	// else the agent's --unhealthy-taint-effect (pkg/resourceslices
	// Taints). docs/health-metrics.md lists the vendor codes behind each.

	// TaintHealth: the vendor's tool or library grades the chip's health
	// (npu-smi/DCMI Warning, Alarm, Critical, UNKNOWN; cnmon/CNDev device
	// health "In problem").
	TaintHealth = Domain + "/health"
	// TaintDriverNotRunning: the vendor driver does not run for the chip.
	TaintDriverNotRunning = Domain + "/driver-not-running"
	// TaintDeviceFileMissing: the chip's device file is gone.
	TaintDeviceFileMissing = Domain + "/device-file-missing"
	// TaintPCIDeviceMissing: the chip's PCI function is gone from sysfs.
	TaintPCIDeviceMissing = Domain + "/pci-device-missing"
	// TaintLibraryError: a call of the vendor's library failed for the
	// chip alone.
	TaintLibraryError = Domain + "/library-error"
	// TaintSuperPodLink: the super pod's fabric reports the chip abnormal
	// (DCMI's SPOD_NODE_STATUS of the chip's own SDID is 1), so its peers
	// release what they share with it. The node's super pod label stays:
	// label churn would rebuild every engine's topology.
	TaintSuperPodLink = Domain + "/superpod-link"
	// TaintUnhealthy: any other cause (a simulated profile's unhealthy
	// chip, a reason without a key of its own).
	TaintUnhealthy = Domain + "/unhealthy"
)

// Package names holds the names users type, fixed by docs/architecture.md: driver
// names, the shared attribute domain and its keys, CDI kinds.
package names

import (
	resourceapi "k8s.io/api/resource/v1"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

const (
	AscendDriver    = "ascend.accel-dra.dev"
	CambriconDriver = "cambricon.accel-dra.dev"

	// Domain is the shared attribute domain, the same on both drivers so
	// one CEL expression works across vendors.
	Domain = "accel-dra.dev"

	AscendCDIKind    = "accel-dra.dev/ascend"
	CambriconCDIKind = "accel-dra.dev/cambricon"
)

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

	CapMemory resourceapi.QualifiedName = Domain + "/memory"
	CapCores  resourceapi.QualifiedName = Domain + "/cores"

	// TypeChip is the accel-dra.dev/type of a whole chip.
	TypeChip = "chip"

	// TaintUnhealthy is put on devices whose chip reports bad health, so
	// the scheduler does not hand them out.
	TaintUnhealthy = Domain + "/unhealthy"
)

// DriverFor returns the DRA driver name serving a vendor's chips.
func DriverFor(v inventory.Vendor) string {
	switch v {
	case inventory.VendorHuawei:
		return AscendDriver
	case inventory.VendorCambricon:
		return CambriconDriver
	}
	return ""
}

// VendorFor is the inverse of DriverFor.
func VendorFor(driver string) inventory.Vendor {
	switch driver {
	case AscendDriver:
		return inventory.VendorHuawei
	case CambriconDriver:
		return inventory.VendorCambricon
	}
	return ""
}

// DevicePrefix is the device name prefix of a vendor: npu-N, mlu-N.
func DevicePrefix(v inventory.Vendor) string {
	if v == inventory.VendorCambricon {
		return "mlu"
	}
	return "npu"
}

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

	CapMemory resourceapi.QualifiedName = Domain + "/memory"
	CapCores  resourceapi.QualifiedName = Domain + "/cores"

	// TypeChip is the accel-dra.dev/type of a whole chip.
	TypeChip = "chip"

	// TaintUnhealthy is put on devices whose chip reports bad health, so
	// the scheduler does not hand them out.
	TaintUnhealthy = Domain + "/unhealthy"
)

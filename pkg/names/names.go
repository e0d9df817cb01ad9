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

	CapMemory resourceapi.QualifiedName = Domain + "/memory"
	CapCores  resourceapi.QualifiedName = Domain + "/cores"

	// TypeChip is the accel-dra.dev/type of a whole chip.
	TypeChip = "chip"

	// TaintUnhealthy is put on devices whose chip reports bad health, so
	// the scheduler does not hand them out.
	TaintUnhealthy = Domain + "/unhealthy"
)

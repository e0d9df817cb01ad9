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
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SchemeGroupVersion is GroupVersion as a schema.GroupVersion.
var SchemeGroupVersion = schema.GroupVersion{Group: "accel-dra.dev", Version: "v1alpha1"}

// DeviceConfig is the opaque config of every driver of ours, in a
// DeviceClass's or ResourceClaim's spec.devices.config[].opaque.parameters.
// Its kind is the one the driver's vendor declares (pkg/vendors
// Names.ConfigKind): AscendConfig for ascend.accel-dra.dev,
// CambriconConfig for cambricon.accel-dra.dev. The kinds share this one
// type: they differ only so a config says which driver it was written for.
//
//	apiVersion: accel-dra.dev/v1alpha1
//	kind: AscendConfig
//	env:
//	  HCCL_CONNECT_TIMEOUT: "1200"
//	sharing:
//	  strategy: Exclusive
//
// Every field is optional; a ConfigDecoder fills in the defaults (see
// Default) and rejects unknown fields.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type DeviceConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Env adds environment variables to every container that uses the
	// devices the config applies to. The driver's visible-devices
	// variable (ASCEND_VISIBLE_DEVICES, CAMBRICON_VISIBLE_DEVICES, …) and
	// DRA_* are set by the driver and may not be set here.
	Env map[string]string `json:"env,omitempty"`
	// Sharing says whether the devices may be shares of a chip that other
	// claims use at the same time. Default: strategy Shared.
	Sharing *Sharing `json:"sharing,omitempty"`
	// Enforced, in a DeviceClass's config, makes what it sets final for
	// every claim of the class: a claim's config may not set one of its
	// env variables to another value (preparing the claim fails, naming
	// the variable), and sharing.strategy Exclusive stays Exclusive
	// whatever a claim's config says (a claim may always ask for
	// Exclusive). A claim's own config cannot be enforced.
	Enforced bool `json:"enforced,omitempty"`
}

// SharingStrategy is the value of sharing.strategy.
type SharingStrategy string

const (
	// SharingShared accepts a share of a chip that its node publishes as
	// shared (a device with allowMultipleAllocations: the scheduler gives
	// each claim the memory and cores it requests under
	// spec.devices.requests[].exactly.capacity). The plugin passes the
	// share to the container as DRA_DEVICE_<NAME>_MEMORY (bytes) and
	// DRA_DEVICE_<NAME>_CORES. The share is a scheduling reservation, not
	// an isolation boundary: see pkg/driver's package documentation.
	// Whole chips and partitions are not affected. This is the default.
	SharingShared SharingStrategy = "Shared"
	// SharingExclusive requires every device of the claim to be the
	// claim's alone: a whole chip or a partition (vNPU, sMLU). If the
	// scheduler gives the claim only a share of a shared chip (less than
	// all of its memory), preparing the claim fails with an error naming
	// sharing.strategy, so a workload that must not run beside others
	// never does. To keep such claims off shared chips at scheduling
	// time, also select `!device.allowMultipleAllocations`.
	SharingExclusive SharingStrategy = "Exclusive"
)

// SharingStrategies lists the valid strategies, for messages.
var SharingStrategies = []SharingStrategy{SharingExclusive, SharingShared}

// Sharing configures how a claim may share chips with other claims.
type Sharing struct {
	// Strategy is Exclusive or Shared (default).
	Strategy SharingStrategy `json:"strategy,omitempty"`
}

// Default fills in the defaults of unset fields: sharing.strategy Shared,
// and "env: {}" becomes no env, so a decoded config encodes (env is
// omitempty) and decodes to itself. A ConfigDecoder calls it before
// validating.
func (c *DeviceConfig) Default() {
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if c.Sharing == nil {
		c.Sharing = &Sharing{}
	}
	if c.Sharing.Strategy == "" {
		c.Sharing.Strategy = SharingShared
	}
}

// SharingStrategy is sharing.strategy, Shared where it is not set.
func (c *DeviceConfig) SharingStrategy() SharingStrategy {
	if c.Sharing == nil || c.Sharing.Strategy == "" {
		return SharingShared
	}
	return c.Sharing.Strategy
}

// validate checks the fields, own being the visible-devices variable of
// the config's driver and reserved that of every driver. Errors name the
// field and, for enums, the allowed values.
func (c *DeviceConfig) validate(own string, reserved []string) field.ErrorList {
	return append(ValidateEnv(own, reserved, c.Env), validateSharing(c.Sharing)...)
}

func validateSharing(s *Sharing) field.ErrorList {
	if s == nil {
		return nil
	}
	switch s.Strategy {
	case "", SharingShared, SharingExclusive:
		return nil
	}
	return field.ErrorList{field.NotSupported(field.NewPath("sharing", "strategy"), s.Strategy, SharingStrategies)}
}

// ReservedEnvPrefix starts the variables the driver sets in every
// container of a claim (DRA_DRIVER, DRA_DEVICE_<NAME>_UUID, ...):
// configuration may set none of them, now or when more are added.
const ReservedEnvPrefix = "DRA_"

// ValidateEnv checks the variables an opaque config sets in a claim's
// containers (its env field): own is the visible-devices variable of the
// config's driver, reserved that of every driver the node may serve (a
// container can hold devices of several). It is the one check of the
// config decoder (so the admission webhook, at apply) and of the CDI
// writer (at prepare, with vendors.Registry.ReservedEnv worked out once at
// start), so a config
// the node agent would refuse is refused when it is applied. Errors are
// under the path "env", in key order.
func ValidateEnv(own string, reserved []string, env map[string]string) field.ErrorList {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		p := field.NewPath("env").Key(k)
		for _, msg := range validation.IsEnvVarName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		// The driver sets them; a config must not change them, or a
		// container could claim to see chips it was not given, or name
		// chips a vendor runtime still on the node would inject.
		switch {
		case k == own || strings.HasPrefix(k, ReservedEnvPrefix):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s and %s* are set by the driver to the allocated devices", own, ReservedEnvPrefix)))
		case slices.Contains(reserved, k):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s is set by its vendor's driver to the allocated devices of a container that has any", k)))
		}
		// A process environment is NUL-terminated strings: the runtime
		// would fail the container, long after the apply.
		if strings.ContainsRune(env[k], 0) {
			errs = append(errs, field.Invalid(p, env[k], "must not contain a NUL byte"))
		}
	}
	return errs
}

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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// Kinds of the opaque device configs, one per driver.
const (
	AscendConfigKind    = "AscendConfig"
	CambriconConfigKind = "CambriconConfig"
)

// SchemeGroupVersion is GroupVersion as a schema.GroupVersion.
var SchemeGroupVersion = schema.GroupVersion{Group: "accel-dra.dev", Version: "v1alpha1"}

// AscendConfig is the opaque config of the ascend.accel-dra.dev driver, in
// a DeviceClass's or ResourceClaim's spec.devices.config[].opaque.parameters:
//
//	apiVersion: accel-dra.dev/v1alpha1
//	kind: AscendConfig
//	env:
//	  HCCL_CONNECT_TIMEOUT: "1200"
//	sharing:
//	  strategy: Exclusive
//
// Every field is optional; DecodeConfig fills in the defaults (see
// Default) and rejects unknown fields.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type AscendConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Env adds environment variables to every container that uses the
	// devices the config applies to. ASCEND_VISIBLE_DEVICES and DRA_* are
	// set by the driver and may not be set here.
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

// CambriconConfig is the opaque config of the cambricon.accel-dra.dev
// driver; the same fields as AscendConfig, with CAMBRICON_VISIBLE_DEVICES
// reserved instead of ASCEND_VISIBLE_DEVICES.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CambriconConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Env adds environment variables to every container that uses the
	// devices the config applies to. CAMBRICON_VISIBLE_DEVICES and DRA_*
	// are set by the driver and may not be set here.
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

// DeviceConfig is what both config kinds have in common; the plugin works
// on it after decoding.
type DeviceConfig interface {
	runtime.Object
	EnvVars() map[string]string
	Validate() error
	// Default fills in the defaults of unset fields; DecodeConfig calls it
	// before Validate.
	Default()
	// SharingStrategy is sharing.strategy, after defaulting.
	SharingStrategy() SharingStrategy
	// IsEnforced is the enforced field: what the config sets is final
	// for claims (a DeviceClass's config only).
	IsEnforced() bool
}

// IsEnforced implements DeviceConfig.
func (c *AscendConfig) IsEnforced() bool { return c.Enforced }

// IsEnforced implements DeviceConfig.
func (c *CambriconConfig) IsEnforced() bool { return c.Enforced }

// EnvVars implements DeviceConfig.
func (c *AscendConfig) EnvVars() map[string]string { return c.Env }

// EnvVars implements DeviceConfig.
func (c *CambriconConfig) EnvVars() map[string]string { return c.Env }

// Default implements DeviceConfig: sharing.strategy defaults to Shared.
func (c *AscendConfig) Default() { c.Env, c.Sharing = defaultEnv(c.Env), defaultSharing(c.Sharing) }

// Default implements DeviceConfig: sharing.strategy defaults to Shared.
func (c *CambriconConfig) Default() { c.Env, c.Sharing = defaultEnv(c.Env), defaultSharing(c.Sharing) }

// defaultEnv makes "env: {}" the same as no env, so a decoded config
// encodes (env is omitempty) and decodes to itself.
func defaultEnv(env map[string]string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	return env
}

// SharingStrategy implements DeviceConfig.
func (c *AscendConfig) SharingStrategy() SharingStrategy { return strategyOf(c.Sharing) }

// SharingStrategy implements DeviceConfig.
func (c *CambriconConfig) SharingStrategy() SharingStrategy { return strategyOf(c.Sharing) }

func defaultSharing(s *Sharing) *Sharing {
	if s == nil {
		s = &Sharing{}
	}
	if s.Strategy == "" {
		s.Strategy = SharingShared
	}
	return s
}

func strategyOf(s *Sharing) SharingStrategy {
	if s == nil || s.Strategy == "" {
		return SharingShared
	}
	return s.Strategy
}

// Validate implements DeviceConfig. Errors name the field and, for enums,
// the allowed values.
func (c *AscendConfig) Validate() error {
	return append(validateEnv(AscendConfigKind, c.Env), validateSharing(c.Sharing)...).ToAggregate()
}

// Validate implements DeviceConfig.
func (c *CambriconConfig) Validate() error {
	return append(validateEnv(CambriconConfigKind, c.Env), validateSharing(c.Sharing)...).ToAggregate()
}

func validateSharing(s *Sharing) field.ErrorList {
	if s == nil {
		return nil
	}
	p := field.NewPath("sharing", "strategy")
	switch s.Strategy {
	case "", SharingShared, SharingExclusive:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, s.Strategy, SharingStrategies)}
}

// configVendors are the vendors this API has config kinds for (AscendConfig,
// CambriconConfig): its types are theirs, so it names them itself rather
// than take a registry. The CDI writer refuses the variables of every
// vendor a node agent serves again at prepare.
var configVendors = all.Registry()

func validateEnv(kind string, env map[string]string) field.ErrorList {
	// own is the visible-devices variable of the kind's vendor.
	own := ""
	for _, v := range configVendors.All() {
		if v.Names().ConfigKind == kind {
			own = v.CDI().VisibleEnv
		}
	}
	return configVendors.ValidateEnv(own, env)
}

var (
	scheme  = runtime.NewScheme()
	decoder runtime.Decoder
)

func init() {
	scheme.AddKnownTypes(SchemeGroupVersion, &AscendConfig{}, &CambriconConfig{})
	// Strict: an unknown or duplicated field is an error, not silently
	// dropped, so a typo in a config never goes unnoticed.
	decoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Strict: true})
}

// DecodeConfig decodes, defaults and validates the opaque parameters of a
// config for driver-kind wantKind (AscendConfigKind or CambriconConfigKind).
// Errors name the field (and for enums the allowed values), e.g.
// `AscendConfig: sharing.strategy: Unsupported value: "TimeSlicing":
// supported values: "Exclusive", "Shared"`.
func DecodeConfig(raw []byte, wantKind string) (DeviceConfig, error) {
	obj, gvk, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w (want apiVersion %s, kind %s)", err, GroupVersion, wantKind)
	}
	if gvk.Kind != wantKind {
		return nil, fmt.Errorf("kind %s is not for this driver: want %s", gvk.Kind, wantKind)
	}
	cfg, ok := obj.(DeviceConfig)
	if !ok {
		return nil, fmt.Errorf("kind %s is not a device config", gvk.Kind)
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	return cfg, nil
}

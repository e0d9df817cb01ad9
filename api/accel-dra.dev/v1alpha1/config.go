package v1alpha1

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds of the opaque device configs, one per driver.
const (
	AscendConfigKind    = "AscendConfig"
	CambriconConfigKind = "CambriconConfig"
)

// SchemeGroupVersion is GroupVersion as a schema.GroupVersion.
var SchemeGroupVersion = schema.GroupVersion{Group: "accel-dra.dev", Version: "v1alpha1"}

// AscendConfig is the opaque config of the ascend.accel-dra.dev driver, in
// a DeviceClass's or ResourceClaim's spec.devices.config[].opaque.parameters.
type AscendConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Env adds environment variables to every container that uses the
	// devices the config applies to.
	Env map[string]string `json:"env,omitempty"`
}

// CambriconConfig is the opaque config of the cambricon.accel-dra.dev driver.
type CambriconConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Env adds environment variables to every container that uses the
	// devices the config applies to.
	Env map[string]string `json:"env,omitempty"`
}

// DeviceConfig is what both config kinds have in common; the plugin works
// on it after decoding.
type DeviceConfig interface {
	runtime.Object
	EnvVars() map[string]string
	Validate() error
}

// EnvVars implements DeviceConfig.
func (c *AscendConfig) EnvVars() map[string]string { return c.Env }

// EnvVars implements DeviceConfig.
func (c *CambriconConfig) EnvVars() map[string]string { return c.Env }

// reservedEnv are set by the plugin itself; a config must not change them,
// or a container could claim to see chips it was not given.
var reservedEnv = map[string]string{
	AscendConfigKind:    "ASCEND_VISIBLE_DEVICES",
	CambriconConfigKind: "CAMBRICON_VISIBLE_DEVICES",
}

// Validate implements DeviceConfig.
func (c *AscendConfig) Validate() error { return validateEnv(AscendConfigKind, c.Env) }

// Validate implements DeviceConfig.
func (c *CambriconConfig) Validate() error { return validateEnv(CambriconConfigKind, c.Env) }

func validateEnv(kind string, env map[string]string) error {
	var errs field.ErrorList
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := field.NewPath("env").Key(k)
		for _, msg := range validation.IsEnvVarName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		if k == reservedEnv[kind] || strings.HasPrefix(k, "DRA_") {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s and DRA_* are set by the driver to the allocated devices", reservedEnv[kind])))
		}
	}
	return errs.ToAggregate()
}

// DeepCopyObject implements runtime.Object.
func (c *AscendConfig) DeepCopyObject() runtime.Object {
	out := *c
	out.Env = copyMap(c.Env)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (c *CambriconConfig) DeepCopyObject() runtime.Object {
	out := *c
	out.Env = copyMap(c.Env)
	return &out
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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

// DecodeConfig decodes and validates the opaque parameters of a config for
// driver-kind wantKind (AscendConfigKind or CambriconConfigKind). Errors
// name the field.
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
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	return cfg, nil
}

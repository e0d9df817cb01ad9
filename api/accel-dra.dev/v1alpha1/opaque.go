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

// Decoding of the opaque configs of our drivers, the same for the admission
// webhook (spec of a claim, template or DeviceClass) and for the kubelet
// plugin (status.allocation of a claim), so `kubectl apply` and a failed
// prepare say the same thing.

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrEnforcedInClaim is a claim's (or claim template's) config with
// enforced set: only an admin's DeviceClass config can make what it sets
// final. The webhook refuses it at apply, the plugin at prepare.
var ErrEnforcedInClaim = errors.New("enforced: Forbidden: only a DeviceClass's config can be enforced, not a claim's")

// OpaqueParametersPath is the path of the opaque parameters of entry i of
// a config list, e.g. spec.devices.config[2].opaque.parameters.
func OpaqueParametersPath(configs *field.Path, i int) *field.Path {
	return configs.Index(i).Child("opaque", "parameters")
}

// OpaqueConfigError is an opaque config that did not decode or validate.
//
// +k8s:deepcopy-gen=false
type OpaqueConfigError struct {
	// Field is the path of the parameters, e.g.
	// spec.devices.config[0].opaque.parameters.
	Field string
	// Source, when not empty, says where the config came from, for the
	// plugin, which sees the DeviceClass's and the claim's configs side by
	// side in status.allocation: "claim" or "DeviceClass".
	Source string
	// Err is the error of ConfigDecoder.DecodeConfig, which names the
	// field inside the parameters, or a *NoConfigKindError.
	Err error
}

// Error formats "<field>: <DecodeConfig error>", or with a Source
// "<field> (from the <source>): <DecodeConfig error>".
func (e *OpaqueConfigError) Error() string {
	if e.Source != "" {
		return e.Field + " (from the " + e.Source + "): " + e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap returns the DecodeConfig error.
func (e *OpaqueConfigError) Unwrap() error { return e.Err }

// ErrNotOurs is DecodeOpaqueConfig's answer for a config of a driver the
// decoder does not know: not ours to judge, its parameters not looked at.
// The webhook skips such a config; the node agent, which decodes only its
// own driver's, fails the claim.
var ErrNotOurs = errors.New("not a driver of ours")

// NoConfigKindError is a config for a driver of ours that takes no opaque
// config (ConfigDriver.Kind is NoConfigKind): the driver could not honour
// it, so it is refused rather than ignored.
//
// +k8s:deepcopy-gen=false
type NoConfigKindError struct {
	// Driver is the driver the config is for.
	Driver string
	// Kind is the kind the config names, empty where it names none.
	Kind string
}

// Error says the driver takes no config and, where the config has one,
// its kind.
func (e *NoConfigKindError) Error() string {
	if e.Kind == "" {
		return "driver " + e.Driver + " takes no opaque config"
	}
	return "driver " + e.Driver + " takes no opaque config, got kind " + e.Kind
}

// DecodeOpaqueConfig decodes, defaults and validates the parameters of an
// opaque config for driver, found at path. Every caller must tell the
// errors apart: for a driver that is not ours it returns an error that
// is ErrNotOurs (errors.Is) without looking at the parameters; a bad
// config, or any config for a driver that takes none, is an
// *OpaqueConfigError (the latter wrapping a *NoConfigKindError). A nil
// error always comes with a config.
func (d *ConfigDecoder) DecodeOpaqueConfig(path *field.Path, driver string, parameters []byte) (*DeviceConfig, error) {
	c, ok := d.byDriver[driver]
	if !ok {
		return nil, fmt.Errorf("%s: driver %s: %w", path, driver, ErrNotOurs)
	}
	if c.Kind == NoConfigKind {
		return nil, &OpaqueConfigError{Field: path.String(), Err: &NoConfigKindError{Driver: driver, Kind: kindOf(parameters)}}
	}
	cfg, err := d.DecodeConfig(parameters, c.Kind)
	if err != nil {
		return nil, &OpaqueConfigError{Field: path.String(), Err: err}
	}
	return cfg, nil
}

// kindOf is the kind parameters name, for a message: "" where they name
// none or are not JSON.
func kindOf(parameters []byte) string {
	gvk, err := json.DefaultMetaFactory.Interpret(parameters)
	if err != nil {
		return ""
	}
	return gvk.Kind
}

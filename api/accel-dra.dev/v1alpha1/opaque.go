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

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrEnforcedInClaim is a claim's (or claim template's) config with
// enforced set: only an admin's DeviceClass config can make what it sets
// final. The webhook refuses it at apply, the plugin at prepare.
var ErrEnforcedInClaim = errors.New("enforced: Forbidden: only a DeviceClass's config can be enforced, not a claim's")

// configKinds maps each driver of ours to the config kind it accepts. The
// driver names are the contract's (docs/architecture.md), the same as
// pkg/names; the API package imports nothing of the driver's, and a test
// checks the two agree.
var configKinds = map[string]string{
	"ascend.accel-dra.dev":    AscendConfigKind,
	"cambricon.accel-dra.dev": CambriconConfigKind,
}

// ConfigKindFor returns the config kind a driver of ours accepts; ok is
// false for any other driver, whose configs are not ours to judge.
func ConfigKindFor(driver string) (kind string, ok bool) {
	kind, ok = configKinds[driver]
	return kind, ok
}

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
	// Err is the error of DecodeConfig; it names the field inside the
	// parameters.
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

// DecodeOpaqueConfig decodes, defaults and validates the parameters of an
// opaque config for driver, found at path. For a driver that is not ours
// it returns (nil, false, nil) without looking at the parameters. A bad
// config is an *OpaqueConfigError.
func DecodeOpaqueConfig(path *field.Path, driver string, parameters []byte) (cfg DeviceConfig, ours bool, err error) {
	kind, ok := ConfigKindFor(driver)
	if !ok {
		return nil, false, nil
	}
	cfg, err = DecodeConfig(parameters, kind)
	if err != nil {
		return nil, true, &OpaqueConfigError{Field: path.String(), Err: err}
	}
	return cfg, true, nil
}

// Package opaque decodes the opaque device configs of our drivers and words
// their errors, the same for the admission webhook (spec of a claim,
// template or DeviceClass) and for the kubelet plugin (status.allocation of
// a claim), so `kubectl apply` and a failed prepare say the same thing.
//
// It depends only on the config API and the vendor registry (driver names
// and config kinds), so the plugin can import it without pulling in the
// webhook's HTTP code.
package opaque

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// KindFor returns the config kind a driver of ours accepts; ok is false for
// any other driver, whose configs are not ours to judge.
func KindFor(driver string) (kind string, ok bool) {
	v, ok := vendors.ByDriver(driver)
	if !ok {
		return "", false
	}
	return v.Names().ConfigKind, true
}

// ParametersPath is the path of the opaque parameters of entry i of a
// config list, e.g. spec.devices.config[2].opaque.parameters.
func ParametersPath(configs *field.Path, i int) *field.Path {
	return configs.Index(i).Child("opaque", "parameters")
}

// Error is an opaque config that did not decode or validate.
type Error struct {
	// Field is the path of the parameters, e.g.
	// spec.devices.config[0].opaque.parameters.
	Field string
	// Source, when not empty, says where the config came from, for the
	// plugin, which sees the DeviceClass's and the claim's configs side by
	// side in status.allocation: "claim" or "DeviceClass".
	Source string
	// Err is the error of v1alpha1.DecodeConfig; it names the field inside
	// the parameters.
	Err error
}

// Error formats "<field>: <DecodeConfig error>", or with a Source
// "<field> (from the <source>): <DecodeConfig error>".
func (e *Error) Error() string {
	if e.Source != "" {
		return e.Field + " (from the " + e.Source + "): " + e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap returns the DecodeConfig error.
func (e *Error) Unwrap() error { return e.Err }

// Decode decodes and validates the parameters of an opaque config for
// driver, found at path. For a driver that is not ours it returns
// (nil, false, nil) without looking at the parameters. A bad config is an
// *Error.
func Decode(path *field.Path, driver string, parameters []byte) (cfg v1alpha1.DeviceConfig, ours bool, err error) {
	kind, ok := KindFor(driver)
	if !ok {
		return nil, false, nil
	}
	cfg, err = v1alpha1.DecodeConfig(parameters, kind)
	if err != nil {
		return nil, true, &Error{Field: path.String(), Err: err}
	}
	return cfg, true, nil
}

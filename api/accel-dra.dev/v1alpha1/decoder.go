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
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// NoConfigKind as ConfigDriver.Kind is a driver that takes no opaque
// config: a config for it is refused (NoConfigKindError).
const NoConfigKind = ""

// ConfigDriver is what a ConfigDecoder knows of one DRA driver of ours.
// The API package names no driver itself: the webhook and the node agent
// list theirs from the vendor registry their main holds
// (vendors.Registry.ConfigDecoder).
//
// +k8s:deepcopy-gen=false
type ConfigDriver struct {
	// Driver is the DRA driver name, e.g. ascend.accel-dra.dev.
	Driver string
	// Kind is the kind of the driver's DeviceConfig, e.g. AscendConfig;
	// NoConfigKind for a driver that takes none.
	Kind string
	// VisibleEnv is the driver's visible-devices variable, e.g.
	// ASCEND_VISIBLE_DEVICES, which no config of any driver may set.
	VisibleEnv string
	// ShareClasses are the driver's DeviceClasses, by name, that select
	// the chips of one model whose shares, where published Shared, are
	// partitions of fixed templates counted in units: the webhook refuses
	// a claim of such a class that asks for a size no template has.
	ShareClasses map[string]ShareClass
}

// ShareClass is what the webhook knows of a DeviceClass that selects the
// chips of one model whose Shared chips make each share a partition of a
// fixed template (Ascend vNPUs, docs/partitions.md): a share asks for a
// number of units, one of Sizes.
//
// +k8s:deepcopy-gen=false
type ShareClass struct {
	// Model is the model the class selects, for messages.
	Model string
	// Capacity is the capacity counted in units (accel-dra.dev/shareUnits).
	Capacity string
	// Sizes are the unit counts a share can take, ascending: the
	// templates' and last the whole chip.
	Sizes []int64
	// Described lists the sizes and their templates, for messages.
	Described string
	// Apart are the capacities a share of units cannot ask for too: its
	// cores and memory follow from its units.
	Apart []string
}

// ShareClass returns what is known of DeviceClass class, if it is one of
// a driver's ShareClasses.
func (d *ConfigDecoder) ShareClass(class string) (ShareClass, bool) {
	for _, c := range d.byDriver {
		if sc, ok := c.ShareClasses[class]; ok {
			return sc, true
		}
	}
	return ShareClass{}, false
}

// ConfigDecoder decodes, defaults and validates the opaque configs of a
// set of drivers, each kind a DeviceConfig. It is immutable, so one value
// serves every request.
//
// +k8s:deepcopy-gen=false
type ConfigDecoder struct {
	byDriver map[string]ConfigDriver
	byKind   map[string]ConfigDriver
	// reserved are the visible-devices variables of every driver, sorted.
	reserved []string
	decoder  runtime.Decoder
}

// kindName is what a kind looks like: an upper camel case Go name.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// fileKinds are the kinds of the group's other files, which a config kind
// must not take.
var fileKinds = []string{SimulatedClusterKind, HardwareProfileKind}

// ReservedEnv lists, sorted, the visible-devices variables of the
// drivers: besides the ReservedEnvPrefix ones, those a config may not set
// (ValidateEnv's reserved).
func ReservedEnv(drivers ...ConfigDriver) []string {
	var out []string
	for _, c := range drivers {
		if c.VisibleEnv != "" {
			out = append(out, c.VisibleEnv)
		}
	}
	sort.Strings(out)
	return out
}

// NewConfigDecoder returns the decoder of the drivers' configs. It fails
// when a driver name is empty or listed twice, or a kind is not a kind
// name or is taken already.
func NewConfigDecoder(drivers ...ConfigDriver) (*ConfigDecoder, error) {
	d := &ConfigDecoder{byDriver: map[string]ConfigDriver{}, byKind: map[string]ConfigDriver{}}
	scheme := runtime.NewScheme()
	for _, c := range drivers {
		if err := d.check(c); err != nil {
			return nil, fmt.Errorf("config of driver %q: %w", c.Driver, err)
		}
		d.byDriver[c.Driver] = c
		if c.Kind == NoConfigKind {
			continue
		}
		d.byKind[c.Kind] = c
		scheme.AddKnownTypeWithName(SchemeGroupVersion.WithKind(c.Kind), &DeviceConfig{})
	}
	d.reserved = ReservedEnv(drivers...)
	// Strict: an unknown or duplicated field is an error, not silently
	// dropped, so a typo in a config never goes unnoticed.
	d.decoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Strict: true})
	return d, nil
}

// check refuses a driver d cannot add.
func (d *ConfigDecoder) check(c ConfigDriver) error {
	if c.Driver == "" {
		return errors.New("driver: the name is empty")
	}
	if _, listed := d.byDriver[c.Driver]; listed {
		return errors.New("driver: listed twice")
	}
	if c.Kind == NoConfigKind {
		return nil
	}
	if !kindName.MatchString(c.Kind) {
		return fmt.Errorf("kind %q: not a kind name (%s)", c.Kind, kindName)
	}
	if slices.Contains(fileKinds, c.Kind) {
		return fmt.Errorf("kind %q: the kind of another %s file", c.Kind, GroupVersion)
	}
	if other, taken := d.byKind[c.Kind]; taken {
		return fmt.Errorf("kind %q: driver %s's already", c.Kind, other.Driver)
	}
	return nil
}

// Kinds lists the config kinds, sorted.
func (d *ConfigDecoder) Kinds() []string {
	kinds := make([]string, 0, len(d.byKind))
	for k := range d.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// DecodeConfig decodes, defaults and validates raw, the opaque parameters
// of a config of kind wantKind (the kind of the driver it is for). Errors
// name the field (and for enums the allowed values), e.g.
// `AscendConfig: sharing.strategy: Unsupported value: "TimeSlicing":
// supported values: "Exclusive", "Shared"`.
func (d *ConfigDecoder) DecodeConfig(raw []byte, wantKind string) (*DeviceConfig, error) {
	want, ok := d.byKind[wantKind]
	if !ok {
		return nil, fmt.Errorf("kind %q is not a config kind: want one of %s", wantKind, strings.Join(d.Kinds(), ", "))
	}
	obj, gvk, err := d.decoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w (want apiVersion %s, kind %s)", err, GroupVersion, wantKind)
	}
	if gvk.Kind != wantKind {
		return nil, fmt.Errorf("kind %s is not for this driver: want %s", gvk.Kind, wantKind)
	}
	cfg, ok := obj.(*DeviceConfig)
	if !ok { // every kind of the scheme is a DeviceConfig
		return nil, fmt.Errorf("kind %s decoded to %T, not a DeviceConfig", gvk.Kind, obj)
	}
	cfg.Default()
	if errs := cfg.validate(want.VisibleEnv, d.reserved); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, errs.ToAggregate())
	}
	return cfg, nil
}

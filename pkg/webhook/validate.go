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

package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// unknownRequest is the detail of a config that names a request the claim
// does not have; the same words as the API server's own validation.
const unknownRequest = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

// devices is what the webhook checks of a claim's spec.devices or a
// DeviceClass's spec, the same for every served version of resource.k8s.io:
// the request names (for a DeviceClass none) and the configs.
type devices struct {
	// requests maps each request name to the names of its firstAvailable
	// subrequests (nil for a request without).
	requests map[string][]string
	configs  []config
	// sizes are the capacity requests of the claim's requests and
	// subrequests, in order.
	sizes []sized
}

// sized is the capacity a request or subrequest asks of a DeviceClass.
type sized struct {
	// path is the request's (or subrequest's) field of the class and
	// capacity: spec.devices.requests[0].exactly.
	path     *field.Path
	class    string
	capacity map[string]resource.Quantity
}

type config struct {
	requests []string
	// driver and parameters of the opaque config; opaque is false when
	// the entry has none.
	driver     string
	parameters []byte
	opaque     bool
}

func opaqueConfig(driver string, parameters runtime.RawExtension) config {
	return config{driver: driver, parameters: parameters.Raw, opaque: true}
}

// validate checks the configs of our drivers in d: each must decode and
// validate for its driver (configs.DecodeOpaqueConfig), and the requests
// it names must exist; and the share sizes of the requests whose class
// names a model of fixed share templates (checkSizes). configsPath is the
// path of the config list. Configs of other drivers are not looked at.
// Every problem is returned, in order.
func (d devices) validate(configs *v1alpha1.ConfigDecoder, configsPath *field.Path, isClass bool) []error {
	errs := d.checkSizes(configs)
	for i, c := range d.configs {
		if !c.opaque {
			continue
		}
		path := v1alpha1.OpaqueParametersPath(configsPath, i)
		cfg, err := configs.DecodeOpaqueConfig(path, c.driver, c.parameters)
		if errors.Is(err, v1alpha1.ErrNotOurs) {
			continue
		}
		if !isClass {
			errs = append(errs, d.missingRequests(configsPath.Index(i), c.requests)...)
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case !isClass && cfg.Enforced:
			errs = append(errs, &v1alpha1.OpaqueConfigError{Field: path.String(), Err: v1alpha1.ErrEnforcedInClaim})
		}
	}
	return errs
}

// checkSizes refuses the share sizes no template has: a request whose
// DeviceClass selects one model whose Shared chips make each share a
// partition of a fixed template (v1alpha1.ShareClass) may ask for units
// only in the template's sizes or the whole chip's, and not for cores or
// memory besides, which follow from the units. A request of a generic
// class is left to the request policy of each chip's slice.
func (d devices) checkSizes(configs *v1alpha1.ConfigDecoder) []error {
	var errs []error
	for _, r := range d.sizes {
		sc, ok := configs.ShareClass(r.class)
		if !ok {
			continue
		}
		q, asked := r.capacity[sc.Capacity]
		if !asked {
			continue
		}
		path := r.path.Child("capacity", "requests")
		if v, exact := q.AsInt64(); !exact || !slices.Contains(sc.Sizes, v) {
			errs = append(errs, field.Invalid(path.Key(sc.Capacity), q.String(),
				fmt.Sprintf("class %s: a share of a Shared %s chip is one of its templates, in units: %s", r.class, sc.Model, sc.Described)))
		}
		for _, name := range sc.Apart {
			if a, both := r.capacity[name]; both && !a.IsZero() {
				errs = append(errs, field.Invalid(path.Key(name), a.String(),
					fmt.Sprintf("class %s: a share of a Shared %s chip asks for %s only; its cores and memory follow from them", r.class, sc.Model, sc.Capacity)))
			}
		}
	}
	return errs
}

// missingRequests are the requests a config at path names that the claim
// does not have.
func (d devices) missingRequests(path *field.Path, requests []string) []error {
	var errs []error
	for j, name := range requests {
		if !d.hasRequest(name) {
			errs = append(errs, field.Invalid(path.Child("requests").Index(j), name, unknownRequest))
		}
	}
	return errs
}

// hasRequest reports whether name is "<request>" or "<request>/<subrequest>"
// of the claim.
func (d devices) hasRequest(name string) bool {
	parent, sub, isSub := strings.Cut(name, "/")
	subs, ok := d.requests[parent]
	if !ok {
		return false
	}
	if !isSub {
		return true
	}
	return slices.Contains(subs, sub)
}

// equal reports whether two extractions are the same, so an update that
// leaves the configs alone is not judged again.
func (d devices) equal(o devices) bool {
	return maps.EqualFunc(d.requests, o.requests, slices.Equal) &&
		slices.EqualFunc(d.sizes, o.sizes, func(a, b sized) bool {
			return a.path.String() == b.path.String() && a.class == b.class &&
				maps.EqualFunc(a.capacity, b.capacity, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
		}) &&
		slices.EqualFunc(d.configs, o.configs, func(a, b config) bool {
			return a.opaque == b.opaque && a.driver == b.driver &&
				bytes.Equal(a.parameters, b.parameters) && slices.Equal(a.requests, b.requests)
		})
}

// The versions of resource.k8s.io differ in where a request keeps its
// device selection (v1beta1 inline, v1beta2 and v1 under exactly), not in
// what the webhook looks at: request and subrequest names and the configs
// have the same JSON in every version. So each version's spec is read
// through that shared JSON shape; the API types have no conversions
// outside the API server.
type specShape struct {
	Requests []struct {
		Name string `json:"name"`
		// v1beta1 keeps the class and capacity in the request, v1beta2
		// and v1 under exactly.
		requestShape
		Exactly        *requestShape `json:"exactly"`
		FirstAvailable []struct {
			Name string `json:"name"`
			requestShape
		} `json:"firstAvailable"`
	} `json:"requests"`
	Config []struct {
		Requests []string `json:"requests"`
		Opaque   *struct {
			Driver     string               `json:"driver"`
			Parameters runtime.RawExtension `json:"parameters"`
		} `json:"opaque"`
	} `json:"config"`
}

// requestShape is what the webhook reads of one way to satisfy a request.
type requestShape struct {
	DeviceClassName string `json:"deviceClassName"`
	Capacity        *struct {
		Requests map[string]resource.Quantity `json:"requests"`
	} `json:"capacity"`
}

// sized is the request's capacity request at path, if it names a class.
func (r requestShape) sized(path *field.Path) (sized, bool) {
	if r.DeviceClassName == "" || r.Capacity == nil {
		return sized{}, false
	}
	return sized{path: path, class: r.DeviceClassName, capacity: r.Capacity.Requests}, true
}

// fromSpec extracts the devices of a claim's spec.devices or a
// DeviceClass's spec (isClass: no requests), of any served version.
func fromSpec(spec any, isClass bool, requestsPath *field.Path) devices {
	var s specShape
	// Marshalling a typed API object and reading it back cannot fail.
	if b, err := json.Marshal(spec); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	var d devices
	if !isClass {
		d.requests = map[string][]string{}
		for i, r := range s.Requests {
			var subs []string
			path := requestsPath.Index(i)
			if sz, ok := r.sized(path); ok {
				d.sizes = append(d.sizes, sz)
			}
			if r.Exactly != nil {
				if sz, ok := r.Exactly.sized(path.Child("exactly")); ok {
					d.sizes = append(d.sizes, sz)
				}
			}
			for j, sub := range r.FirstAvailable {
				subs = append(subs, sub.Name)
				if sz, ok := sub.sized(path.Child("firstAvailable").Index(j)); ok {
					d.sizes = append(d.sizes, sz)
				}
			}
			d.requests[r.Name] = subs
		}
	}
	for _, c := range s.Config {
		var e config
		if c.Opaque != nil {
			e = opaqueConfig(c.Opaque.Driver, c.Opaque.Parameters)
		}
		if !isClass {
			e.requests = c.Requests
		}
		d.configs = append(d.configs, e)
	}
	return d
}

// object is a decoded admission object: what to check and where it is.
type object struct {
	kind        string // ResourceClaim, ResourceClaimTemplate, DeviceClass
	devices     devices
	configsPath *field.Path
	isClass     bool
}

var (
	claimConfigs    = field.NewPath("spec", "devices", "config")
	templateConfigs = field.NewPath("spec", "spec", "devices", "config")
	classConfigs    = field.NewPath("spec", "config")

	claimRequests    = field.NewPath("spec", "devices", "requests")
	templateRequests = field.NewPath("spec", "spec", "devices", "requests")
)

// fromObject reads one of the objects the webhook validates; ok is false
// for anything else.
func fromObject(obj runtime.Object) (o object, ok bool) {
	switch obj := obj.(type) {
	case *resourcev1.ResourceClaim:
		return object{"ResourceClaim", fromSpec(obj.Spec.Devices, false, claimRequests), claimConfigs, false}, true
	case *resourcev1beta2.ResourceClaim:
		return object{"ResourceClaim", fromSpec(obj.Spec.Devices, false, claimRequests), claimConfigs, false}, true
	case *resourcev1beta1.ResourceClaim:
		return object{"ResourceClaim", fromSpec(obj.Spec.Devices, false, claimRequests), claimConfigs, false}, true
	case *resourcev1.ResourceClaimTemplate:
		return object{"ResourceClaimTemplate", fromSpec(obj.Spec.Spec.Devices, false, templateRequests), templateConfigs, false}, true
	case *resourcev1beta2.ResourceClaimTemplate:
		return object{"ResourceClaimTemplate", fromSpec(obj.Spec.Spec.Devices, false, templateRequests), templateConfigs, false}, true
	case *resourcev1beta1.ResourceClaimTemplate:
		return object{"ResourceClaimTemplate", fromSpec(obj.Spec.Spec.Devices, false, templateRequests), templateConfigs, false}, true
	case *resourcev1.DeviceClass:
		return object{"DeviceClass", fromSpec(obj.Spec, true, nil), classConfigs, true}, true
	case *resourcev1beta2.DeviceClass:
		return object{"DeviceClass", fromSpec(obj.Spec, true, nil), classConfigs, true}, true
	case *resourcev1beta1.DeviceClass:
		return object{"DeviceClass", fromSpec(obj.Spec, true, nil), classConfigs, true}, true
	}
	return object{}, false
}

// Validate judges obj (a ResourceClaim, ResourceClaimTemplate or
// DeviceClass of any served version) as the webhook does at apply, for
// tools that read such objects from files (accel-dra simulate): nil if
// the webhook would admit it, else an error with the message the webhook
// would deny it with. Other kinds are not looked at.
func Validate(configs *v1alpha1.ConfigDecoder, obj runtime.Object, name string) error {
	o, ok := fromObject(obj)
	if !ok {
		return nil
	}
	errs := o.devices.validate(configs, o.configsPath, o.isClass)
	if len(errs) == 0 {
		return nil
	}
	return errors.New(invalid(o.kind, name, errs).Message)
}

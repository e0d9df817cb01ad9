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

package vendors

// api.go turns the registry into what the file formats of
// api/accel-dra.dev/v1alpha1 need to know of the vendors. The API package
// imports no vendor: the binaries' main hands it their registry's vendors
// through these.

import (
	"fmt"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// ConfigKindNone as Names.ConfigKind is a vendor whose driver takes no
// opaque config: the decoder refuses any config for it, naming the driver,
// rather than the vendor's driver ignoring what it cannot honour.
const ConfigKindNone = "none"

// ConfigDecoder returns the decoder of the opaque configs of r's drivers,
// each under the config kind its vendor declares, every vendor's
// visible-devices variable reserved. The webhook and the node agent
// decode with it; it fails where a kind is not a valid kind name.
func (r Registry) ConfigDecoder() (*v1alpha1.ConfigDecoder, error) {
	d, err := v1alpha1.NewConfigDecoder(r.configDrivers()...)
	if err != nil {
		return nil, fmt.Errorf("building the opaque config decoder of the vendors: %w", err)
	}
	return d, nil
}

// ReservedEnv lists, sorted, the variables besides the
// v1alpha1.ReservedEnvPrefix ones that configuration may not set: every
// vendor's visible-devices variable, as the config decoder reserves them
// (v1alpha1.ReservedEnv).
func (r Registry) ReservedEnv() []string {
	return v1alpha1.ReservedEnv(r.configDrivers()...)
}

// configDrivers are r's drivers as the API's config checks see them.
func (r Registry) configDrivers() []v1alpha1.ConfigDriver {
	drivers := make([]v1alpha1.ConfigDriver, 0, len(r.vendors))
	for _, v := range r.vendors {
		n := v.Names()
		kind := n.ConfigKind
		if kind == ConfigKindNone {
			kind = v1alpha1.NoConfigKind
		}
		drivers = append(drivers, v1alpha1.ConfigDriver{Driver: n.Driver, Kind: kind, VisibleEnv: v.CDI().VisibleEnv, ShareClasses: shareClasses(v)})
	}
	return drivers
}

// shareClasses are the model DeviceClasses of vendor v whose Shared
// chips count their shares in template units (ModelShares), for the
// webhook.
func shareClasses(v Vendor) map[string]v1alpha1.ShareClass {
	p := v.Partitions()
	ms, ok := p.(ModelShares)
	if !ok {
		return nil
	}
	out := map[string]v1alpha1.ShareClass{}
	for _, m := range v.Models() {
		g, ok := ms.ModelUnitGrid(m.Name)
		if !ok {
			continue
		}
		out[ModelClassName(m.Name)] = v1alpha1.ShareClass{Model: m.Name, Capacity: string(names.CapShareUnits), Sizes: g.Sizes,
			Described: g.Describe(), Apart: []string{string(names.CapMemory), string(names.CapCores)}}
	}
	return out
}

// ProfileVendors are r's vendors as a hardware profile may name them
// (v1alpha1.ParseHardwareProfile).
func (r Registry) ProfileVendors() []v1alpha1.ProfileVendor {
	out := make([]v1alpha1.ProfileVendor, 0, len(r.vendors))
	for _, v := range r.vendors {
		out = append(out, v1alpha1.ProfileVendor{Vendor: string(v.Names().Vendor), LinkType: string(v.ProfileNode().LinkType)})
	}
	return out
}

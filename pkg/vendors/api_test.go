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

package vendors_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// The decoder built from the binaries' registry takes each vendor's kind
// for its driver and only there: AscendConfig and CambriconConfig are as
// they always were on the wire, and the test vendor, registered as a line
// in pkg/vendors/all would, has its own kind with nothing else changed.
func TestTheRegistrysDecoderTakesEachVendorsConfigKindForItsDriver(t *testing.T) {
	reg := vendors.MustRegistry(append(all.Vendors(), vendortest.Acme{})...)
	configs, err := reg.ConfigDecoder()
	require.NoError(t, err)
	require.Equal(t, []string{"AcmeConfig", "AscendConfig", "CambriconConfig"}, configs.Kinds())
	path := field.NewPath("spec", "devices", "config").Index(0).Child("opaque", "parameters")
	tests := []struct {
		name, driver, raw, want string
		env                     map[string]string
	}{
		{name: "an AscendConfig", driver: ascend.Driver,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"1200"}}`, env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{name: "a CambriconConfig", driver: cambricon.Driver,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"Exclusive"}}`},
		{name: "the test vendor's own kind", driver: vendortest.Driver,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AcmeConfig","env":{"MODEL":"qwen"}}`, env: map[string]string{"MODEL": "qwen"}},
		{name: "a kind for another vendor's driver", driver: vendortest.Driver,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`,
			want: "spec.devices.config[0].opaque.parameters: kind CambriconConfig is not for this driver: want AcmeConfig"},
		{name: "the test vendor's visible devices are reserved for the real vendors' configs too", driver: ascend.Driver,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"ACME_VISIBLE_DEVICES":"0"}}`,
			want: "spec.devices.config[0].opaque.parameters: AscendConfig: env[ACME_VISIBLE_DEVICES]: Forbidden: ACME_VISIBLE_DEVICES is set by its vendor's driver"},
		{name: "and each driver's own is named as its own", driver: vendortest.Driver,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AcmeConfig","env":{"ACME_VISIBLE_DEVICES":"0"}}`,
			want: "spec.devices.config[0].opaque.parameters: AcmeConfig: env[ACME_VISIBLE_DEVICES]: Forbidden: ACME_VISIBLE_DEVICES and DRA_* are set by the driver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := configs.DecodeOpaqueConfig(path, tt.driver, []byte(tt.raw))
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.env, cfg.Env)
		})
	}
	_, err = configs.DecodeOpaqueConfig(path, "gpu.example.com", nil)
	require.ErrorIs(t, err, v1alpha1.ErrNotOurs)
}

// A vendor declares that its driver takes no config (ConfigKindNone):
// registering it is fine, any number of such vendors do not clash, and
// the decoder refuses a config for it by name.
func TestAVendorWithoutAConfigKindGetsItsConfigsRefused(t *testing.T) {
	other := clashing{edit: func(n *vendors.Names) { n.ConfigKind = vendors.ConfigKindNone }}
	reg, err := vendors.NewRegistry(append(all.Vendors(), vendortest.NoConfig{}, other)...)
	require.NoError(t, err, "two vendors without a config kind do not clash")
	configs, err := reg.ConfigDecoder()
	require.NoError(t, err)
	require.Equal(t, []string{"AscendConfig", "CambriconConfig"}, configs.Kinds())
	path := field.NewPath("status", "allocation", "devices", "config").Index(1).Child("opaque", "parameters")
	cfg, err := configs.DecodeOpaqueConfig(path, vendortest.Driver, []byte(`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AcmeConfig"}`))
	require.Nil(t, cfg)
	require.EqualError(t, err, "status.allocation.devices.config[1].opaque.parameters: driver acme.accel-dra.dev takes no opaque config, got kind AcmeConfig")
	var nk *v1alpha1.NoConfigKindError
	require.ErrorAs(t, err, &nk)
}

// A vendor's config kind must be one the API can register: not a name of
// the group's other files, and a kind name.
func TestAVendorsConfigKindMustBeAKindTheAPICanRegister(t *testing.T) {
	for _, tt := range []struct{ kind, want string }{
		{v1alpha1.HardwareProfileKind, `building the opaque config decoder of the vendors: config of driver "other.accel-dra.dev": kind "HardwareProfile": the kind of another accel-dra.dev/v1alpha1 file`},
		{"None", ""},
		{"other-config", `building the opaque config decoder of the vendors: config of driver "other.accel-dra.dev": kind "other-config": not a kind name`},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			reg, err := all.Registry().With(clashing{edit: func(n *vendors.Names) { n.ConfigKind = tt.kind }})
			require.NoError(t, err)
			_, err = reg.ConfigDecoder()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// A profile may name the registry's vendors with their link types, and
// pcie, which the API spells itself, is inventory.LinkPCIe.
func TestAProfileNamesTheRegistrysVendorsAndTheirLinkTypes(t *testing.T) {
	reg := vendors.MustRegistry(append(all.Vendors(), vendortest.Acme{})...)
	require.Equal(t, []v1alpha1.ProfileVendor{{Vendor: "acme"}, {Vendor: "huawei", LinkType: "hccs"}, {Vendor: "cambricon", LinkType: "mlulink"}}, reg.ProfileVendors())
	_, err := v1alpha1.ParseHardwareProfile("acme.yaml", []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: HardwareProfile
name: acme
chips:
- {vendor: acme, model: ACME-1, count: 2, memory: 16Gi, cores: 8, linkType: `+string(inventory.LinkPCIe)+`, driverVersion: 1.2.3}
`), reg.ProfileVendors())
	require.NoError(t, err)
}

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

package v1alpha1_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

func TestDecodeWordsErrorsAsFieldColonDecodeConfigError(t *testing.T) {
	configs := field.NewPath("spec", "devices", "config")
	tests := []struct {
		name, driver, raw string
		ours              bool
		want              string
	}{
		{name: "a good Ascend config decodes", driver: "ascend.accel-dra.dev", ours: true,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"A":"1"}}`},
		{name: "a good Cambricon config decodes", driver: "cambricon.accel-dra.dev", ours: true,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`},
		{name: "another driver's config is not looked at", driver: "gpu.example.com", raw: `not even JSON`},
		{name: "the kind must match the driver", driver: "cambricon.accel-dra.dev", ours: true,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig"}`,
			want: "spec.devices.config[3].opaque.parameters: kind AscendConfig is not for this driver: want CambriconConfig"},
		{name: "an unknown field is named", driver: "ascend.accel-dra.dev", ours: true,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{}}`,
			want: `spec.devices.config[3].opaque.parameters: decoding: strict decoding error: unknown field "envs" (want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ours, err := v1alpha1.DecodeOpaqueConfig(v1alpha1.OpaqueParametersPath(configs, 3), tt.driver, []byte(tt.raw))
			require.Equal(t, tt.ours, ours)
			if tt.want != "" {
				require.EqualError(t, err, tt.want)
				require.Nil(t, cfg)
				var oe *v1alpha1.OpaqueConfigError
				require.ErrorAs(t, err, &oe)
				require.Equal(t, "spec.devices.config[3].opaque.parameters", oe.Field)
				return
			}
			require.NoError(t, err)
			if ours {
				require.NotNil(t, cfg)
			} else {
				require.Nil(t, cfg)
			}
		})
	}
}

func TestErrorWithSourceKeepsThePluginsWording(t *testing.T) {
	inner := errors.New("decoding: boom")
	err := &v1alpha1.OpaqueConfigError{
		Field:  v1alpha1.OpaqueParametersPath(field.NewPath("status", "allocation", "devices", "config"), 0).String(),
		Source: "claim",
		Err:    inner,
	}
	require.EqualError(t, err, "status.allocation.devices.config[0].opaque.parameters (from the claim): decoding: boom")
	require.ErrorIs(t, err, inner)
}

// The API package spells the driver names itself (it imports nothing of
// the driver's): every vendor's driver must map to the config
// kind its vendor package names, and no other driver to any.
func TestConfigKindForKnowsEveryVendorsDriver(t *testing.T) {
	vs := all.Vendors()
	require.NotEmpty(t, vs)
	for _, v := range vs {
		n := v.Names()
		t.Run(n.Driver, func(t *testing.T) {
			kind, ok := v1alpha1.ConfigKindFor(n.Driver)
			require.True(t, ok, "the API package has no config kind for driver %s", n.Driver)
			require.Equal(t, n.ConfigKind, kind)
		})
	}
	for _, other := range []string{names.Domain, "gpu.example.com"} {
		kind, ok := v1alpha1.ConfigKindFor(other)
		require.False(t, ok, other)
		require.Empty(t, kind, other)
	}
}

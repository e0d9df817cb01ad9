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
)

func TestDecodeWordsErrorsAsFieldColonDecodeConfigError(t *testing.T) {
	configs := field.NewPath("spec", "devices", "config")
	tests := []struct {
		name, driver, raw string
		want              string
	}{
		{name: "a good Ascend config decodes", driver: "ascend.accel-dra.dev",
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"A":"1"}}`},
		{name: "a good Cambricon config decodes", driver: "cambricon.accel-dra.dev",
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`},
		{name: "the kind must match the driver", driver: "cambricon.accel-dra.dev",
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig"}`,
			want: "spec.devices.config[3].opaque.parameters: kind AscendConfig is not for this driver: want CambriconConfig"},
		{name: "an unknown field is named", driver: "ascend.accel-dra.dev",
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{}}`,
			want: `spec.devices.config[3].opaque.parameters: decoding: strict decoding error: unknown field "envs" (want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig)`},
		{name: "a driver of ours that takes no config refuses one, naming the driver and the kind", driver: plainDriver,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"PlainConfig"}`,
			want: "spec.devices.config[3].opaque.parameters: driver plain.accel-dra.dev takes no opaque config, got kind PlainConfig"},
		{name: "the same with parameters that name no kind", driver: plainDriver,
			raw:  `not even JSON`,
			want: "spec.devices.config[3].opaque.parameters: driver plain.accel-dra.dev takes no opaque config"},
	}
	decoder := newDecoder(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decoder.DecodeOpaqueConfig(v1alpha1.OpaqueParametersPath(configs, 3), tt.driver, []byte(tt.raw))
			if tt.want == "" {
				require.NoError(t, err)
				require.NotNil(t, cfg, "no error always comes with a config")
				return
			}
			require.EqualError(t, err, tt.want)
			require.Nil(t, cfg)
			require.NotErrorIs(t, err, v1alpha1.ErrNotOurs)
			var oe *v1alpha1.OpaqueConfigError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, "spec.devices.config[3].opaque.parameters", oe.Field)
		})
	}
}

// A config of another driver is not ours: an error every caller must tell
// apart, so none can mistake it for a config.
func TestAnotherDriversConfigIsNotOurs(t *testing.T) {
	decoder := newDecoder(t)
	for _, driver := range []string{"gpu.example.com", "accel-dra.dev", ""} {
		t.Run(driver, func(t *testing.T) {
			cfg, err := decoder.DecodeOpaqueConfig(field.NewPath("spec", "config").Index(0), driver, []byte(`not even JSON`))
			require.ErrorIs(t, err, v1alpha1.ErrNotOurs)
			require.EqualError(t, err, "spec.config[0]: driver "+driver+": not a driver of ours")
			require.Nil(t, cfg)
			var oe *v1alpha1.OpaqueConfigError
			require.False(t, errors.As(err, &oe), "not a bad config: nothing was looked at")
		})
	}
	var nk *v1alpha1.NoConfigKindError
	_, err := decoder.DecodeOpaqueConfig(field.NewPath("spec", "config").Index(0), plainDriver, []byte(`{"kind":"PlainConfig"}`))
	require.ErrorAs(t, err, &nk)
	require.Equal(t, v1alpha1.NoConfigKindError{Driver: plainDriver, Kind: "PlainConfig"}, *nk)
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

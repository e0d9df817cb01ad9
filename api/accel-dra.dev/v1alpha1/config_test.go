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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

func TestDecodeConfigIsStrictAndNamesTheField(t *testing.T) {
	tests := []struct {
		name, raw, kind, want string
		env                   map[string]string
		strategy              v1alpha1.SharingStrategy
	}{
		{name: "ascend env", kind: v1alpha1.AscendConfigKind,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"1200"}}`,
			env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{name: "cambricon without env", kind: v1alpha1.CambriconConfigKind,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`},
		{name: "unknown field", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`,
			want: `strict decoding error: unknown field "envs"`},
		{name: "wrong kind for the driver", kind: v1alpha1.CambriconConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig"}`,
			want: "kind AscendConfig is not for this driver: want CambriconConfig"},
		{name: "unknown kind", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"GpuConfig"}`,
			want: `no kind "GpuConfig" is registered`},
		{name: "wrong version", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v2","kind":"AscendConfig"}`,
			want: `want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig`},
		{name: "not JSON", kind: v1alpha1.AscendConfigKind, raw: `{"apiVersion":`, want: "decoding: "},
		{name: "wrong type", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":["A=1"]}`,
			want: "decoding: "},
		{name: "reserved variable", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"ASCEND_VISIBLE_DEVICES":"0-7"}}`,
			want: "AscendConfig: env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver"},
		{name: "another vendor's visible-devices variable: a container may hold both vendors' chips, and the CDI writer refuses it at prepare",
			kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"CAMBRICON_VISIBLE_DEVICES":"0"}}`,
			want: "AscendConfig: env[CAMBRICON_VISIBLE_DEVICES]: Forbidden: CAMBRICON_VISIBLE_DEVICES is set by its vendor's driver"},
		{name: "a NUL byte in a value: the runtime would fail the container at start", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_IF_IP":"10.0.0.1\u0000"}}`,
			want: `AscendConfig: env[HCCL_IF_IP]: Invalid value: "10.0.0.1\x00": must not contain a NUL byte`},
		{name: "DRA variable", kind: v1alpha1.CambriconConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","env":{"DRA_CLAIM_UID":"x"}}`,
			want: "env[DRA_CLAIM_UID]: Forbidden"},
		{name: "bad variable name", kind: v1alpha1.CambriconConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","env":{"1X":"x"}}`,
			want: `env[1X]: Invalid value: "1X": a valid environment variable name must consist of`},
		{name: "sharing defaults to Shared", kind: v1alpha1.AscendConfigKind,
			raw:      `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{}}`,
			strategy: v1alpha1.SharingShared},
		{name: "exclusive sharing", kind: v1alpha1.CambriconConfigKind,
			raw:      `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"Exclusive"}}`,
			strategy: v1alpha1.SharingExclusive},
		{name: "unknown sharing strategy names the field and the allowed values", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"TimeSlicing"}}`,
			want: `AscendConfig: sharing.strategy: Unsupported value: "TimeSlicing": supported values: "Exclusive", "Shared"`},
		{name: "strategy values are case sensitive", kind: v1alpha1.CambriconConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"shared"}}`,
			want: `CambriconConfig: sharing.strategy: Unsupported value: "shared": supported values: "Exclusive", "Shared"`},
		{name: "unknown field in sharing", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Shared","memory":"8Gi"}}`,
			want: `strict decoding error: unknown field "sharing.memory"`},
		{name: "every error is reported", kind: v1alpha1.AscendConfigKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"DRA_X":"1"},"sharing":{"strategy":"None"}}`,
			want: `AscendConfig: [env[DRA_X]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices, sharing.strategy: Unsupported value: "None": supported values: "Exclusive", "Shared"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := v1alpha1.DecodeConfig([]byte(tt.raw), tt.kind)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				require.Nil(t, cfg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.env, cfg.EnvVars())
			require.Equal(t, tt.kind, cfg.GetObjectKind().GroupVersionKind().Kind)
			want := tt.strategy
			if want == "" {
				want = v1alpha1.SharingShared
			}
			require.Equal(t, want, cfg.SharingStrategy(), "the default strategy is Shared")
		})
	}
}

func TestDefaultFillsInTheSharingStrategyAndDeepCopyIsDeep(t *testing.T) {
	for _, cfg := range []v1alpha1.DeviceConfig{
		&v1alpha1.AscendConfig{Env: map[string]string{"A": "1"}},
		&v1alpha1.CambriconConfig{Env: map[string]string{"A": "1"}},
	} {
		cfg.Default()
		require.Equal(t, v1alpha1.SharingShared, cfg.SharingStrategy())
		cp := cfg.DeepCopyObject().(v1alpha1.DeviceConfig)
		switch c := cp.(type) {
		case *v1alpha1.AscendConfig:
			c.Sharing.Strategy = v1alpha1.SharingExclusive
		case *v1alpha1.CambriconConfig:
			c.Sharing.Strategy = v1alpha1.SharingExclusive
		}
		cp.EnvVars()["A"] = "2"
		require.Equal(t, v1alpha1.SharingShared, cfg.SharingStrategy(), "the copy does not share the Sharing struct")
		require.Equal(t, v1alpha1.SharingExclusive, cp.SharingStrategy())
		require.Equal(t, map[string]string{"A": "1"}, cfg.EnvVars(), "the copy does not share the env map")
	}
}

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// The kinds of the two real drivers, as their vendors declare them
// (pkg/vendors/ascend, cambricon); pkg/vendors' tests decode through the
// real registry.
const (
	ascendKind    = "AscendConfig"
	cambriconKind = "CambriconConfig"
	// plainDriver is a driver of ours that takes no config.
	plainDriver = "plain.accel-dra.dev"
)

// newDecoder is the decoder of the two real drivers and plainDriver.
func newDecoder(t testing.TB) *v1alpha1.ConfigDecoder {
	t.Helper()
	d, err := v1alpha1.NewConfigDecoder(
		v1alpha1.ConfigDriver{Driver: "ascend.accel-dra.dev", Kind: ascendKind, VisibleEnv: "ASCEND_VISIBLE_DEVICES"},
		v1alpha1.ConfigDriver{Driver: "cambricon.accel-dra.dev", Kind: cambriconKind, VisibleEnv: "CAMBRICON_VISIBLE_DEVICES"},
		v1alpha1.ConfigDriver{Driver: plainDriver, Kind: v1alpha1.NoConfigKind, VisibleEnv: "PLAIN_VISIBLE_DEVICES"},
	)
	require.NoError(t, err)
	return d
}

func TestDecodeConfigIsStrictAndNamesTheField(t *testing.T) {
	tests := []struct {
		name, raw, kind, want string
		env                   map[string]string
		strategy              v1alpha1.SharingStrategy
	}{
		{name: "ascend env", kind: ascendKind,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"1200"}}`,
			env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{name: "cambricon without env", kind: cambriconKind,
			raw: `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`},
		{name: "unknown field", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`,
			want: `strict decoding error: unknown field "envs"`},
		{name: "wrong kind for the driver", kind: cambriconKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig"}`,
			want: "kind AscendConfig is not for this driver: want CambriconConfig"},
		{name: "unknown kind", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"GpuConfig"}`,
			want: `no kind "GpuConfig" is registered`},
		{name: "a kind no driver takes is asked for", kind: "GpuConfig",
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"GpuConfig"}`,
			want: `kind "GpuConfig" is not a config kind: want one of AscendConfig, CambriconConfig`},
		{name: "the kind of another file of the group", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"HardwareProfile"}`,
			want: `no kind "HardwareProfile" is registered`},
		{name: "wrong version", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v2","kind":"AscendConfig"}`,
			want: `want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig`},
		{name: "not JSON", kind: ascendKind, raw: `{"apiVersion":`, want: "decoding: "},
		{name: "wrong type", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":["A=1"]}`,
			want: "decoding: "},
		{name: "reserved variable", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"ASCEND_VISIBLE_DEVICES":"0-7"}}`,
			want: "AscendConfig: env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver"},
		{name: "another vendor's visible-devices variable: a container may hold both vendors' chips, and the CDI writer refuses it at prepare",
			kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"CAMBRICON_VISIBLE_DEVICES":"0"}}`,
			want: "AscendConfig: env[CAMBRICON_VISIBLE_DEVICES]: Forbidden: CAMBRICON_VISIBLE_DEVICES is set by its vendor's driver"},
		{name: "the visible-devices variable of a driver that takes no config is reserved too", kind: cambriconKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","env":{"PLAIN_VISIBLE_DEVICES":"0"}}`,
			want: "CambriconConfig: env[PLAIN_VISIBLE_DEVICES]: Forbidden: PLAIN_VISIBLE_DEVICES is set by its vendor's driver"},
		{name: "a NUL byte in a value: the runtime would fail the container at start", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_IF_IP":"10.0.0.1\u0000"}}`,
			want: `AscendConfig: env[HCCL_IF_IP]: Invalid value: "10.0.0.1\x00": must not contain a NUL byte`},
		{name: "DRA variable", kind: cambriconKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","env":{"DRA_CLAIM_UID":"x"}}`,
			want: "env[DRA_CLAIM_UID]: Forbidden"},
		{name: "bad variable name", kind: cambriconKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","env":{"1X":"x"}}`,
			want: `env[1X]: Invalid value: "1X": a valid environment variable name must consist of`},
		{name: "sharing defaults to Shared", kind: ascendKind,
			raw:      `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{}}`,
			strategy: v1alpha1.SharingShared},
		{name: "exclusive sharing", kind: cambriconKind,
			raw:      `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"Exclusive"}}`,
			strategy: v1alpha1.SharingExclusive},
		{name: "unknown sharing strategy names the field and the allowed values", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"TimeSlicing"}}`,
			want: `AscendConfig: sharing.strategy: Unsupported value: "TimeSlicing": supported values: "Exclusive", "Shared"`},
		{name: "strategy values are case sensitive", kind: cambriconKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"shared"}}`,
			want: `CambriconConfig: sharing.strategy: Unsupported value: "shared": supported values: "Exclusive", "Shared"`},
		{name: "unknown field in sharing", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","sharing":{"strategy":"Shared","memory":"8Gi"}}`,
			want: `strict decoding error: unknown field "sharing.memory"`},
		{name: "every error is reported", kind: ascendKind,
			raw:  `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"DRA_X":"1"},"sharing":{"strategy":"None"}}`,
			want: `AscendConfig: [env[DRA_X]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices, sharing.strategy: Unsupported value: "None": supported values: "Exclusive", "Shared"]`},
	}
	decoder := newDecoder(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decoder.DecodeConfig([]byte(tt.raw), tt.kind)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				require.Nil(t, cfg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.env, cfg.Env)
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
	cfg := &v1alpha1.DeviceConfig{Env: map[string]string{"A": "1"}}
	cfg.Default()
	require.Equal(t, v1alpha1.SharingShared, cfg.SharingStrategy())
	cp, ok := cfg.DeepCopyObject().(*v1alpha1.DeviceConfig)
	require.True(t, ok)
	cp.Sharing.Strategy = v1alpha1.SharingExclusive
	cp.Env["A"] = "2"
	require.Equal(t, v1alpha1.SharingShared, cfg.SharingStrategy(), "the copy does not share the Sharing struct")
	require.Equal(t, v1alpha1.SharingExclusive, cp.SharingStrategy())
	require.Equal(t, map[string]string{"A": "1"}, cfg.Env, "the copy does not share the env map")
}

// Every kind is the one Go type: the same document decodes to the same
// config whichever kind it names, but for its kind.
func TestEveryConfigKindIsOneTypeOnTheWire(t *testing.T) {
	decoder := newDecoder(t)
	require.Equal(t, []string{ascendKind, cambriconKind}, decoder.Kinds())
	const fields = `"env":{"HCCL_CONNECT_TIMEOUT":"1200"},"sharing":{"strategy":"Exclusive"},"enforced":true`
	var got []*v1alpha1.DeviceConfig
	for _, kind := range decoder.Kinds() {
		cfg, err := decoder.DecodeConfig([]byte(`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"`+kind+`",`+fields+`}`), kind)
		require.NoError(t, err)
		require.Equal(t, kind, cfg.Kind)
		cfg.Kind = ""
		got = append(got, cfg)
	}
	require.Equal(t, got[0], got[1])
	require.Equal(t, &v1alpha1.DeviceConfig{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion},
		Env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}, Sharing: &v1alpha1.Sharing{Strategy: v1alpha1.SharingExclusive}, Enforced: true}, got[0])
}

func TestADecoderRefusesDriversAndKindsItCannotTellApart(t *testing.T) {
	ascend := v1alpha1.ConfigDriver{Driver: "ascend.accel-dra.dev", Kind: ascendKind, VisibleEnv: "ASCEND_VISIBLE_DEVICES"}
	for _, tt := range []struct {
		name, want string
		other      v1alpha1.ConfigDriver
	}{
		{"no driver name", `config of driver "": driver: the name is empty`, v1alpha1.ConfigDriver{Kind: "OtherConfig"}},
		{"a driver twice", `config of driver "ascend.accel-dra.dev": driver: listed twice`, v1alpha1.ConfigDriver{Driver: ascend.Driver, Kind: "OtherConfig"}},
		{"a kind twice", `config of driver "other.accel-dra.dev": kind "AscendConfig": driver ascend.accel-dra.dev's already`,
			v1alpha1.ConfigDriver{Driver: "other.accel-dra.dev", Kind: ascendKind}},
		{"the kind of another file of the group", `config of driver "other.accel-dra.dev": kind "HardwareProfile": the kind of another accel-dra.dev/v1alpha1 file`,
			v1alpha1.ConfigDriver{Driver: "other.accel-dra.dev", Kind: v1alpha1.HardwareProfileKind}},
		{"not a kind name: a vendor's \"none\" must become NoConfigKind", `config of driver "other.accel-dra.dev": kind "none": not a kind name`,
			v1alpha1.ConfigDriver{Driver: "other.accel-dra.dev", Kind: "none"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v1alpha1.NewConfigDecoder(ascend, tt.other)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := v1alpha1.NewConfigDecoder(ascend, v1alpha1.ConfigDriver{Driver: "a.example.com"}, v1alpha1.ConfigDriver{Driver: "b.example.com"})
	require.NoError(t, err, "any number of drivers may take no config")
}

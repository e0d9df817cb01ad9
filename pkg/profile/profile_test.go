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

package profile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/profile"
)

func TestEveryProfileTheContractPromisesIsBundledAndLoads(t *testing.T) {
	want := []string{"atlas-300i-duo", "atlas-800-910a", "atlas-800t-a2", "mixed-910b-mlu370", "mlu270", "mlu370-x8", "mlu590"}
	require.Subset(t, profile.Names(), want)
	for _, name := range profile.Names() {
		p, err := profile.Load(registry, name)
		require.NoError(t, err, name)
		require.Equal(t, name, p.Name)
		require.NotEmpty(t, p.Chips, name)
	}
}

func TestLoadReadsAProfileFileByPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: HardwareProfile
name: lab
chips:
- {vendor: cambricon, model: MLU270-S4, count: 1, memory: 16Gi, cores: 16, linkType: pcie, driverVersion: 4.20.18}
`), 0o644))
	p, err := profile.Load(registry, path)
	require.NoError(t, err)
	require.Equal(t, "lab", p.Name)
	require.Equal(t, 1, p.Chips[0].Count)
}

func TestLoadErrorsSayWhatIsWrong(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: accel-dra.dev/v1alpha1\nkind: HardwareProfile\nname: bad\nchips:\n- {vendor: nvidia, model: X, count: 1, memory: 1Gi, cores: 1, linkType: pcie, driverVersion: 1.0.0}\n"), 0o644))
	tests := []struct {
		name, ref, want string
	}{
		{"unknown bundled name lists the bundled ones", "atlas-900", `unknown hardware profile "atlas-900": bundled profiles are atlas-300i-duo, atlas-800-910a,`},
		{"missing file", filepath.Join(t.TempDir(), "nope.yaml"), "reading hardware profile"},
		{"invalid field is named", bad, `bad.yaml: HardwareProfile "bad": chips[0].vendor: "nvidia" is not one of huawei, cambricon`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := profile.Load(registry, tt.ref)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

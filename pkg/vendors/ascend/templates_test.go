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

package ascend_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

const mib = int64(1) << 20

// TestShareGridIsOneUnitEveryTemplateIsAMultipleOf checks the grid of a
// Shared chip's enforced shares: one unit of cores and memory, the
// templates' sizes in it and the whole chip, where every mix of the
// templates that fits the units fits the chip's AI CPUs too.
func TestShareGridIsOneUnitEveryTemplateIsAMultipleOf(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		cores     int
		memory    int64
		unitCores int64
		unitMem   int64
		sizes     []int64
		templates []string
	}{
		{"910B3: both templates, four units", "Ascend910B3", 20, 64 * gib, 5, 16 * gib, []int64{1, 2, 4}, []string{"vir05_1c_16g", "vir10_3c_32g"}},
		{"910B4", "Ascend910B4", 20, 32 * gib, 5, 8 * gib, []int64{1, 2, 4}, []string{"vir05_1c_8g", "vir10_3c_16g"}},
		{"910B2", "Ascend910B2", 24, 64 * gib, 6, 16 * gib, []int64{1, 2, 4}, []string{"vir06_1c_16g", "vir12_3c_32g"}},
		// Eight vir01 would need 8 of the 7 AI CPUs; of each size the
		// template with the fewest AI CPUs.
		{"310P3: no vir01, vir02_1c and vir04_3c", "Ascend310P3", 8, 44280 * mib, 2, 6 * gib, []int64{1, 2, 4}, []string{"vir02_1c", "vir04_3c"}},
		{"memory bounds the units", "Ascend910B3", 20, 48 * gib, 5, 16 * gib, []int64{1, 2, 3}, []string{"vir05_1c_16g", "vir10_3c_32g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chip(tt.model, 1, tt.cores, tt.memory)
			g, ok := ascend.VNPUs{}.ShareGrid(c)
			require.True(t, ok)
			require.NotNil(t, g.Units)
			require.Equal(t, tt.unitCores, g.Units.Cores)
			require.Equal(t, tt.unitMem, g.Units.MemoryBytes)
			require.Equal(t, tt.sizes, g.Units.Sizes)
			var names []string
			for i, tmpl := range g.Units.Templates {
				names = append(names, tmpl.Name)
				require.Equal(t, tt.sizes[i]*tt.unitCores, tmpl.Cores, tmpl.Name)
				require.Equal(t, tt.sizes[i]*tt.unitMem, tmpl.MemoryBytes, tmpl.Name)
			}
			require.Equal(t, tt.templates, names)
			require.Equal(t, g.Units.Whole()*tt.unitMem, g.MaxMemory)
		})
	}
}

func TestShareGridIsNoneWhereTemplatesAreNoMultiplesOfOneUnit(t *testing.T) {
	for _, c := range []struct {
		name string
		chip func() (vendors.ShareGrid, bool)
	}{
		// 2184, 4369, 8738 and 17476 MiB: no multiples of one size.
		{"910A", func() (vendors.ShareGrid, bool) { return ascend.VNPUs{}.ShareGrid(chip("Ascend910A", 0, 30, 32*gib)) }},
		{"no templates", func() (vendors.ShareGrid, bool) { return ascend.VNPUs{}.ShareGrid(chip("Ascend910B1", 0, 25, 64*gib)) }},
		{"room for one unit only: no share is a vNPU", func() (vendors.ShareGrid, bool) {
			return ascend.VNPUs{}.ShareGrid(chip("Ascend910B3", 0, 20, 16*gib))
		}},
		{"cores unknown", func() (vendors.ShareGrid, bool) { return ascend.VNPUs{}.ShareGrid(chip("Ascend910B3", 0, 0, 64*gib)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ok := c.chip()
			require.False(t, ok)
		})
	}
}

func TestSizedTemplateIsTheTemplateOfTheShareOrSaysWhichThereAre(t *testing.T) {
	c := chip("Ascend910B3", 2, 20, 64*gib)
	tests := []struct {
		name          string
		memory, cores int64
		want          string
		err           string
	}{
		{"one unit", 16 * gib, 5, "vir05_1c_16g", ""},
		{"two units", 32 * gib, 10, "vir10_3c_32g", ""},
		{"three units", 48 * gib, 15, "", "a vNPU of chip 2 (Ascend910B3): 3 units is no template's size; the sizes are 1 (vir05_1c_16g: 5 cores, 16384Mi), 2 (vir10_3c_32g: 10 cores, 32768Mi) or 4 (the whole chip)"},
		{"cores and memory apart", 16 * gib, 10, "", "a share of 10 cores and 16384Mi on chip 2 (Ascend910B3) is not a whole number of its units (5 cores and 16384Mi)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ascend.VNPUs{}.SizedTemplate(c, tt.memory, tt.cores)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, tmpl.Name)
			require.Equal(t, ascend.PartitionType, tmpl.Type)
		})
	}
	_, err := ascend.VNPUs{}.SizedTemplate(chip("Ascend910A", 0, 30, 32*gib), 16*gib, 5)
	require.ErrorContains(t, err, "chip 0 (Ascend910A) has no vNPU templates a share can be sized to")
}

// TestTheModelGridIsTheChipsAndItsClassIsInstalled: the webhook's grid of
// a model (its cores, memory ample) is a chip's of that model, and the
// DeviceClass that names the model, whose claims the webhook checks, is
// one the chart installs.
func TestTheModelGridIsTheChipsAndItsClassIsInstalled(t *testing.T) {
	chips := map[string]inventory.Chip{
		"Ascend910B2": chip("Ascend910B2", 0, 24, 64*gib), "Ascend910B3": chip("Ascend910B3", 0, 20, 64*gib),
		"Ascend910B4": chip("Ascend910B4", 0, 20, 32*gib), "Ascend310P3": chip("Ascend310P3", 0, 8, 44280*mib),
	}
	var models []string
	for _, m := range (ascend.Ascend{}).Models() {
		g, ok := ascend.VNPUs{}.ModelUnitGrid(m.Name)
		if !ok {
			continue
		}
		models = append(models, m.Name)
		want, ok := ascend.VNPUs{}.ShareGrid(chips[m.Name])
		require.True(t, ok, m.Name)
		require.Equal(t, *want.Units, g, m.Name)
		require.FileExists(t, filepath.Join("../../../deployments/helm/accel-dra/deviceclasses/models/ascend", vendors.ModelClassName(m.Name)+".yaml"))
	}
	require.ElementsMatch(t, []string{"Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P3"}, models)
}

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

package ascend

import (
	"sort"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Models implements vendors.Vendor: every chip name of aiCoresPerChip
// as its accel-dra.dev/model and every A3 die variant's, with the vNPU
// templates of vnpuModels.
func (Ascend) Models() []vendors.Model {
	models := make([]string, 0, len(aiCoresPerChip)+len(a3Variants))
	for chipName := range aiCoresPerChip {
		models = append(models, modelName(chipName))
	}
	for _, v := range a3Variants {
		models = append(models, chipModel(die91093Name, v))
	}
	out := make([]vendors.Model, 0, len(models))
	for _, name := range models {
		m := vendors.Model{Name: name}
		for _, t := range vnpuModels[m.Name].Templates {
			m.Shapes = append(m.Shapes, vendors.Shape{Type: t.Type, Slug: t.Slug, Template: t.Name})
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

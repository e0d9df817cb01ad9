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

package cambricon

import (
	"sort"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Models implements vendors.Vendor: every product name of
// mluCoresPerChip as its accel-dra.dev/model, with the default sMLU
// profiles where the model supports sMLU. A profile's name is
// "<quota>p.<memory MiB>mb" and the memory is the chip's, so a shape is
// matched by "<quota>p." (PartitionModel is asked with a nominal chip).
func (Cambricon) Models() []vendors.Model {
	out := make([]vendors.Model, 0, len(mluCoresPerChip))
	for name, cores := range mluCoresPerChip {
		m := vendors.Model{Name: name}
		pm, _ := SMLUs{}.Model(inventory.Chip{Model: name, Cores: cores, MemoryBytes: 1 << 30})
		for _, t := range pm.Templates {
			quota, _, _ := strings.Cut(t.Name, ".")
			m.Shapes = append(m.Shapes, vendors.Shape{Type: t.Type, Slug: t.Slug, Template: quota + ".", Prefix: true})
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

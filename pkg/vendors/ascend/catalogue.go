package ascend

import (
	"sort"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Models implements vendors.Vendor: every chip name of aiCoresPerChip
// as its accel-dra.dev/model, with the vNPU templates of vnpuModels.
func (Ascend) Models() []vendors.Model {
	out := make([]vendors.Model, 0, len(aiCoresPerChip))
	for chipName := range aiCoresPerChip {
		m := vendors.Model{Name: modelName(chipName)}
		for _, t := range vnpuModels[m.Name].Templates {
			m.Shapes = append(m.Shapes, vendors.Shape{Type: t.Type, Slug: t.Slug, Template: t.Name})
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

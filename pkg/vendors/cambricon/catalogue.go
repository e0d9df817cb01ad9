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

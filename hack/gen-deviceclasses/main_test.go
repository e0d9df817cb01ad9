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

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/accel-dra/accel-dra/hack/gen-deviceclasses/vendortable"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

const chartClasses = "../../deployments/helm/accel-dra/deviceclasses"

func TestTheCommittedClassesAreWhatTheGeneratorWrites(t *testing.T) {
	files, err := Generate(all.Registry(), chartClasses)
	require.NoError(t, err)
	require.NoError(t, Verify(chartClasses, files), "run make generate")
}

func TestEveryGeneratedClassDecodesStrictlyAndItsSelectorCompiles(t *testing.T) {
	files, err := Generate(all.Registry(), chartClasses)
	require.NoError(t, err)
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true})
	for path, content := range files {
		t.Run(path, func(t *testing.T) {
			obj, _, err := decoder.Decode(content, nil, nil)
			require.NoError(t, err)
			dc, ok := obj.(*resourcev1.DeviceClass)
			require.True(t, ok, "a DeviceClass, not %T", obj)
			require.Equal(t, strings.TrimSuffix(filepath.Base(path), ".yaml"), dc.Name)
			require.Len(t, dc.Spec.Selectors, 1)
			result := compiler.CompileCELExpression(dc.Spec.Selectors[0].CEL.Expression, dracel.Options{})
			require.Nil(t, result.Error, "compiling %q", dc.Spec.Selectors[0].CEL.Expression)
			require.Empty(t, dc.Spec.Config, "quota engines refuse classes with opaque config")
			require.Empty(t, dc.Spec.ExtendedResourceName)
		})
	}
}

// A DeviceClass name is a DNS subdomain: the "_" of a model such as the
// A3 die Ascend910_9392 becomes "-".
func TestEveryGeneratedClassNameIsADNSSubdomain(t *testing.T) {
	files, err := Generate(all.Registry(), chartClasses)
	require.NoError(t, err)
	for path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		require.Empty(t, validation.IsDNS1123Subdomain(name), "DeviceClass %s", name)
	}
	require.Contains(t, files, filepath.Join(ModelsDir, "ascend", "ascend910-9392.accel-dra.dev.yaml"))
}

// The contract (docs/architecture.md) names these classes.
func TestTheContractsModelAndShapeClassesAreGenerated(t *testing.T) {
	files, err := Generate(all.Registry(), chartClasses)
	require.NoError(t, err)
	for _, path := range []string{
		"models/ascend/ascend910b3.accel-dra.dev.yaml", "models/ascend/ascend910a.accel-dra.dev.yaml",
		"models/ascend/ascend310p3.accel-dra.dev.yaml", "models/cambricon/mlu370-x8.accel-dra.dev.yaml",
		"models/cambricon/mlu590.accel-dra.dev.yaml",
		"models/ascend/ascend910b3-vir05-1c-16g.accel-dra.dev.yaml", "models/cambricon/mlu370-x8-smlu-25p.accel-dra.dev.yaml",
	} {
		require.Contains(t, files, path)
	}
}

// A shape class matches the partitionTemplate the node agent publishes:
// the catalogue's shapes are the partition templates of the model, and
// each template's name is the shape's (or starts with its prefix).
func TestTheCataloguesShapesAreThePartitionTemplatesTheAgentPublishes(t *testing.T) {
	for _, v := range all.Vendors() {
		for _, m := range v.Models() {
			t.Run(m.Name, func(t *testing.T) {
				// Two memory sizes: a prefix shape must hold for both, an
				// exact one must not depend on the memory.
				for _, memory := range []int64{16 << 30, 23308 << 20} {
					chip := inventory.Chip{Vendor: v.Names().Vendor, Model: m.Name, Cores: 48, MemoryBytes: memory}
					pm, ok := partitions.ModelOf(all.Registry(), chip)
					require.Equal(t, len(m.Shapes) > 0, ok)
					require.Len(t, m.Shapes, len(pm.Templates))
					for i, tpl := range pm.Templates {
						s := m.Shapes[i]
						require.Equal(t, tpl.Slug, s.Slug)
						require.Equal(t, tpl.Type, s.Type)
						if s.Prefix {
							require.True(t, strings.HasPrefix(tpl.Name, s.Template), "%s starts with %s", tpl.Name, s.Template)
						} else {
							require.Equal(t, tpl.Name, s.Template)
						}
					}
				}
			})
		}
	}
}

func TestVerifyNamesEveryFileThatDiffers(t *testing.T) {
	want := map[string][]byte{"models/a/x.yaml": []byte("x\n"), "models/a/y.yaml": []byte("y\n")}
	tests := []struct {
		name  string
		have  map[string]string
		error string
	}{
		{"the same", map[string]string{"models/a/x.yaml": "x\n", "models/a/y.yaml": "y\n"}, ""},
		{"one missing", map[string]string{"models/a/x.yaml": "x\n"}, "models/a/y.yaml is missing"},
		{"one stale", map[string]string{"models/a/x.yaml": "x\n", "models/a/y.yaml": "z\n"}, "models/a/y.yaml is stale"},
		{"one left over", map[string]string{"models/a/x.yaml": "x\n", "models/a/y.yaml": "y\n", "models/b/z.yaml": "z\n"},
			"models/b/z.yaml is not generated any more"},
		{"no directory", nil, "models/a/x.yaml is missing, models/a/y.yaml is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for path, content := range tc.have {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644))
			}
			err := Verify(dir, want)
			if tc.error == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.error)
			// Write repairs it.
			require.NoError(t, Write(dir, want))
			require.NoError(t, Verify(dir, want))
		})
	}
}

func TestAClassNameTakenByATopLevelClassStopsTheGenerator(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mlu590.accel-dra.dev.yaml"), []byte("{}\n"), 0o644))
	_, err := Generate(all.Registry(), dir)
	require.ErrorContains(t, err, "DeviceClass mlu590.accel-dra.dev of vendor cambricon: the name is taken by")
}

func TestTheCommittedVendorTableAndAcceleratorClassAreWhatTheGeneratorWrites(t *testing.T) {
	content, err := vendortable.Render(all.Registry())
	require.NoError(t, err)
	require.NoError(t, VerifyFile(filepath.Join("../../deployments/helm/accel-dra", vendortable.Path), content), "run make generate")
	require.NoError(t, VerifyFile(filepath.Join(chartClasses, vendortable.AcceleratorClass+".yaml"), vendortable.Accelerator(all.Registry())), "run make generate")
}

func TestVerifyFileSaysWhatIsWrongAndRunWritesIt(t *testing.T) {
	dir := t.TempDir()
	classes, table := filepath.Join(dir, "deviceclasses"), filepath.Join(dir, "vendors.yaml")
	require.NoError(t, os.MkdirAll(classes, 0o755))
	require.ErrorContains(t, run(all.Registry(), classes, table, true), "vendors.yaml is missing: run make generate")
	require.NoError(t, os.WriteFile(table, []byte("{}\n"), 0o644))
	require.ErrorContains(t, run(all.Registry(), classes, table, true), "vendors.yaml is stale: run make generate")
	require.NoError(t, run(all.Registry(), classes, table, false))
	require.NoError(t, run(all.Registry(), classes, table, true))
	accelerator := filepath.Join(classes, vendortable.AcceleratorClass+".yaml")
	require.NoError(t, os.Remove(accelerator))
	require.ErrorContains(t, run(all.Registry(), classes, table, true), "accelerator.accel-dra.dev.yaml is missing: run make generate")
}

// The accelerator class selects every vendor's whole chips: a third
// vendor's too.
func TestTheAcceleratorClassListsEveryDriver(t *testing.T) {
	reg, err := all.Registry().With(vendortest.Acme{})
	require.NoError(t, err)
	require.Contains(t, string(vendortable.Accelerator(reg)), `device.driver in ["acme.accel-dra.dev", "ascend.accel-dra.dev", "cambricon.accel-dra.dev"] && device.attributes["accel-dra.dev"].type == "chip"`)
}

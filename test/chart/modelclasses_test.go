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

package chart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// modelsDir holds the per-model and per-shape classes hack/gen-deviceclasses
// writes, one directory per vendor; relative to this package, for the
// package-level cases.
const modelsDir = "../../deployments/helm/accel-dra/deviceclasses/models"

// modelClasses lists the generated classes of vendors, by file name.
func modelClasses(vendors ...string) []string {
	var out []string
	for _, v := range vendors {
		files, err := filepath.Glob(filepath.Join(modelsDir, v, "*.yaml"))
		if err != nil || len(files) == 0 {
			panic(fmt.Sprintf("no generated DeviceClasses of %s under %s (make generate): %v", v, modelsDir, err))
		}
		for _, f := range files {
			out = append(out, strings.TrimSuffix(filepath.Base(f), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// withModels is top with the generated classes of vendors, sorted.
func withModels(top []string, vendors ...string) []string {
	out := slices.Concat(top, modelClasses(vendors...))
	sort.Strings(out)
	return out
}

// classFiles reads every DeviceClass file of the chart, top-level and
// generated, by class name.
func classFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join(chartDir(t), "deviceclasses")
	top, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	models, err := filepath.Glob(filepath.Join(dir, "models", "*", "*.yaml"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range slices.Concat(top, models) {
		content, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		require.NotContains(t, out, name, "two files of DeviceClass %s", name)
		out[name] = string(content)
	}
	return out
}

// installedModelClasses are the rendered DeviceClasses that are not
// top-level ones, sorted.
func installedModelClasses(r *rendering) []string {
	var out []string
	for name := range r.deviceClasses() {
		if !slices.Contains(topClasses, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

func TestThePerModelClassesAreSwitchedAsAGroupWithTheirVendor(t *testing.T) {
	all := modelClasses("ascend", "cambricon")
	tests := []struct {
		name   string
		values string
		want   []string
	}{
		{"on by default", "", all},
		{"the group off", "modelDeviceClasses: {enabled: false}", nil},
		{"two excluded", "modelDeviceClasses: {exclude: [mlu270-s4.accel-dra.dev, ascend910b3-vir10-3c-32g.accel-dra.dev]}",
			without(all, "mlu270-s4.accel-dra.dev", "ascend910b3-vir10-3c-32g.accel-dra.dev")},
		{"Cambricon disabled", "vendors: {cambricon: {enabled: false}}", modelClasses("ascend")},
		{"Ascend disabled", "vendors: {ascend: {enabled: false}}", modelClasses("cambricon")},
		{"a model and a shape the chart does not have", `
modelDeviceClasses:
  extra:
  - {vendor: ascend, model: Ascend910C}
  - {vendor: cambricon, model: MLU580, template: 50p}
`, withModels([]string{"ascend910c.accel-dra.dev", "mlu580-smlu-50p.accel-dra.dev"}, "ascend", "cambricon")},
		{"extra ones only, one of a disabled vendor", `
vendors: {cambricon: {enabled: false}}
modelDeviceClasses:
  enabled: false
  extra:
  - {vendor: ascend, model: Ascend910B4-1, template: vir05_1c_8g}
  - {vendor: cambricon, model: MLU580}
`, []string{"ascend910b4-1-vir05-1c-8g.accel-dra.dev"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := renderValues(t, "model classes: "+tc.name, tc.values)
			require.Equal(t, tc.want, installedModelClasses(r))
		})
	}
	t.Run("an extra class selects what its values say", func(t *testing.T) {
		r := renderValues(t, "model classes: extra ones only, one of a disabled vendor", "")
		dc := r.deviceClasses()["ascend910b4-1-vir05-1c-8g.accel-dra.dev"].object.(*resourcev1.DeviceClass)
		require.Equal(t, `device.driver == "ascend.accel-dra.dev" && device.attributes["accel-dra.dev"].type == "vnpu" && device.attributes["accel-dra.dev"].model == "Ascend910B4-1" && device.attributes["ascend.accel-dra.dev"].partitionTemplate == "vir05_1c_8g"`,
			dc.Spec.Selectors[0].CEL.Expression)
	})
}

// extraEntry is the modelDeviceClasses.extra entry a generated file names
// in its second comment line.
func extraEntry(t *testing.T, name, content string) map[string]string {
	t.Helper()
	_, after, ok := strings.Cut(content, "modelDeviceClasses.extra: [")
	require.True(t, ok, "%s names its modelDeviceClasses.extra entry", name)
	line, _, _ := strings.Cut(after, "\n")
	var e map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(strings.TrimSuffix(line, "]")), &e), "%s: %s", name, line)
	return e
}

// The helper that renders modelDeviceClasses.extra writes, for every
// generated class's model and template, the generated file byte for byte.
func TestTheExtraHelperWritesWhatTheGeneratorWrites(t *testing.T) {
	files := classFiles(t)
	generated := modelClasses("ascend", "cambricon")
	var extra []map[string]string
	for _, name := range generated {
		extra = append(extra, extraEntry(t, name, files[name]))
	}
	values, err := yaml.Marshal(map[string]any{"modelDeviceClasses": map[string]any{"enabled": false, "extra": extra}})
	require.NoError(t, err)
	r := renderValues(t, "model classes: every generated one as extra", string(values))
	require.Equal(t, generated, installedModelClasses(r))
	decoded := map[string]*resourcev1.DeviceClass{}
	for _, d := range r.docs {
		if dc, ok := d.object.(*resourcev1.DeviceClass); ok {
			decoded[dc.Name] = dc
		}
	}
	for name, doc := range r.deviceClasses() {
		if !slices.Contains(generated, name) {
			continue
		}
		require.Equal(t, strings.TrimSpace(files[name]), strings.TrimSpace(doc.raw), "DeviceClass %s", name)
		want, err := decodeDocument(files[name])
		require.NoError(t, err)
		require.Equal(t, want, decoded[name], "DeviceClass %s", name)
	}
}

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

package docs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// registry is the vendors the binaries serve; configs decodes the opaque
// configs of their drivers as the webhook and the node agent do.
var (
	registry = all.Registry()
	configs  = mustConfigDecoder()
)

func mustConfigDecoder() *v1alpha1.ConfigDecoder {
	d, err := registry.ConfigDecoder()
	if err != nil {
		panic(err)
	}
	return d
}

var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// Every YAML example is a file the tests use, shown whole (file=) or in
// part (from=), so a page cannot drift from what runs: the block must be
// that file or an excerpt of it, and the file must decode strictly.
func TestEveryYAMLBlockIsAFileOrAnExcerptOfOneAndDecodes(t *testing.T) {
	sources := map[string]bool{}
	n := 0
	for _, pg := range pages(t) {
		for _, b := range pg.blocks {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			n++
			text := strings.Join(b.lines, "\n")
			require.NoError(t, parseYAMLStream([]byte(text)), "%s does not parse", b)
			file, whole := b.directive["file"], true
			if file == "" {
				file, whole = b.directive["from"], false
			}
			require.NotEmpty(t, file, "%s: say which file the example is with <!-- doc: file=PATH --> (the whole file) or <!-- doc: from=PATH --> (an excerpt)", b)
			data, err := os.ReadFile(filepath.Join(repoRoot, file))
			require.NoError(t, err, "%s: reading its source", b)
			if whole {
				require.Equal(t, strings.TrimRight(string(data), "\n"), strings.TrimRight(text, "\n"), "%s differs from %s: copy the file into the page again", b, file)
			} else {
				require.NoError(t, excerptOf(b.lines, strings.Split(string(data), "\n")), "%s is not an excerpt of %s", b, file)
			}
			sources[file] = true
		}
	}
	require.Greater(t, n, 10, "few YAML blocks found: is the fence pattern broken?")
	for file := range sources {
		require.NoError(t, decodeFile(file), "the source of a YAML example")
	}
}

// A CEL example (```cel) is lines of one of the files the tests allocate,
// in the order they appear there.
func TestEveryCELBlockIsTakenFromAFile(t *testing.T) {
	n := 0
	for _, pg := range pages(t) {
		for _, b := range pg.blocks {
			if b.lang != "cel" {
				continue
			}
			n++
			file := b.directive["from"]
			require.NotEmpty(t, file, "%s: say which file the expressions come from with <!-- doc: from=PATH -->", b)
			data, err := os.ReadFile(filepath.Join(repoRoot, file))
			require.NoError(t, err, "%s: reading its source", b)
			rest := string(data)
			for _, l := range b.lines {
				l = strings.TrimSpace(l)
				if l == "" {
					continue
				}
				i := strings.Index(rest, l)
				require.GreaterOrEqual(t, i, 0, "%s: %q is not in %s (after the lines before it)", b, l, file)
				rest = rest[i+len(l):]
			}
		}
	}
	require.Greater(t, n, 3)
}

func parseYAMLStream(data []byte) error {
	return eachDocument(data, func(raw []byte) error {
		var v any
		return yaml.Unmarshal(raw, &v)
	})
}

// eachDocument calls f with every document of a YAML stream, and says
// which document failed.
func eachDocument(data []byte, f func(raw []byte) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil {
			err = f(raw)
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
	}
}

// excerptOf reports whether block is a run of lines of file, the same up
// to one indentation added to every line (a fragment cut out of a deeper
// object); a line `# ...` in the block stands for lines left out.
func excerptOf(block, file []string) error {
	for len(block) > 0 && strings.TrimSpace(block[0]) == "" {
		block = block[1:]
	}
	for len(block) > 0 && strings.TrimSpace(block[len(block)-1]) == "" {
		block = block[:len(block)-1]
	}
	if len(block) == 0 {
		return errors.New("empty block")
	}
	for start := range file {
		indent, ok := strings.CutSuffix(file[start], block[0])
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		if matchFrom(block, file, start, indent) {
			return nil
		}
	}
	return fmt.Errorf("no run of lines of the file matches the block starting %q", block[0])
}

func isGap(l string) bool {
	l = strings.TrimSpace(l)
	return l == "# ..." || l == "# …"
}

func matchFrom(block, file []string, at int, indent string) bool {
	if len(block) == 0 {
		return true
	}
	if isGap(block[0]) {
		for skip := at; skip <= len(file); skip++ {
			if matchFrom(block[1:], file, skip, indent) {
				return true
			}
		}
		return false
	}
	if at >= len(file) {
		return false
	}
	want := block[0]
	if strings.TrimSpace(want) != "" {
		want = indent + want
	}
	if strings.TrimRight(file[at], " ") != strings.TrimRight(want, " ") {
		return false
	}
	return matchFrom(block[1:], file, at+1, indent)
}

// decodeFile decodes every document of a file strictly into its Go type:
// Kubernetes kinds through client-go's scheme, with the opaque configs
// for our drivers and our claim status data decoded too, and our own
// kinds through api/accel-dra.dev/v1alpha1. Kinds of other projects (a
// PodMonitor) are only parsed.
func decodeFile(file string) error {
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if err := eachDocument(data, decodeDocument); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

func decodeDocument(raw []byte) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("parsing: %w", err)
	}
	switch {
	case meta.Kind == "":
		return nil // comments only, or a fragment
	case meta.APIVersion == v1alpha1.GroupVersion && meta.Kind == v1alpha1.SimulatedClusterKind:
		_, err := v1alpha1.ParseSimulatedCluster("document", raw)
		return err
	case meta.APIVersion == v1alpha1.GroupVersion && meta.Kind == v1alpha1.HardwareProfileKind:
		_, err := v1alpha1.ParseHardwareProfile("document", raw, registry.ProfileVendors())
		return err
	case meta.APIVersion == v1alpha1.GroupVersion:
		_, err := configs.DecodeConfig(mustJSON(raw), meta.Kind)
		return err
	}
	obj, _, err := strictDecoder.Decode(raw, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		return nil // another project's kind: parsed above
	}
	if err != nil {
		return fmt.Errorf("decoding %s %s: %w", meta.APIVersion, meta.Kind, err)
	}
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		if err := decodeConfigs("spec.devices.config", o.Spec.Devices.Config); err != nil {
			return err
		}
		return decodeStatus(o.Status)
	case *resourceapi.ResourceClaimTemplate:
		return decodeConfigs("spec.spec.devices.config", o.Spec.Spec.Devices.Config)
	case *resourceapi.DeviceClass:
		var cfgs []resourceapi.DeviceClaimConfiguration
		for _, c := range o.Spec.Config {
			cfgs = append(cfgs, resourceapi.DeviceClaimConfiguration{DeviceConfiguration: c.DeviceConfiguration})
		}
		return decodeConfigs("spec.config", cfgs)
	}
	return nil
}

func mustJSON(y []byte) []byte {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return y
	}
	return j
}

func decodeConfigs(path string, cfgs []resourceapi.DeviceClaimConfiguration) error {
	parts := strings.Split(path, ".")
	list := field.NewPath(parts[0], parts[1:]...)
	for i, c := range cfgs {
		if c.Opaque == nil {
			continue
		}
		_, err := configs.DecodeOpaqueConfig(v1alpha1.OpaqueParametersPath(list, i), c.Opaque.Driver, c.Opaque.Parameters.Raw)
		if err != nil && !errors.Is(err, v1alpha1.ErrNotOurs) {
			return err
		}
	}
	return nil
}

// decodeStatus checks our entries' data strictly, so an example cannot
// show a key the agent does not write.
func decodeStatus(status resourceapi.ResourceClaimStatus) error {
	for i, d := range status.Devices {
		if _, ours := registry.ByDriver(d.Driver); !ours || d.Data == nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(d.Data.Raw))
		dec.DisallowUnknownFields()
		var data v1alpha1.DeviceStatusData
		if err := dec.Decode(&data); err != nil {
			return fmt.Errorf("status.devices[%d].data: %w", i, err)
		}
	}
	return nil
}

func TestExcerptMatching(t *testing.T) {
	file := strings.Split("spec:\n  devices:\n    requests:\n    - name: a\n      count: 1\n    constraints:\n    - requests: [a]", "\n")
	for _, tc := range []struct {
		name  string
		block string
		ok    bool
	}{
		{"a run of lines re-indented", "requests:\n- name: a\n  count: 1", true},
		{"a gap marker skips lines", "requests:\n# ...\nconstraints:", true},
		{"a changed line", "requests:\n- name: b", false},
		{"lines out of order", "constraints:\nrequests:", false},
		{"indentation that differs between lines", "requests:\n  - name: a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := excerptOf(strings.Split(tc.block, "\n"), file)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestDecodingASourceFileIsStrict(t *testing.T) {
	for _, tc := range []struct {
		file    string
		wantErr string
	}{
		{"docs/examples/opaque-config.yaml", ""},
		{"docs/examples/claim-status.yaml", ""},
		{"docs/examples/podmonitor.yaml", ""},
		{"docs/examples/cluster-chip-modes.yaml", ""},
		{"docs/examples/critical-pods-quota.yaml", ""},
		{"docs/examples/vnpu-share.yaml", ""},
		{"test/docs/testdata/bad-opaque-config.yaml", `unknown field "envs"`},
		{"test/docs/testdata/bad-status-data.yaml", `status.devices[0].data: json: unknown field "modell"`},
		{"test/docs/testdata/bad-claim-field.yaml", `unknown field "spec.devices.request"`},
		{"test/docs/testdata/bad-cluster-field.yaml", `unknown field "chips"`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			err := decodeFile(tc.file)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, tc.file+": document 1", "the error names the file and document")
		})
	}
}

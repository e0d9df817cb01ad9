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

// Command gen-deviceclasses writes the chart's per-model and
// per-partition-shape DeviceClasses, one file per class, from the vendors'
// catalogue (Vendor.Models of pkg/vendors/all):
//
//	deployments/helm/accel-dra/deviceclasses/models/<vendor>/<model>.accel-dra.dev.yaml
//	deployments/helm/accel-dra/deviceclasses/models/<vendor>/<model>-<slug>.accel-dra.dev.yaml
//
// Each class selects exactly one model's whole chips, or one partition
// shape of one model, with no claim-side CEL needed: what quota engines
// that count devices per DeviceClass can count. The chart's helper
// "accel-dra.modelDeviceClass" renders the same text for a
// modelDeviceClasses.extra entry (test/chart checks both agree).
//
// It also writes the chart's vendor table (-table, package vendortable),
// which the chart's templates range over, and the class of a whole chip of
// any vendor, deviceclasses/accelerator.accel-dra.dev.yaml, which lists
// their drivers.
//
// make generate runs it; make verify-generate runs it with -verify, which
// writes nothing and fails when a file is missing, stale or left over.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/accel-dra/accel-dra/hack/gen-deviceclasses/vendortable"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// skipModels are catalogue models without a class of their own, and why
// (a name clash is an error otherwise).
var skipModels = map[string]string{
	"Ascend910": "the A3 die's class name would be the chart's ascend910.accel-dra.dev, every 910 chip (huawei.com/Ascend910)",
}

func main() {
	dir := flag.String("dir", "deployments/helm/accel-dra/deviceclasses", "the chart's deviceclasses directory; the classes go into its models/ subdirectory")
	table := flag.String("table", filepath.Join("deployments/helm/accel-dra", vendortable.Path), "the chart's vendor table")
	verify := flag.Bool("verify", false, "write nothing; fail when the files differ from what would be written")
	flag.Parse()
	if err := run(all.Registry(), *dir, *table, *verify); err != nil {
		fmt.Fprintln(os.Stderr, "gen-deviceclasses:", err)
		os.Exit(1)
	}
}

// run generates the classes into dir and the vendor table into table, or
// with verify checks them.
func run(reg vendors.Registry, dir, table string, verify bool) error {
	files, err := Generate(reg, dir)
	if err != nil {
		return err
	}
	content, err := vendortable.Render(reg)
	if err != nil {
		return fmt.Errorf("the vendor table: %w", err)
	}
	single := map[string][]byte{table: content, filepath.Join(dir, vendortable.AcceleratorClass+".yaml"): vendortable.Accelerator(reg)}
	if verify {
		errs := []error{Verify(dir, files)}
		for path, content := range single {
			errs = append(errs, VerifyFile(path, content))
		}
		return errors.Join(errs...)
	}
	if err := Write(dir, files); err != nil {
		return err
	}
	for path, content := range single {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// VerifyFile fails when the file at path is not content.
func VerifyFile(path string, content []byte) error {
	got, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("%s is missing: run make generate", path)
	case err != nil:
		return fmt.Errorf("reading %s: %w", path, err)
	case !bytes.Equal(got, content):
		return fmt.Errorf("%s is stale: run make generate", path)
	}
	return nil
}

// ModelsDir is the subdirectory of the chart's deviceclasses directory
// the generated classes live in, one directory per vendor (its --vendors
// option, which the chart's vendors.<option> switch matches).
const ModelsDir = "models"

// Generate returns the generated files of the models of reg's vendors by
// their path under dir. dir is read for the top-level classes, whose names
// a generated class must not take.
func Generate(reg vendors.Registry, dir string) (map[string][]byte, error) {
	taken := map[string]string{}
	top, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, f := range top {
		taken[strings.TrimSuffix(filepath.Base(f), ".yaml")] = f
	}
	out := map[string][]byte{}
	add := func(vendor, class string, content []byte) error {
		path := filepath.Join(ModelsDir, vendor, class+".yaml")
		if other, ok := taken[class]; ok {
			return fmt.Errorf("DeviceClass %s of vendor %s: the name is taken by %s", class, vendor, other)
		}
		taken[class] = path
		out[path] = content
		return nil
	}
	for _, v := range reg.All() {
		n := v.Names()
		for _, m := range v.Models() {
			if _, skip := skipModels[m.Name]; skip {
				continue
			}
			e := Entry{Vendor: n.Option, Driver: n.Driver, Model: m.Name}
			if err := add(n.Option, e.ClassName(), e.Render()); err != nil {
				return nil, err
			}
			for _, s := range m.Shapes {
				e.Shape = &s
				if err := add(n.Option, e.ClassName(), e.Render()); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// Entry is one generated class: a model's whole chips, or with Shape one
// partition shape of it.
type Entry struct {
	// Vendor is the vendor's --vendors option, the chart's vendor key.
	Vendor, Driver, Model string
	Shape                 *vendors.Shape
}

// ClassName is <model> or <model>-<slug>, lowercased, with the domain;
// "_" becomes "-", which a DeviceClass name cannot hold (the A3 die
// Ascend910_9392 is ascend910-9392.accel-dra.dev).
func (e Entry) ClassName() string {
	name := e.Model
	if e.Shape != nil {
		name += "-" + e.Shape.Slug
	}
	return strings.ReplaceAll(strings.ToLower(name), "_", "-") + "." + names.Domain
}

// ValuesTemplate is the chart's modelDeviceClasses.extra "template" of
// the shape: the template name, or for a prefix shape the prefix without
// its final ".".
func (e Entry) ValuesTemplate() string {
	if e.Shape.Prefix {
		return strings.TrimSuffix(e.Shape.Template, ".")
	}
	return e.Shape.Template
}

// Render is the class's file. The chart's "accel-dra.modelDeviceClass"
// writes the same bytes: change both together.
func (e Entry) Render() []byte {
	var b bytes.Buffer
	typ, match := names.TypeChip, ""
	if e.Shape == nil {
		fmt.Fprintf(&b, "# Whole %s chips: one model, for quota engines that count devices per DeviceClass.\n", e.Model)
		fmt.Fprintf(&b, "# Written by hack/gen-deviceclasses (make generate), or by the chart for modelDeviceClasses.extra: [{vendor: %s, model: %s}]\n", e.Vendor, e.Model)
	} else {
		typ = e.Shape.Type
		fmt.Fprintf(&b, "# Partitions (%s) of template %s of %s chips: one partition shape, for quota engines that count devices per DeviceClass.\n", typ, e.ValuesTemplate(), e.Model)
		fmt.Fprintf(&b, "# Written by hack/gen-deviceclasses (make generate), or by the chart for modelDeviceClasses.extra: [{vendor: %s, model: %s, template: %s}]\n", e.Vendor, e.Model, e.ValuesTemplate())
		op := " == %q"
		if e.Shape.Prefix {
			op = ".startsWith(%q)"
		}
		match = fmt.Sprintf(" && device.attributes[%q].%s"+op, e.Driver, resourceslices.AttrPartitionTemplate, e.Shape.Template)
	}
	fmt.Fprintf(&b, "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: %s\nspec:\n  selectors:\n  - cel:\n      expression: >-\n", e.ClassName())
	fmt.Fprintf(&b, "        device.driver == %q && device.attributes[%q].type == %q && device.attributes[%q].model == %q%s\n",
		e.Driver, names.Domain, typ, names.Domain, e.Model, match)
	return b.Bytes()
}

// Write makes dir/models what files say: it writes every file and removes
// the other *.yaml files under it (a model no longer in the catalogue).
func Write(dir string, files map[string][]byte) error {
	stale, err := existing(dir)
	if err != nil {
		return err
	}
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("creating the directory of %s: %w", full, err)
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", full, err)
		}
		delete(stale, path)
	}
	for path := range stale {
		if err := os.Remove(filepath.Join(dir, path)); err != nil {
			return fmt.Errorf("removing the stale %s: %w", path, err)
		}
	}
	return nil
}

// Verify fails, naming every file, when dir/models is not what files say.
func Verify(dir string, files map[string][]byte) error {
	have, err := existing(dir)
	if err != nil {
		return err
	}
	var bad []string
	for path, content := range files {
		got, ok := have[path]
		switch {
		case !ok:
			bad = append(bad, path+" is missing")
		case !bytes.Equal(got, content):
			bad = append(bad, path+" is stale")
		}
		delete(have, path)
	}
	for path := range have {
		bad = append(bad, path+" is not generated any more")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%s: %s: run make generate", filepath.Join(dir, ModelsDir), strings.Join(bad, ", "))
	}
	return nil
}

// existing reads the *.yaml files under dir/models by their path under dir.
func existing(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	root := filepath.Join(dir, ModelsDir)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || filepath.Ext(path) != ".yaml" {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		out[rel] = content
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	return out, nil
}

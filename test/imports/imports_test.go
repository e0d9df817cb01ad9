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

// Package imports checks the layering of the module's packages with the go
// command's own view of them (go list -deps).
package imports_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/accel-dra/accel-dra"

type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
	Incomplete                         bool
}

// TestNoPackageImportsOneAboveIt: a package below another in the tree
// (pkg/vendors/ascend below pkg/vendors) may use its parent, but nothing
// that itself builds on that parent. Otherwise the lower package sits
// above its parent's users, as when a vendor package imported
// pkg/partitions, which looked vendors up in pkg/vendors. Test files
// count too.
func TestNoPackageImportsOneAboveIt(t *testing.T) {
	pkgs := listPackages(t)
	closure := depsOf(pkgs)
	var bad []string
	for path, p := range pkgs {
		parent := parentOf(pkgs, path)
		if parent == "" {
			continue
		}
		uses := map[string]bool{}
		for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, i := range list {
				if _, ours := pkgs[i]; !ours || i == path {
					continue
				}
				uses[i] = true
				for j := range closure(i) {
					uses[j] = true
				}
			}
		}
		for q := range uses {
			if q == parent || strings.HasPrefix(q, parent+"/") || q == path {
				continue
			}
			if closure(q)[parent] {
				bad = append(bad, strings.TrimPrefix(path, module+"/")+" uses "+strings.TrimPrefix(q, module+"/")+", which builds on "+strings.TrimPrefix(parent, module+"/")+", the package above it")
			}
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad)
}

// listPackages is the module's packages, by import path, as go list sees
// them.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json", module+"/...").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs[p.ImportPath] = p
	}
	require.Contains(t, pkgs, module+"/pkg/vendors", "go list lists the module's packages")
	return pkgs
}

// depsOf returns the function giving the module packages a package's
// code (not its tests) uses, directly or not.
func depsOf(pkgs map[string]pkg) func(string) map[string]bool {
	deps := map[string]map[string]bool{}
	var closure func(string) map[string]bool
	closure = func(path string) map[string]bool {
		if d, ok := deps[path]; ok {
			return d
		}
		d := map[string]bool{}
		deps[path] = d
		for _, i := range pkgs[path].Imports {
			if _, ours := pkgs[i]; !ours {
				continue
			}
			d[i] = true
			for j := range closure(i) {
				d[j] = true
			}
		}
		return d
	}
	return closure
}

// TestTheAPIUsesNoPackageOutsideIt: the file formats users write
// (api/...) are the bottom of the module. Their code and tests use no
// package outside api/, so no vendor (pkg/vendors/<vendor>,
// pkg/vendors/all) and no registry of their own: each binary's main hands
// them its registry's vendors (vendors.Registry.ConfigDecoder,
// ProfileVendors). Any package may then use the API, pkg/vendors
// included.
func TestTheAPIUsesNoPackageOutsideIt(t *testing.T) {
	pkgs := listPackages(t)
	closure := depsOf(pkgs)
	api := module + "/api/"
	var bad []string
	for path, p := range pkgs {
		if !strings.HasPrefix(path, api) {
			continue
		}
		for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, i := range list {
				if _, ours := pkgs[i]; !ours {
					continue
				}
				for q := range closure(i) {
					if !strings.HasPrefix(q, api) {
						bad = append(bad, strings.TrimPrefix(path, module+"/")+" uses "+strings.TrimPrefix(q, module+"/")+" (through "+strings.TrimPrefix(i, module+"/")+")")
					}
				}
				if !strings.HasPrefix(i, api) {
					bad = append(bad, strings.TrimPrefix(path, module+"/")+" uses "+strings.TrimPrefix(i, module+"/"))
				}
			}
		}
	}
	require.Contains(t, pkgs, module+"/api/accel-dra.dev/v1alpha1", "go list lists the API package")
	sort.Strings(bad)
	require.Empty(t, bad)
}

// parentOf is the nearest package of the module in a folder above path's,
// "" for none.
func parentOf(pkgs map[string]pkg, path string) string {
	for dir := path; ; {
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			return ""
		}
		dir = dir[:i]
		if dir == module {
			return ""
		}
		if _, ok := pkgs[dir]; ok {
			return dir
		}
	}
}

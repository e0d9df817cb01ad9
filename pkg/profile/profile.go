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

// Package profile finds hardware profiles: the ones bundled in the binary
// (demo/profiles) by name, or a user's file by path.
package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/demo/profiles"
	"github.com/accel-dra/accel-dra/pkg/inputfile"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Names lists the bundled profiles, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(profiles.FS, ".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Load returns a bundled profile by name, or reads ref as a file when it
// contains a path separator or ends in .yaml/.yml; its chips' vendors are
// those of reg.
func Load(reg vendors.Registry, ref string) (*v1alpha1.HardwareProfile, error) {
	if strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml") {
		data, err := inputfile.Read("hardware profile", ref)
		if err != nil {
			return nil, err
		}
		return v1alpha1.ParseHardwareProfile(ref, data, reg.ProfileVendors())
	}
	data, err := fs.ReadFile(profiles.FS, ref+".yaml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("unknown hardware profile %q: bundled profiles are %s (or give a path to a profile file)", ref, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("reading bundled profile %q: %w", ref, err)
	}
	p, err := v1alpha1.ParseHardwareProfile("profile "+ref, data, reg.ProfileVendors())
	if err != nil {
		return nil, err
	}
	if p.Name != ref {
		return nil, fmt.Errorf("bundled profile file %s.yaml names itself %q", ref, p.Name)
	}
	return p, nil
}

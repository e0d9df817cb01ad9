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

package ociimage

import (
	"debug/buildinfo"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// SBOMInput is what the image is made of, for its SPDX document.
type SBOMInput struct {
	// Name and Version of the image (its reference and version label).
	Name, Version string
	// Binaries are the Go binaries of every platform; their modules are
	// read from their build information.
	Binaries []string
	// Packages are the base layer's Debian packages, per Debian
	// architecture.
	Packages map[string][]Package
	// Created is the image's creation time (SOURCE_DATE_EPOCH), so the
	// document is reproducible.
	Created time.Time
}

var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(kind, name, version string) common.ElementID {
	return common.ElementID(kind + "-" + spdxIDUnsafe.ReplaceAllString(name+"-"+version, "-"))
}

// SBOM returns the SPDX 2.3 document of the image: the Go modules its
// binaries are built from (main module and dependencies, with go.sum's
// hashes) and its Debian packages (with the .deb's SHA-256), each with a
// package URL, all contained in the image.
func SBOM(in SBOMInput) (*spdx.Document, error) {
	image := &spdx.Package{
		PackageName: in.Name, PackageSPDXIdentifier: "Image", PackageVersion: in.Version,
		PackageDownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "CONTAINER",
		PackageLicenseConcluded: "NOASSERTION", PackageLicenseDeclared: "NOASSERTION", PackageCopyrightText: "NOASSERTION",
	}
	doc := &spdx.Document{
		SPDXVersion: spdx.Version, DataLicense: spdx.DataLicense, SPDXIdentifier: "DOCUMENT",
		DocumentName:      in.Name,
		DocumentNamespace: "https://github.com/accel-dra/accel-dra/sbom/" + url.PathEscape(in.Name),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "accel-dra-hack-image"}},
			Created:  in.Created.UTC().Format(time.RFC3339),
		},
		Packages: []*spdx.Package{image},
		Relationships: []*spdx.Relationship{{
			RefA: common.MakeDocElementID("", "DOCUMENT"), RefB: common.MakeDocElementID("", "Image"), Relationship: common.TypeRelationshipDescribe,
		}},
	}
	contains := func(p *spdx.Package) {
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", "Image"), RefB: common.MakeDocElementID("", string(p.PackageSPDXIdentifier)), Relationship: common.TypeRelationshipContains,
		})
	}

	type module struct{ path, version, sum string }
	modules := map[module]bool{}
	for _, b := range in.Binaries {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return nil, fmt.Errorf("reading the Go modules of %s: %w", b, err)
		}
		modules[module{info.Main.Path, info.Main.Version, info.Main.Sum}] = true
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			modules[module{d.Path, d.Version, d.Sum}] = true
		}
		modules[module{"stdlib", strings.TrimPrefix(info.GoVersion, "go"), ""}] = true
	}
	var mods []module
	for m := range modules {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].path+"@"+mods[i].version < mods[j].path+"@"+mods[j].version })
	for _, m := range mods {
		p := &spdx.Package{
			PackageName: m.path, PackageSPDXIdentifier: spdxID("Go", m.path, m.version), PackageVersion: m.version,
			PackageDownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "LIBRARY",
			PackageLicenseConcluded: "NOASSERTION", PackageLicenseDeclared: "NOASSERTION", PackageCopyrightText: "NOASSERTION",
			PackageExternalReferences: []*spdx.PackageExternalReference{{
				Category: "PACKAGE-MANAGER", RefType: "purl", Locator: "pkg:golang/" + m.path + "@" + m.version,
			}},
		}
		if m.sum != "" {
			p.PackageComment = "go.sum " + m.sum
		}
		contains(p)
	}

	locks, err := LockOf(in.Packages)
	if err != nil {
		return nil, err
	}
	for _, e := range locks {
		contains(&spdx.Package{
			PackageName: e.Name, PackageSPDXIdentifier: spdxID("Deb", e.Name, e.Version+"-"+e.Architecture), PackageVersion: e.Version,
			PackageSupplier:         &common.Supplier{SupplierType: "Organization", Supplier: "Debian"},
			PackageDownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "LIBRARY",
			PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: e.SHA256}},
			PackageLicenseConcluded: "NOASSERTION", PackageLicenseDeclared: "NOASSERTION", PackageCopyrightText: "NOASSERTION",
			PackageExternalReferences: []*spdx.PackageExternalReference{{
				Category: "PACKAGE-MANAGER", RefType: "purl",
				Locator: debPURL(e),
			}},
		})
	}
	return doc, nil
}

// debPURL is the package URL of a locked Debian 12 package, as the SBOM
// and the provenance name it.
func debPURL(e LockEntry) string {
	return "pkg:deb/debian/" + e.Name + "@" + url.PathEscape(e.Version) + "?arch=" + e.Architecture + "&distro=debian-12"
}

// WriteSBOM writes doc as SPDX JSON to path.
func WriteSBOM(path string, doc *spdx.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the SBOM: %w", err)
	}
	if err := spdxjson.Write(doc, f, spdxjson.Indent("  ")); err != nil {
		f.Close()
		return fmt.Errorf("writing the SBOM %s: %w", path, err)
	}
	return f.Close()
}

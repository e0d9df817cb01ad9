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
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/stretchr/testify/require"
)

// The lock written for a set of packages verifies them, and a package of
// another version or checksum, a missing one or an extra one fails the
// build with the package named.
func TestTheLockFilePinsVersionsAndChecksums(t *testing.T) {
	pkgs := fixturePackages(t, "amd64", "arm64")
	lock, err := LockOf(pkgs)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "debs.lock")
	require.NoError(t, WriteLock(path, lock))
	back, err := ReadLock(path)
	require.NoError(t, err)
	require.Equal(t, lock, back)
	require.NoError(t, VerifyLock(back, pkgs))
	require.Equal(t, libcVersion, Pins(back)["libc6:amd64"], "apt downloads the locked version")

	// Building one platform checks that platform's entries only.
	require.NoError(t, VerifyLock(back, map[string][]Package{"amd64": pkgs["amd64"]}))

	changed := append([]LockEntry(nil), back...)
	for i := range changed {
		if changed[i].Name == "libc6" && changed[i].Architecture == "arm64" {
			changed[i].SHA256 = strings.Repeat("0", 64)
		}
	}
	err = VerifyLock(changed, pkgs)
	require.ErrorContains(t, err, "the base layer's Debian packages do not match the lock (REFRESH_DEBS=1 make image updates both)")
	require.ErrorContains(t, err, "libc6:arm64 is "+libcVersion+" sha256:")
	require.ErrorContains(t, err, ", the lock says "+libcVersion+" sha256:"+strings.Repeat("0", 64))

	err = VerifyLock(append(back[1:], LockEntry{Name: "bash", Architecture: "amd64", Version: "5.2", SHA256: strings.Repeat("1", 64)}), pkgs)
	require.ErrorContains(t, err, back[0].Name+":"+back[0].Architecture+" "+back[0].Version+" is not in the lock")
	require.ErrorContains(t, err, "bash:amd64 is locked but not in the image")
}

func TestABadLockFileIsAnErrorNamingTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "debs.lock")
	require.NoError(t, os.WriteFile(path, []byte("# c\nlibc6 amd64 2.36 sha256:abc\n"), 0o644))
	_, err := ReadLock(path)
	require.EqualError(t, err, path+`:2: want <name> <architecture> <version> sha256:<64 hex digits>, got "libc6 amd64 2.36 sha256:abc"`)
}

// The repository's lock names every base package for both platforms.
func TestTheRepositorysLockCoversEveryBasePackage(t *testing.T) {
	lock, err := ReadLock("../debs.lock")
	require.NoError(t, err)
	pins := Pins(lock)
	for _, p := range BasePackages {
		arches := []string{"amd64", "arm64"}
		if p.ArchIndependent {
			arches = []string{"all"}
		}
		for _, a := range arches {
			require.NotEmpty(t, pins[p.Name+":"+a], "%s:%s is locked", p.Name, a)
		}
	}
	require.Len(t, lock, len(pins))
}

// The SBOM lists the Go modules of the binaries (from their build
// information) and every Debian package with its checksum, as package
// URLs, and reads back as SPDX 2.3.
func TestTheSBOMListsTheGoModulesAndTheDebianPackages(t *testing.T) {
	pkgs := fixturePackages(t, "amd64")
	// A real binary with dependencies: this module's command (a test
	// binary records no dependencies in its build information).
	bin := filepath.Join(t.TempDir(), "image")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/accel-dra/accel-dra/hack/image").CombinedOutput()
	require.NoError(t, err, "%s", out)
	doc, err := SBOM(SBOMInput{Name: "example.com/accel-dra:1.0", Version: "1.0", Binaries: []string{bin}, Packages: pkgs})
	require.NoError(t, err)
	var buf bytes.Buffer
	path := filepath.Join(t.TempDir(), "sbom.spdx.json")
	require.NoError(t, WriteSBOM(path, doc))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	buf.Write(data)
	back, err := spdxjson.Read(&buf)
	require.NoError(t, err)
	require.Equal(t, "SPDX-2.3", back.SPDXVersion)

	purls := map[string]string{}
	for _, p := range back.Packages {
		for _, r := range p.PackageExternalReferences {
			if r.RefType == "purl" {
				purls[r.Locator] = p.PackageName
			}
		}
	}
	require.Contains(t, purls, "pkg:golang/github.com/google/go-containerregistry@v0.22.1", "a module the binary is built from")
	found := false
	for locator := range purls {
		if strings.HasPrefix(locator, "pkg:golang/stdlib@") {
			found = true
		}
	}
	require.True(t, found, "the Go standard library")
	require.Contains(t, purls, "pkg:deb/debian/libc6@"+libcVersion+"?arch=amd64&distro=debian-12")
	for _, p := range back.Packages {
		if p.PackageName == "libc6" {
			require.Len(t, p.PackageChecksums, 1)
			require.Len(t, p.PackageChecksums[0].Value, 64)
		}
	}
	require.NotEmpty(t, back.Relationships)
}

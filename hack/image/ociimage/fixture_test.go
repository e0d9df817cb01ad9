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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"
)

// The tests build the image from stand-in binaries, freshly built for
// each architecture (a small static Go program under each of the three
// names), and from fixture .deb files built with dpkg-deb: the C runtime's
// files at their Debian paths, whose contents are again ELF files of the
// architecture. make image builds from the real binaries and packages, and
// checks the result with Check.

var binaries = []string{"accel-dra-kubeletplugin", "accel-dra-webhook", "accel-dra"}

var (
	standIns   = map[string]string{}
	standInsMu sync.Mutex
	scratch    string
)

func TestMain(m *testing.M) {
	var err error
	if scratch, err = os.MkdirTemp("", "ociimage-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(scratch)
	os.Exit(code)
}

// standIn builds (once per test binary) a static Go program for goarch.
func standIn(t *testing.T, goarch string) string {
	t.Helper()
	standInsMu.Lock()
	defer standInsMu.Unlock()
	if p, ok := standIns[goarch]; ok {
		return p
	}
	dir := filepath.Join(scratch, "standin-"+goarch)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	src := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"accel-dra stand-in\") }\n"), 0o644))
	out := filepath.Join(dir, "standin")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, src)
	cmd.Dir = dir
	// GOFLAGS as make sets it (-trimpath, no DWARF): the standard
	// library is then the one the other builds compiled.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the stand-in for %s: %s", goarch, msg)
	standIns[goarch] = out
	return out
}

// binDir puts the stand-in under each binary's name for each platform.
func binDir(t *testing.T, goarches ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range goarches {
		data, err := os.ReadFile(standIn(t, a))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "linux_"+a), 0o755))
		for _, b := range binaries {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "linux_"+a, b), data, 0o755))
		}
	}
	return dir
}

// A fixture file: content, or a symlink target, or a directory.
type fixtureFile struct {
	path    string
	mode    os.FileMode
	content []byte
	link    string
	dir     bool
}

// fixtureDeb builds a .deb of name version arch holding files into dir.
func fixtureDeb(t *testing.T, dir, name, version, arch string, files []fixtureFile) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: accel-dra tests <tests@accel-dra.dev>\nDescription: fixture of %s\n", name, version, arch, name)
	require.NoError(t, os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(control), 0o644))
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case f.dir:
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.Chmod(p, f.mode))
		case f.link != "":
			require.NoError(t, os.Symlink(f.link, p))
		default:
			require.NoError(t, os.WriteFile(p, f.content, f.mode))
			require.NoError(t, os.Chmod(p, f.mode)) // past the umask
		}
	}
	deb := filepath.Join(dir, name+"_"+version+"_"+arch+".deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", root, deb).CombinedOutput()
	require.NoError(t, err, "dpkg-deb --build %s: %s", name, out)
	return deb
}

const (
	libcVersion   = "2.36-9+deb12u14"
	gccVersion    = "12.2.0-14+deb12u1"
	caVersion     = "20250419~deb12u2"
	baseVersion   = "12.4+deb12u15"
	fixtureCertA  = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	fixtureCertB  = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----" // no final newline
	fixtureNotice = "fixture copyright\n"
)

// fixtureDebs builds the base packages for goarch into dir, as Debian 12
// lays them out (no merged /usr: the loader is under /lib, /lib64 has a
// symlink on amd64), with documentation that the image leaves out. skip
// names packages to leave out.
func fixtureDebs(t *testing.T, dir, goarch string, skip ...string) {
	t.Helper()
	arch := Arches[goarch]
	elfData, err := os.ReadFile(standIn(t, goarch))
	require.NoError(t, err)
	tri := arch.Triplet
	loader := filepath.Base(arch.Loader)
	libc := []fixtureFile{
		{path: "lib/" + tri + "/" + loader, mode: 0o755, content: elfData},
		{path: "lib/" + tri + "/libc.so.6", mode: 0o755, content: elfData},
		{path: "etc/ld.so.conf.d/" + tri + ".conf", mode: 0o644, content: []byte("/usr/local/lib/" + tri + "\n")},
		{path: "usr/share/doc/libc6/copyright", mode: 0o644, content: []byte(fixtureNotice)},
		{path: "usr/share/doc/libc6/changelog.Debian.gz", mode: 0o644, content: []byte("changes")},
		{path: "usr/share/lintian/overrides/libc6", mode: 0o644, content: []byte("override")},
	}
	if goarch == "amd64" {
		libc = append(libc, fixtureFile{path: "lib64/" + loader, link: "/lib/" + tri + "/" + loader})
	} else {
		libc = append(libc, fixtureFile{path: "lib/" + loader, link: tri + "/" + loader})
	}
	debs := map[string]func(){
		"libc6": func() { fixtureDeb(t, dir, "libc6", libcVersion, arch.Debian, libc) },
		"libgcc-s1": func() {
			fixtureDeb(t, dir, "libgcc-s1", gccVersion, arch.Debian, []fixtureFile{
				{path: "lib/" + tri + "/libgcc_s.so.1", mode: 0o644, content: elfData},
				{path: "usr/share/doc/libgcc-s1", link: "gcc-12-base"},
			})
		},
		"libstdc++6": func() {
			fixtureDeb(t, dir, "libstdc++6", gccVersion, arch.Debian, []fixtureFile{
				{path: "usr/lib/" + tri + "/libstdc++.so.6.0.30", mode: 0o644, content: elfData},
				{path: "usr/lib/" + tri + "/libstdc++.so.6", link: "libstdc++.so.6.0.30"},
				{path: "usr/share/gdb/auto-load/usr/lib/" + tri + "/libstdc++.so.6.0.30-gdb.py", mode: 0o644, content: []byte("# gdb")},
				{path: "usr/share/doc/libstdc++6", link: "gcc-12-base"},
			})
		},
		"gcc-12-base": func() {
			fixtureDeb(t, dir, "gcc-12-base", gccVersion, arch.Debian, []fixtureFile{
				{path: "usr/share/doc/gcc-12-base/copyright", mode: 0o644, content: []byte(fixtureNotice)},
				{path: "usr/share/doc/gcc-12-base/README.Debian.gz", mode: 0o644, content: []byte("readme")},
			})
		},
		"ca-certificates": func() {
			if _, err := os.Stat(filepath.Join(dir, "ca-certificates_"+caVersion+"_all.deb")); err == nil {
				return
			}
			fixtureDeb(t, dir, "ca-certificates", caVersion, "all", []fixtureFile{
				{path: "usr/share/ca-certificates/mozilla/B.crt", mode: 0o644, content: []byte(fixtureCertB)},
				{path: "usr/share/ca-certificates/mozilla/A.crt", mode: 0o644, content: []byte(fixtureCertA)},
				{path: "usr/sbin/update-ca-certificates", mode: 0o755, content: []byte("#!/bin/sh\n")},
				{path: "usr/share/doc/ca-certificates/copyright", mode: 0o644, content: []byte(fixtureNotice)},
			})
		},
		"base-files": func() {
			fixtureDeb(t, dir, "base-files", baseVersion, arch.Debian, []fixtureFile{
				{path: "tmp", dir: true, mode: os.ModeSticky | 0o777},
				{path: "root", dir: true, mode: 0o700},
				{path: "usr/lib/os-release", mode: 0o644, content: []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")},
				{path: "etc/os-release", link: "../usr/lib/os-release"},
			})
		},
	}
	for _, p := range BasePackages {
		debs[p.Name]()
	}
}

var labels = map[string]string{
	LabelTitle:       "accel-dra",
	LabelDescription: "Kubernetes DRA driver for Huawei Ascend NPUs and Cambricon MLUs",
	LabelSource:      "https://github.com/accel-dra/accel-dra",
	LabelVersion:     "0.1.0",
}

var created = time.Unix(1767225600, 0).UTC() // 2026-01-01

var (
	debsOnce sync.Once
	debsDir  string
)

// fixturePackages are the fixture packages of both architectures, built
// once per test binary; the tests do not change them.
func fixturePackages(t *testing.T, goarches ...string) map[string][]Package {
	t.Helper()
	debsOnce.Do(func() {
		dir := filepath.Join(scratch, "debs")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, a := range []string{"amd64", "arm64"} {
			fixtureDebs(t, dir, a)
		}
		debsDir = dir
	})
	require.NotEmpty(t, debsDir, "building the fixture packages failed earlier")
	var debArches []string
	for _, a := range goarches {
		debArches = append(debArches, Arches[a].Debian)
	}
	pkgs, err := packagesIn(context.Background(), debsDir, debArches, BasePackages)
	require.NoError(t, err)
	return pkgs
}

// fixtureSpec is the spec make image builds, from stand-ins and fixture
// packages for goarches.
func fixtureSpec(t *testing.T, goarches ...string) Spec {
	t.Helper()
	pkgs := fixturePackages(t, goarches...)
	bins := binDir(t, goarches...)
	spec := Spec{Labels: labels, Entrypoint: []string{"/usr/bin/accel-dra-kubeletplugin"}, User: "0:0", Created: created}
	for _, a := range goarches {
		ps := PlatformSpec{Platform: v1.Platform{OS: "linux", Architecture: a}, Packages: pkgs[Arches[a].Debian]}
		for _, b := range binaries {
			ps.Binaries = append(ps.Binaries, filepath.Join(bins, "linux_"+a, b))
		}
		spec.Platforms = append(spec.Platforms, ps)
	}
	return spec
}

func want(goarches ...string) Want {
	w := Want{Entrypoint: []string{"/usr/bin/accel-dra-kubeletplugin"}, User: "0:0", Labels: labels, Binaries: binaries}
	for _, a := range goarches {
		w.Platforms = append(w.Platforms, v1.Platform{OS: "linux", Architecture: a})
	}
	return w
}

func platformNames(ps []v1.Platform) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ",")
}

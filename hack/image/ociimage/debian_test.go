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
	"archive/tar"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheCacheIsUsedOnlyWithOneDebOfEveryPackage(t *testing.T) {
	fixturePackages(t, "amd64") // builds debsDir
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		err    string
	}{
		{"every package", func(t *testing.T, dir string) {}, ""},
		{"a package missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "libstdc++6_"+gccVersion+"_arm64.deb")))
		}, " lacks libstdc++6:arm64"},
		{"two versions of a package", func(t *testing.T, dir string) {
			fixtureDeb(t, dir, "libc6", "2.36-9+deb12u15", "amd64", nil)
		}, " has 2 versions of libc6:amd64"},
		{"no packages", func(t *testing.T, dir string) {
			files, err := filepath.Glob(filepath.Join(dir, "*.deb"))
			require.NoError(t, err)
			for _, f := range files {
				require.NoError(t, os.Remove(f))
			}
		}, "no .deb in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files, err := filepath.Glob(filepath.Join(debsDir, "*.deb"))
			require.NoError(t, err)
			for _, f := range files {
				copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
			}
			tc.change(t, dir)
			pkgs, err := packagesIn(context.Background(), dir, []string{"amd64", "arm64"}, BasePackages)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			for _, arch := range []string{"amd64", "arm64"} {
				var names []string
				for _, p := range pkgs[arch] {
					names = append(names, p.Name+":"+p.Architecture)
				}
				require.Equal(t, []string{"base-files:" + arch, "ca-certificates:all", "gcc-12-base:" + arch, "libc6:" + arch, "libgcc-s1:" + arch, "libstdc++6:" + arch}, names)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// repoRoot is the driver's repository, whose _output/image make image
// uses too.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "deployments", "helm", "accel-dra", "Chart.yaml"))
	require.NoError(t, err, "the repository root above hack/image")
	return root
}

// The real packages, downloaded with apt-get from Debian 12 on the first
// run (a few seconds, then cached in _output/image/debs, as make image
// caches them): the image they make passes Check, and a dynamically
// linked C++ program, like npu-smi and cnmon, runs on the image's loader
// and libraries of this machine's architecture, none taken from the host.
func TestTheDebian12PackagesRunADynamicallyLinkedCPlusPlusProgram(t *testing.T) {
	arch, ok := Arches[runtime.GOARCH]
	require.True(t, ok, "the image has no %s", runtime.GOARCH)
	apt := Apt{Dir: filepath.Join(repoRoot(t), "_output", "image"), Sources: DebianSources("http://deb.debian.org")}
	pkgs, err := apt.Packages(context.Background(), []string{"amd64", "arm64"}, BasePackages, false)
	require.NoError(t, err)
	for _, a := range []string{"amd64", "arm64"} {
		for _, p := range pkgs[a] {
			switch p.Name {
			case "libc6":
				require.True(t, strings.HasPrefix(p.Version, "2.36-"), "Debian 12's glibc is 2.36, not %s", p.Version)
			case "libstdc++6", "libgcc-s1":
				require.True(t, strings.HasPrefix(p.Version, "12.2.0-"), "Debian 12's GCC is 12.2, not %s", p.Version)
			}
		}
	}

	spec := fixtureSpec(t, "amd64", "arm64")
	for i := range spec.Platforms {
		spec.Platforms[i].Packages = pkgs[Arches[spec.Platforms[i].Platform.Architecture].Debian]
	}
	idx, err := Build(context.Background(), spec)
	require.NoError(t, err)
	require.NoError(t, Check(idx, want("amd64", "arm64")))

	rootfs := t.TempDir()
	files := platformFS(t, idx, runtime.GOARCH)
	writeRootfs(t, rootfs, files)
	loader, _, err := files.Resolve(arch.Loader)
	require.NoError(t, err)

	dir := t.TempDir()
	src := filepath.Join(dir, "vendor-tool.cc")
	require.NoError(t, os.WriteFile(src, []byte(`#include <iostream>
#include <stdexcept>
#include <string>
int main() {
  try {
    throw std::runtime_error("vendor tool");
  } catch (const std::exception &e) {
    std::cout << std::string(e.what()) + " ran" << std::endl;
  }
}
`), 0o644))
	prog := filepath.Join(dir, "vendor-tool")
	out, err := exec.Command("g++", "-O1", "-o", prog, src).CombinedOutput()
	require.NoError(t, err, "g++: %s", out)

	libPath := filepath.Join(rootfs, "lib", arch.Triplet) + ":" + filepath.Join(rootfs, "usr", "lib", arch.Triplet)
	ld := filepath.Join(rootfs, loader)
	out, err = exec.Command(ld, "--inhibit-cache", "--library-path", libPath, "--list", prog).CombinedOutput()
	require.NoError(t, err, "%s --list: %s", ld, out)
	var libs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, resolved, ok := strings.Cut(line, " => "); ok {
			resolved, _, _ = strings.Cut(resolved, " (")
			require.True(t, strings.HasPrefix(resolved, rootfs+"/"), "%s is the host's, not the image's", line)
			libs = append(libs, filepath.Base(resolved))
		}
	}
	require.Subset(t, libs, []string{"libstdc++.so.6", "libgcc_s.so.1", "libc.so.6", "libm.so.6"})
	out, err = exec.Command(ld, "--inhibit-cache", "--library-path", libPath, prog).CombinedOutput()
	require.NoError(t, err, "%s: %s", prog, out)
	require.Equal(t, "vendor tool ran\n", string(out))
}

// writeRootfs unpacks files under dir (without owners).
func writeRootfs(t *testing.T, dir string, files FS) {
	t.Helper()
	for p, f := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		switch f.Header.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(dst, 0o755))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			require.NoError(t, os.WriteFile(dst, f.Data, os.FileMode(f.Header.Mode&0o777)|0o200))
		case tar.TypeSymlink:
			require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			require.NoError(t, os.Symlink(f.Header.Linkname, dst))
		}
	}
}

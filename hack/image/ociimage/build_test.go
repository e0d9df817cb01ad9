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
	"bytes"
	"context"
	"debug/elf"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

func TestTheIndexHasAnImageForAmd64AndOneForArm64(t *testing.T) {
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64", "arm64"))
	require.NoError(t, err)

	mt, err := idx.MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCIImageIndex, mt)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	var platforms []v1.Platform
	for _, d := range im.Manifests {
		require.Equal(t, types.OCIManifestSchema1, d.MediaType)
		require.NotNil(t, d.Platform)
		platforms = append(platforms, *d.Platform)
	}
	require.Equal(t, "linux/amd64,linux/arm64", platformNames(platforms))
	require.Equal(t, "0.1.0", im.Annotations[LabelVersion])
	require.Equal(t, "2026-01-01T00:00:00Z", im.Annotations[LabelCreated])
	require.NoError(t, Check(idx, want("amd64", "arm64")))
}

func TestEachImageHasTheConfigOfTheDockerfile(t *testing.T) {
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64", "arm64"))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, d := range im.Manifests {
		t.Run(d.Platform.String(), func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, "linux", cf.OS)
			require.Equal(t, d.Platform.Architecture, cf.Architecture)
			require.Equal(t, []string{"/usr/bin/accel-dra-kubeletplugin"}, cf.Config.Entrypoint)
			require.Empty(t, cf.Config.Cmd)
			require.Equal(t, "0:0", cf.Config.User)
			require.Equal(t, created, cf.Created.Time.UTC())
			for k, v := range labels {
				require.Equal(t, v, cf.Config.Labels[k], k)
			}
			require.Equal(t, "base-files="+baseVersion+" ca-certificates="+caVersion+" gcc-12-base="+gccVersion+
				" libc6="+libcVersion+" libgcc-s1="+gccVersion+" libstdc++6="+gccVersion, cf.Config.Labels[LabelPackages])
			require.Contains(t, cf.Config.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
			require.Len(t, cf.History, 2, "a base layer and the binaries' layer")
			require.Len(t, cf.RootFS.DiffIDs, 2)
		})
	}
}

func TestTheLayersHoldTheBinariesAndTheCRuntimeOfTheirArchitecture(t *testing.T) {
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64", "arm64"))
	require.NoError(t, err)
	for _, tc := range []struct {
		arch     string
		machine  elf.Machine
		loader   string
		libstdcx string
	}{
		{"amd64", elf.EM_X86_64, "/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"},
		{"arm64", elf.EM_AARCH64, "/lib/ld-linux-aarch64.so.1", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6"},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			files := platformFS(t, idx, tc.arch)
			for _, b := range binaries {
				f, ok := files["/usr/bin/"+b]
				require.True(t, ok, "/usr/bin/%s", b)
				require.Equal(t, byte(tar.TypeReg), f.Header.Typeflag)
				require.Equal(t, int64(0o755), f.Header.Mode&0o7777, b)
				require.Equal(t, 0, f.Header.Uid)
				requireMachine(t, f.Data, tc.machine, b)
			}
			// DCMI's container sign (pkg/vendors/ascend: the Dockerfile ships it too).
			dockerenv, ok := files["/.dockerenv"]
			require.True(t, ok, "/.dockerenv")
			require.Equal(t, byte(tar.TypeReg), dockerenv.Header.Typeflag)
			require.Empty(t, dockerenv.Data)
			for _, lib := range []string{tc.loader, tc.libstdcx} {
				_, f, err := files.Resolve(lib)
				require.NoError(t, err)
				requireMachine(t, f.Data, tc.machine, lib)
			}
			// Every file has the build's time, for a reproducible digest.
			for p, f := range files {
				require.True(t, f.Header.ModTime.Equal(created), "%s has mtime %s", p, f.Header.ModTime)
			}
		})
	}
}

func TestTheBaseLayerKeepsLicensesAndLeavesOutDocumentation(t *testing.T) {
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64"))
	require.NoError(t, err)
	files := platformFS(t, idx, "amd64")
	for _, tc := range []struct {
		path string
		in   bool
	}{
		{"/usr/share/doc/libc6/copyright", true},
		{"/usr/share/doc/gcc-12-base/copyright", true},
		{"/usr/share/doc/libstdc++6", true}, // a symlink to gcc-12-base
		{"/usr/share/doc/ca-certificates/copyright", true},
		{"/etc/os-release", true},
		{"/var/lib/dpkg/status.d/libc6", true},
		{"/usr/share/doc/libc6/changelog.Debian.gz", false},
		{"/usr/share/doc/gcc-12-base/README.Debian.gz", false},
		{"/usr/share/lintian/overrides/libc6", false},
		{"/usr/share/gdb", false},
		{"/usr/share/ca-certificates/mozilla/A.crt", false},
		{"/usr/sbin/update-ca-certificates", false},
		{"/bin/sh", false},
	} {
		_, ok := files[tc.path]
		require.Equal(t, tc.in, ok, tc.path)
	}
	require.Equal(t, fixtureCertA+fixtureCertB+"\n", string(files["/etc/ssl/certs/ca-certificates.crt"].Data))
	status := string(files["/var/lib/dpkg/status.d/libc6"].Data)
	require.Contains(t, status, "Package: libc6\n")
	require.Contains(t, status, "Version: "+libcVersion+"\n")
	require.Contains(t, status, "Architecture: amd64\n")
	require.True(t, strings.HasPrefix(string(files["/etc/passwd"].Data), "root:x:0:0:"))
	require.Contains(t, string(files["/etc/group"].Data), "root:x:0:\n")
	require.Equal(t, int64(0o1777), files["/tmp"].Header.Mode&0o7777)
	require.Equal(t, int64(0o700), files["/root"].Header.Mode&0o7777)
	require.Equal(t, 65532, files["/home/nonroot"].Header.Uid)
	_, target, err := files.Resolve("/etc/os-release")
	require.NoError(t, err)
	require.Contains(t, string(target.Data), "bookworm")
}

func TestTheSameInputsGiveTheSameDigest(t *testing.T) {
	spec := fixtureSpec(t, "amd64", "arm64")
	digest := func(s Spec) v1.Hash {
		idx, err := Build(context.Background(), s)
		require.NoError(t, err)
		h, err := idx.Digest()
		require.NoError(t, err)
		return h
	}
	first := digest(spec)
	require.Equal(t, first, digest(spec))
	later := spec
	later.Created = created.Add(time.Second)
	require.NotEqual(t, first, digest(later))
}

func TestBuildRefusesWhatTheImageCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		err    string
	}{
		{"an architecture without a glibc table", func(s *Spec) { s.Platforms[0].Platform.Architecture = "riscv64" }, `architecture "riscv64": only amd64, arm64`},
		{"another OS", func(s *Spec) { s.Platforms[0].Platform.OS = "windows" }, `os "windows": only linux`},
		{"packages of the other architecture", func(s *Spec) { s.Platforms[0].Packages = s.Platforms[1].Packages }, "_arm64.deb is for arm64"},
		{"a missing binary", func(s *Spec) { s.Platforms[1].Binaries[0] += ".missing" }, "reading the binary: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := fixtureSpec(t, "amd64", "arm64")
			tc.mutate(&spec)
			_, err := Build(context.Background(), spec)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestCheckSaysWhatIsWrongWithAnImage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, s *Spec, w *Want)
		err    string
	}{
		{"binaries of the other architecture", func(t *testing.T, s *Spec, w *Want) {
			s.Platforms[1].Binaries = s.Platforms[0].Binaries
		}, "linux/arm64: /usr/bin/accel-dra-kubeletplugin: ELF ELFCLASS64 EM_X86_64, want EM_AARCH64"},
		{"no libstdc++", func(t *testing.T, s *Spec, w *Want) {
			s.Platforms[0].Packages = without(s.Platforms[0].Packages, "libstdc++6")
		}, "linux/amd64: the C runtime: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: no /usr/lib/x86_64-linux-gnu"},
		{"no glibc", func(t *testing.T, s *Spec, w *Want) {
			s.Platforms[1].Packages = without(s.Platforms[1].Packages, "libc6")
		}, "linux/arm64: the C runtime: /lib/ld-linux-aarch64.so.1: no /lib/ld-linux-aarch64.so.1"},
		{"another entrypoint", func(t *testing.T, s *Spec, w *Want) {
			s.Entrypoint = []string{"/usr/bin/accel-dra"}
		}, `entrypoint ["/usr/bin/accel-dra"], want ["/usr/bin/accel-dra-kubeletplugin"]`},
		{"another version", func(t *testing.T, s *Spec, w *Want) {
			w.Labels = map[string]string{LabelVersion: "0.2.0"}
		}, `label org.opencontainers.image.version is "0.1.0", want "0.2.0"`},
		{"one platform short", func(t *testing.T, s *Spec, w *Want) {
			s.Platforms = s.Platforms[:1]
		}, "the index has platforms [linux/amd64], want [linux/amd64 linux/arm64]"},
		{"a binary not executable", func(t *testing.T, s *Spec, w *Want) {
			require.NoError(t, os.Chmod(s.Platforms[0].Binaries[1], 0o644))
		}, "", // the image sets 0755 whatever the file's mode
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, w := fixtureSpec(t, "amd64", "arm64"), want("amd64", "arm64")
			tc.mutate(t, &spec, &w)
			idx, err := Build(context.Background(), spec)
			require.NoError(t, err)
			err = Check(idx, w)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func without(pkgs []Package, name string) []Package {
	var out []Package
	for _, p := range pkgs {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

func platformFS(t *testing.T, idx v1.ImageIndex, arch string) FS {
	t.Helper()
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, d := range im.Manifests {
		if d.Platform.Architecture == arch {
			img, err := idx.Image(d.Digest)
			require.NoError(t, err)
			files, err := ImageFS(img)
			require.NoError(t, err)
			return files
		}
	}
	t.Fatalf("no image for %s", arch)
	return nil
}

func requireMachine(t *testing.T, data []byte, want elf.Machine, what string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err, what)
	require.Equal(t, want, f.Machine, what)
}

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
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// File is one file of an image's filesystem.
type File struct {
	Header tar.Header
	Data   []byte
}

// FS is an image's filesystem, its layers applied, by absolute path.
type FS map[string]File

// ImageFS reads the filesystem of img.
func ImageFS(img v1.Image) (FS, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := FS{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the image's files: %w", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", hdr.Name, err)
		}
		files["/"+cleanName(hdr.Name)] = File{Header: *hdr, Data: data}
	}
}

// Resolve follows symlinks (in any component) to the file p names.
func (f FS) Resolve(p string) (string, File, error) {
	const maxLinks = 40
	links := 0
	done, todo := "/", strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	for len(todo) > 0 {
		next := path.Join(done, todo[0])
		todo = todo[1:]
		file, ok := f[next]
		if !ok {
			return "", File{}, fmt.Errorf("%s: no %s", p, next)
		}
		if file.Header.Typeflag != tar.TypeSymlink {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", File{}, fmt.Errorf("%s: too many symlinks", p)
		}
		target := file.Header.Linkname
		if !path.IsAbs(target) {
			target = path.Join(done, target)
		}
		done = "/"
		todo = append(strings.Split(strings.Trim(path.Clean(target), "/"), "/"), todo...)
	}
	return done, f[done], nil
}

// Want is what Check requires of an image index.
type Want struct {
	// Platforms, exactly these, in this order.
	Platforms  []v1.Platform
	Entrypoint []string
	User       string
	// Labels every config has (and more).
	Labels map[string]string
	// Binaries are the names of static executables in /usr/bin.
	Binaries []string
}

// Check says what in idx is not as wanted: the platforms, each image's
// config, static binaries of the platform's architecture, and the C
// runtime the vendors' tools need (the glibc loader, libc, libgcc_s,
// libstdc++ of that architecture), users, /tmp and the CA bundle.
func Check(idx v1.ImageIndex, want Want) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the image index: %w", err)
	}
	var got []v1.Platform
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("image %s of the index has no platform", d.Digest)
		}
		got = append(got, *d.Platform)
	}
	if !reflect.DeepEqual(got, want.Platforms) {
		return fmt.Errorf("the index has platforms %v, want %v", platformStrings(got), platformStrings(want.Platforms))
	}
	var errs []error
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("reading the image of %s: %w", d.Platform, err)
		}
		for _, err := range checkImage(img, *d.Platform, want) {
			errs = append(errs, fmt.Errorf("%s: %w", d.Platform, err))
		}
	}
	return errors.Join(errs...)
}

func platformStrings(ps []v1.Platform) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return s
}

func checkImage(img v1.Image, p v1.Platform, want Want) []error {
	arch, ok := Arches[p.Architecture]
	if !ok {
		return []error{fmt.Errorf("no architecture %q", p.Architecture)}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return []error{fmt.Errorf("reading the config: %w", err)}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		fail("the config is for %s/%s", cf.OS, cf.Architecture)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, want.Entrypoint) {
		fail("entrypoint %q, want %q", cf.Config.Entrypoint, want.Entrypoint)
	}
	if cf.Config.User != want.User {
		fail("user %q, want %q", cf.Config.User, want.User)
	}
	for _, k := range sortedKeys(want.Labels) {
		if v := cf.Config.Labels[k]; v != want.Labels[k] {
			fail("label %s is %q, want %q", k, v, want.Labels[k])
		}
	}
	if !strings.Contains(" "+cf.Config.Labels[LabelPackages], " libc6=") {
		fail("label %s (%q) names no libc6", LabelPackages, cf.Config.Labels[LabelPackages])
	}

	files, err := ImageFS(img)
	if err != nil {
		return append(errs, err)
	}
	for _, b := range want.Binaries {
		name := "/usr/bin/" + b
		f, ok := files[name]
		switch {
		case !ok:
			fail("no %s", name)
			continue
		case f.Header.Typeflag != tar.TypeReg || f.Header.Mode&0o7777 != 0o755:
			fail("%s is not a regular file of mode 0755 (type %q, mode %o)", name, f.Header.Typeflag, f.Header.Mode)
		}
		if err := checkELF(f.Data, arch, true); err != nil {
			fail("%s: %w", name, err)
		}
	}
	for _, lib := range []string{arch.Loader, "/lib/" + arch.Triplet + "/libc.so.6", "/lib/" + arch.Triplet + "/libgcc_s.so.1", "/usr/lib/" + arch.Triplet + "/libstdc++.so.6"} {
		target, f, err := files.Resolve(lib)
		if err != nil {
			fail("the C runtime: %w", err)
			continue
		}
		if f.Header.Typeflag != tar.TypeReg {
			fail("%s (%s) is not a regular file", lib, target)
			continue
		}
		if err := checkELF(f.Data, arch, false); err != nil {
			fail("%s (%s): %w", lib, target, err)
		}
	}
	if f := files["/etc/passwd"]; !bytes.HasPrefix(f.Data, []byte("root:x:0:0:")) {
		fail("/etc/passwd does not start with root (uid 0)")
	}
	if f, ok := files["/tmp"]; !ok || f.Header.Typeflag != tar.TypeDir || f.Header.Mode&0o7777 != 0o1777 {
		fail("no /tmp of mode 1777")
	}
	if f := files["/etc/ssl/certs/ca-certificates.crt"]; !bytes.Contains(f.Data, []byte("-----BEGIN CERTIFICATE-----")) {
		fail("no CA certificates in /etc/ssl/certs/ca-certificates.crt")
	}
	return errs
}

// checkELF checks that data is a 64-bit little-endian ELF file of arch;
// static, that it was built without cgo: no program interpreter, or only
// the base's glibc loader, which purego (the run-time loading of the
// vendors' management libraries, CGO_ENABLED=0) links the binaries against.
func checkELF(data []byte, arch Arch, static bool) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	if f.Machine != elf.Machine(arch.ELFMachine) || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("ELF %s %s, want %s", f.Class, f.Machine, elf.Machine(arch.ELFMachine))
	}
	if static {
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			interp, err := io.ReadAll(p.Open())
			if err != nil {
				return fmt.Errorf("reading the program interpreter: %w", err)
			}
			if got := string(bytes.TrimRight(interp, "\x00")); got != arch.Loader {
				return fmt.Errorf("dynamically linked against %s, not the base's loader %s; build with CGO_ENABLED=0", got, arch.Loader)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CountBytes reads r to its end and closes it, returning the bytes read.
func CountBytes(r io.ReadCloser) (int64, error) {
	n, err := io.Copy(io.Discard, r)
	return n, errors.Join(err, r.Close())
}

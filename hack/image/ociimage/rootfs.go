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
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// A tree is the files of one layer, by clean path without a leading slash
// ("usr/bin/accel-dra"); written in path order, every parent directory
// first, owned by root, with one modification time, so that the same
// inputs give the same layer digest.
type tree struct {
	entries map[string]*entry
}

type entry struct {
	hdr  tar.Header
	data []byte
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

func cleanName(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// dir adds a directory (and its parents) unless it exists.
func (t *tree) dir(name string, mode int64, uid int) {
	name = cleanName(name)
	if name == "" {
		return
	}
	if _, ok := t.entries[name]; ok {
		return
	}
	t.dir(path.Dir(name), 0o755, 0)
	t.entries[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid}}
}

// file adds a regular file, replacing one at that path.
func (t *tree) file(name string, mode int64, data []byte) {
	name = cleanName(name)
	t.dir(path.Dir(name), 0o755, 0)
	t.entries[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data}
}

// add adds an entry of a package's tar stream; a file another package
// already has with other content is an error (dpkg would refuse it too).
func (t *tree) add(hdr *tar.Header, data []byte, from string) error {
	name := cleanName(hdr.Name)
	if name == "" {
		return nil
	}
	h := tar.Header{Typeflag: hdr.Typeflag, Name: name, Mode: hdr.Mode & 0o7777}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if old, ok := t.entries[name]; ok {
			if old.hdr.Typeflag != tar.TypeDir {
				return fmt.Errorf("%s: directory %s is a file of an earlier package", from, name)
			}
			return nil
		}
		t.dir(path.Dir(name), 0o755, 0)
		t.entries[name] = &entry{hdr: h}
		return nil
	case tar.TypeReg:
		h.Size = int64(len(data))
	case tar.TypeSymlink:
		h.Linkname = hdr.Linkname
	case tar.TypeLink:
		h.Linkname = cleanName(hdr.Linkname)
	default:
		return fmt.Errorf("%s: %s has tar type %q, which the base layer does not take", from, name, hdr.Typeflag)
	}
	if old, ok := t.entries[name]; ok {
		if old.hdr.Typeflag != h.Typeflag || old.hdr.Linkname != h.Linkname || !bytes.Equal(old.data, data) {
			return fmt.Errorf("%s: %s conflicts with the file of an earlier package", from, name)
		}
		return nil
	}
	t.dir(path.Dir(name), 0o755, 0)
	t.entries[name] = &entry{hdr: h, data: data}
	return nil
}

// addTar adds the entries of a tar stream for which keep is true.
func (t *tree) addTar(r io.Reader, from string, keep func(name string, typ byte) bool) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the files of %s: %w", from, err)
		}
		if !keep(cleanName(hdr.Name), hdr.Typeflag) {
			continue
		}
		var data []byte
		if hdr.Typeflag == tar.TypeReg {
			if data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("reading %s of %s: %w", hdr.Name, from, err)
			}
		}
		if err := t.add(hdr, data, from); err != nil {
			return err
		}
	}
}

// write writes the tree as a tar stream, entries in path order (a parent
// sorts before its children), modification times mtime.
func (t *tree) write(w io.Writer, mtime time.Time) error {
	names := make([]string, 0, len(t.entries))
	for name := range t.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, name := range names {
		e := t.entries[name]
		if e.hdr.Typeflag == tar.TypeLink {
			// Unpackers need the target first.
			if target, ok := t.entries[e.hdr.Linkname]; !ok || target.hdr.Typeflag != tar.TypeReg || e.hdr.Linkname > name {
				return fmt.Errorf("%s is a hard link to %s, which the layer does not have as a file before it", name, e.hdr.Linkname)
			}
		}
		h := e.hdr
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := tw.WriteHeader(&h); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing the layer: %w", err)
	}
	return nil
}

// keepPackageFile says which files of a package go into the image: all but
// documentation, except the copyright files (the licenses, e.g. glibc's
// LGPL, travel with the binaries), and debugging aids.
func keepPackageFile(pkg string) func(name string, typ byte) bool {
	return func(name string, typ byte) bool {
		for _, drop := range []string{"usr/share/man/", "usr/share/info/", "usr/share/lintian/", "usr/share/gdb/", "usr/share/gcc/"} {
			if strings.HasPrefix(name+"/", drop) {
				return false
			}
		}
		if doc, ok := strings.CutPrefix(name, "usr/share/doc/"); ok {
			// usr/share/doc/<pkg>, a directory or a symlink to another
			// package's (libstdc++6 -> gcc-12-base), and its copyright.
			return !strings.Contains(doc, "/") || (path.Base(doc) == "copyright" && strings.Count(doc, "/") == 1)
		}
		if pkg == "ca-certificates" {
			// The certificates go into the bundle, as update-ca-certificates
			// would write it; the rest is that tool's.
			return name == "usr" || name == "usr/share" || name == "usr/share/doc"
		}
		return true
	}
}

// caBundle concatenates the package's certificates in the order
// update-ca-certificates uses (the sorted /etc/ca-certificates.conf).
func caBundle(r io.Reader, from string) ([]byte, error) {
	certs := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the certificates of %s: %w", from, err)
		}
		name := cleanName(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || !strings.HasPrefix(name, "usr/share/ca-certificates/") || !strings.HasSuffix(name, ".crt") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s of %s: %w", name, from, err)
		}
		certs[name] = data
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s has no usr/share/ca-certificates/**/*.crt", from)
	}
	names := make([]string, 0, len(certs))
	for name := range certs {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, name := range names {
		b.Write(certs[name])
		if !bytes.HasSuffix(certs[name], []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// Files the image needs beyond its packages: users and groups (root, and
// distroless's nonroot 65532 that the webhook runs as), name service
// order, the home directories.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nogroup:x:65534:\n" +
		"nonroot:x:65532:\n"
	nsswitch = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n"
)

// baseTree is the base layer of one platform: the packages' files, the CA
// bundle, the users, and /var/lib/dpkg/status.d/<package> for each package.
func baseTree(ctx context.Context, pkgs []Package) (*tree, error) {
	t := newTree()
	for _, p := range pkgs {
		from := p.Name + "_" + p.Version + "_" + p.Architecture
		if err := withFiles(ctx, p, func(r io.Reader) error { return t.addTar(r, from, keepPackageFile(p.Name)) }); err != nil {
			return nil, err
		}
		if p.Name == "ca-certificates" {
			var bundle []byte
			if err := withFiles(ctx, p, func(r io.Reader) (err error) { bundle, err = caBundle(r, from); return err }); err != nil {
				return nil, err
			}
			t.file("etc/ssl/certs/ca-certificates.crt", 0o644, bundle)
		}
		t.file("var/lib/dpkg/status.d/"+p.Name, 0o644, p.Control)
	}
	t.file("etc/passwd", 0o644, []byte(passwd))
	t.file("etc/group", 0o644, []byte(group))
	t.file("etc/nsswitch.conf", 0o644, []byte(nsswitch))
	// base-files has them already; the fixtures of the tests may not.
	t.dir("tmp", 0o1777, 0)
	t.entries["tmp"].hdr.Mode = 0o1777
	t.dir("root", 0o700, 0)
	t.dir("home/nonroot", 0o700, 65532)
	return t, nil
}

func withFiles(ctx context.Context, p Package, f func(io.Reader) error) error {
	rc, err := p.OpenFiles(ctx)
	if err != nil {
		return err
	}
	ferr := f(rc)
	cerr := rc.Close()
	return errors.Join(ferr, cerr)
}

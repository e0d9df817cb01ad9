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
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// The lock file pins each Debian package of the base layer, per
// architecture, to a version and the SHA-256 of its .deb: `make image`
// downloads exactly those versions and refuses a .deb whose checksum
// differs, so the image changes only when the lock does (REFRESH_DEBS=1
// rewrites it with Debian 12's latest versions). One line per package:
//
//	<name> <architecture> <version> sha256:<hex>
//
// sorted, with # comments.

// LockEntry is one line of the lock file.
type LockEntry struct {
	Name, Architecture, Version, SHA256 string
}

func (e LockEntry) key() string { return e.Name + ":" + e.Architecture }

// ReadLock reads the lock file at path.
func ReadLock(path string) ([]LockEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the package lock: %w", err)
	}
	var out []LockEntry
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		sum, ok := strings.CutPrefix(safeIndex(f, 3), "sha256:")
		if len(f) != 4 || !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s:%d: want <name> <architecture> <version> sha256:<64 hex digits>, got %q", path, n, line)
		}
		e := LockEntry{Name: f[0], Architecture: f[1], Version: f[2], SHA256: sum}
		if seen[e.key()] {
			return nil, fmt.Errorf("%s:%d: %s is locked twice", path, n, e.key())
		}
		seen[e.key()] = true
		out = append(out, e)
	}
	return out, nil
}

func safeIndex(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// Pins returns the locked version of each "<name>:<architecture>", for
// Apt.Pins.
func Pins(lock []LockEntry) map[string]string {
	out := map[string]string{}
	for _, e := range lock {
		out[e.key()] = e.Version
	}
	return out
}

// LockOf returns the lock entries of pkgs (per Debian architecture), with
// their .deb files' checksums, sorted.
func LockOf(pkgs map[string][]Package) ([]LockEntry, error) {
	seen := map[string]bool{}
	var out []LockEntry
	for _, ps := range pkgs {
		for _, p := range ps {
			e := LockEntry{Name: p.Name, Architecture: p.Architecture, Version: p.Version}
			if seen[e.key()] {
				continue
			}
			seen[e.key()] = true
			sum, err := fileSHA256(p.Path)
			if err != nil {
				return nil, err
			}
			e.SHA256 = sum
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// WriteLock writes lock to path.
func WriteLock(path string, lock []LockEntry) error {
	var b strings.Builder
	b.WriteString("# Debian 12 packages of the image's base layer (hack/image/ociimage/lock.go):\n" +
		"# make image verifies them; REFRESH_DEBS=1 make image downloads the latest and rewrites this file.\n")
	for _, e := range lock {
		fmt.Fprintf(&b, "%s %s %s sha256:%s\n", e.Name, e.Architecture, e.Version, e.SHA256)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the package lock: %w", err)
	}
	return nil
}

// VerifyLock checks that pkgs are exactly the locked packages of their
// architectures: the same versions and .deb checksums, none missing, none
// extra.
func VerifyLock(lock []LockEntry, pkgs map[string][]Package) error {
	got, err := LockOf(pkgs)
	if err != nil {
		return err
	}
	arches := map[string]bool{"all": true}
	for arch := range pkgs {
		arches[arch] = true
	}
	want := map[string]LockEntry{}
	for _, e := range lock {
		if arches[e.Architecture] {
			want[e.key()] = e
		}
	}
	var errs []error
	for _, g := range got {
		w, ok := want[g.key()]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s %s is not in the lock", g.key(), g.Version))
		case w.Version != g.Version || w.SHA256 != g.SHA256:
			errs = append(errs, fmt.Errorf("%s is %s sha256:%s, the lock says %s sha256:%s", g.key(), g.Version, g.SHA256, w.Version, w.SHA256))
		}
		delete(want, g.key())
	}
	var missing []string
	for k := range want {
		missing = append(missing, k)
	}
	sort.Strings(missing)
	for _, k := range missing {
		errs = append(errs, fmt.Errorf("%s is locked but not in the image", k))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the base layer's Debian packages do not match the lock (REFRESH_DEBS=1 make image updates both): %w", err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksumming %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksumming %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

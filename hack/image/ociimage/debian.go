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
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// BasePackages are the Debian 12 packages of the base layer, the C runtime
// of gcr.io/distroless/cc-debian12: on real hardware the agent runs the
// host's npu-smi and cnmon, dynamically linked programs that need the glibc
// loader, libc, libgcc_s and libstdc++ in the container. base-files gives the
// directory skeleton (/tmp, /root, /var/tmp ...) and /etc/os-release (what
// scanners read to know the distribution); gcc-12-base holds the copyright
// of libgcc-s1 and libstdc++6; ca-certificates the CA bundle.
var BasePackages = []BasePackage{
	{Name: "base-files"},
	{Name: "ca-certificates", ArchIndependent: true},
	{Name: "gcc-12-base"},
	{Name: "libc6"},
	{Name: "libgcc-s1"},
	{Name: "libstdc++6"},
}

// BasePackage names a package of the base layer.
type BasePackage struct {
	Name string
	// ArchIndependent packages (Architecture: all) are the same file for
	// every platform.
	ArchIndependent bool
}

// DebianSources is the apt sources.list of Debian 12 (bookworm) with its
// updates and security suites, on mirror (e.g. http://deb.debian.org),
// checked against the Debian archive keyring.
func DebianSources(mirror string) string {
	mirror = strings.TrimSuffix(mirror, "/")
	const key = "[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
	return fmt.Sprintf("deb %[1]s %[2]s/debian bookworm main\n"+
		"deb %[1]s %[2]s/debian bookworm-updates main\n"+
		"deb %[1]s %[2]s/debian-security bookworm-security main\n", key, mirror)
}

// A Package is one downloaded Debian binary package (.deb).
type Package struct {
	Name         string
	Version      string
	Architecture string
	// Control is the package's control paragraph (dpkg-deb --field), written
	// to /var/lib/dpkg/status.d/<name> as distroless does, so that scanners
	// find the package and its version.
	Control []byte
	// Path of the .deb.
	Path string
}

// ReadDeb reads the control fields of the .deb at path with dpkg-deb.
func ReadDeb(ctx context.Context, path string) (Package, error) {
	out, err := runOutput(ctx, "", "dpkg-deb", "--field", path)
	if err != nil {
		return Package{}, fmt.Errorf("reading the control fields of %s: %w", path, err)
	}
	p := Package{Path: path, Control: bytes.TrimRight(out, "\n")}
	p.Control = append(p.Control, '\n')
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch key {
		case "Package":
			p.Name = value
		case "Version":
			p.Version = value
		case "Architecture":
			p.Architecture = value
		}
	}
	if p.Name == "" || p.Version == "" || p.Architecture == "" {
		return Package{}, fmt.Errorf("reading the control fields of %s: no Package, Version or Architecture", path)
	}
	return p, nil
}

// OpenFiles returns the package's files as a tar stream (dpkg-deb
// --fsys-tarfile), names relative to / ("./usr/lib/...").
func (p Package) OpenFiles(ctx context.Context) (io.ReadCloser, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", p.Path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", p.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("unpacking %s (dpkg-deb is in Debian's dpkg): %w", p.Path, err)
	}
	return &cmdReader{ReadCloser: out, cmd: cmd, stderr: &stderr, what: "unpacking " + p.Path}, nil
}

type cmdReader struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	what   string
}

// Close waits for the command; reading must have reached EOF for its exit
// status to count.
func (r *cmdReader) Close() error {
	_, _ = io.Copy(io.Discard, r.ReadCloser)
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", r.what, err, strings.TrimSpace(r.stderr.String()))
	}
	return nil
}

// Apt downloads Debian packages with apt-get into a cache, with its own
// configuration under Dir (sources, lists, state): the host's apt
// sources, architectures and installed packages do not matter, and the host
// is not changed (no dpkg --add-architecture).
type Apt struct {
	// Dir holds debs/ (the downloaded .deb files, reused while they cover
	// what is asked) and apt/ (apt's lists and cache).
	Dir string
	// Sources is the sources.list, e.g. DebianSources("http://deb.debian.org").
	Sources string
	// Log receives apt-get's output; nil discards it.
	Log io.Writer
	// Pins are the versions to download, by "<name>:<architecture>"
	// (Pins of the lock file); a package without one gets the latest.
	Pins map[string]string
}

// Packages returns the packages of pkgs for each architecture (Debian's
// names: amd64, arm64), from the cache when it has every one of them, else
// after apt-get update and download; refresh downloads them anew. The
// downloaded set replaces the cache as a whole, so the cache never mixes
// versions of one package.
func (a Apt) Packages(ctx context.Context, arches []string, pkgs []BasePackage, refresh bool) (map[string][]Package, error) {
	debs := filepath.Join(a.Dir, "debs")
	if !refresh {
		got, err := packagesIn(ctx, debs, arches, pkgs)
		if err == nil {
			return got, nil
		}
		if a.Log != nil {
			fmt.Fprintf(a.Log, "downloading Debian packages into %s: %v\n", debs, err)
		}
	}
	if err := a.download(ctx, arches, pkgs); err != nil {
		return nil, err
	}
	got, err := packagesIn(ctx, debs, arches, pkgs)
	if err != nil {
		return nil, fmt.Errorf("after downloading: %w", err)
	}
	return got, nil
}

func (a Apt) download(ctx context.Context, arches []string, pkgs []BasePackage) error {
	if len(arches) == 0 {
		return errors.New("downloading Debian packages: no architecture")
	}
	// apt takes relative paths as relative to its own directories.
	dir, err := filepath.Abs(a.Dir)
	if err != nil {
		return fmt.Errorf("locating the package cache: %w", err)
	}
	a.Dir = dir
	root := filepath.Join(a.Dir, "apt")
	for _, d := range []string{"state/lists/partial", "cache/archives/partial", "sources.list.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return fmt.Errorf("creating apt's directories: %w", err)
		}
	}
	sources := filepath.Join(root, "sources.list")
	status := filepath.Join(root, "state", "status")
	if err := os.WriteFile(sources, []byte(a.Sources), 0o644); err != nil {
		return fmt.Errorf("writing apt's sources: %w", err)
	}
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return fmt.Errorf("writing apt's status: %w", err)
	}
	opts := []string{
		"-o", "Dir::State=" + filepath.Join(root, "state"),
		"-o", "Dir::State::status=" + status,
		"-o", "Dir::Cache=" + filepath.Join(root, "cache"),
		"-o", "Dir::Etc::SourceList=" + sources,
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(root, "sources.list.d"),
		"-o", "APT::Architecture=" + arches[0],
		"-o", "Acquire::Languages=none",
		"-o", "Debug::NoLocking=1",
	}
	for _, arch := range arches {
		opts = append(opts, "-o", "APT::Architectures::="+arch)
	}
	if os.Geteuid() == 0 {
		// apt drops to _apt to download, which cannot write here.
		opts = append(opts, "-o", "APT::Sandbox::User=root")
	}
	if err := a.run(ctx, "", "update", opts...); err != nil {
		return fmt.Errorf("updating the package lists of %s: %w", sources, err)
	}

	tmp := filepath.Join(a.Dir, "debs.new")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clearing %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	var names []string
	pinned := func(name, arch string) string {
		if v, ok := a.Pins[name+":"+arch]; ok {
			return "=" + v
		}
		return ""
	}
	for _, p := range pkgs {
		if p.ArchIndependent {
			names = append(names, p.Name+pinned(p.Name, "all"))
			continue
		}
		for _, arch := range arches {
			names = append(names, p.Name+":"+arch+pinned(p.Name, arch))
		}
	}
	if err := a.run(ctx, tmp, "download", append(opts, names...)...); err != nil {
		return fmt.Errorf("downloading %s: %w", strings.Join(names, " "), err)
	}
	debs := filepath.Join(a.Dir, "debs")
	if err := os.RemoveAll(debs); err != nil {
		return fmt.Errorf("replacing %s: %w", debs, err)
	}
	if err := os.Rename(tmp, debs); err != nil {
		return fmt.Errorf("replacing %s: %w", debs, err)
	}
	return nil
}

func (a Apt) run(ctx context.Context, dir, verb string, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q", verb}, args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if a.Log != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, a.Log), io.MultiWriter(&out, a.Log)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %s: %w: %s", verb, err, lastLines(out.String(), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// packagesIn finds, in dir, exactly one .deb of each package for each
// architecture.
func packagesIn(ctx context.Context, dir string, arches []string, pkgs []BasePackage) (map[string][]Package, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .deb in %s", dir)
	}
	sort.Strings(files)
	type key struct{ name, arch string }
	found := map[key][]Package{}
	for _, f := range files {
		p, err := ReadDeb(ctx, f)
		if err != nil {
			return nil, err
		}
		found[key{p.Name, p.Architecture}] = append(found[key{p.Name, p.Architecture}], p)
	}
	got := map[string][]Package{}
	var missing []string
	for _, arch := range arches {
		for _, bp := range pkgs {
			k := key{bp.Name, arch}
			if bp.ArchIndependent {
				k.arch = "all"
			}
			switch ps := found[k]; len(ps) {
			case 1:
				got[arch] = append(got[arch], ps[0])
			case 0:
				missing = append(missing, bp.Name+":"+arch)
			default:
				return nil, fmt.Errorf("%s has %d versions of %s:%s", dir, len(ps), k.name, k.arch)
			}
		}
	}
	if len(missing) > 0 {
		return nil, errors.New(dir + " lacks " + strings.Join(missing, ", "))
	}
	return got, nil
}

func runOutput(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

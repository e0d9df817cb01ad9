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

// Command image builds and pushes the accel-dra image without a container
// engine (make image, make image-push):
//
//	image build --name ghcr.io/accel-dra/accel-dra:0.1.0 --version 0.1.0 \
//	    --bin-dir bin --cache _output/image --layout _output/image/oci \
//	    --archive _output/image/accel-dra-0.1.0.tar
//	image push --layout _output/image/oci --to localhost:5000/accel-dra/accel-dra:0.1.0
//
// build expects the static binaries in <bin-dir>/linux_<arch>/ (the
// Makefile builds them), downloads the base layer's Debian 12 packages
// with apt-get into <cache>/debs (once; later builds are offline), writes
// the multi-platform image index as an OCI image layout and as a tar
// archive, and checks what it wrote; with --sbom and --provenance also an
// SPDX SBOM and an (unsigned) in-toto SLSA provenance statement.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/accel-dra/accel-dra/hack/image/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|push [flags] (-h for the flags)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(ctx, os.Args[2:])
	case "push":
		err = push(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: build or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	name := fs.String("name", "", "image name, registry/repository:tag (the chart's image.repository:appVersion)")
	version := fs.String("version", "", "version label (org.opencontainers.image.version)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
	binDir := fs.String("bin-dir", "bin", "directory with linux_<arch>/<binary>")
	binaries := fs.String("binaries", "accel-dra-kubeletplugin,accel-dra-webhook,accel-dra", "comma-separated binaries for /usr/bin")
	entrypoint := fs.String("entrypoint", "/usr/bin/accel-dra-kubeletplugin", "the image's entrypoint")
	cache := fs.String("cache", "_output/image", "directory of the downloaded Debian packages (debs/) and apt's lists (apt/)")
	mirror := fs.String("debian-mirror", "http://deb.debian.org", "Debian mirror, with debian/ and debian-security/ under it")
	refresh := fs.Bool("refresh-debs", false, "download the Debian packages anew (their latest Debian 12 versions)")
	layoutDir := fs.String("layout", "_output/image/oci", "OCI image layout directory to write")
	archive := fs.String("archive", "", "tar archive to write (ctr images import, docker load); none if empty")
	lockFile := fs.String("lock", "", "lock file of the base layer's Debian packages (versions and .deb SHA-256) to verify, or with --refresh-debs to rewrite; none if empty")
	sbomFile := fs.String("sbom", "", "SPDX JSON SBOM of the image's Go modules and Debian packages to write; none if empty")
	provFile := fs.String("provenance", "", "in-toto statement with a SLSA v1 provenance of the image to write (unsigned); none if empty")
	sourceCommit := fs.String("source-commit", "", "git commit of the source built, for the provenance (git rev-parse HEAD)")
	sourceDirty := fs.Bool("source-dirty", false, "the source tree had uncommitted changes, for the provenance")
	_ = fs.Parse(args)
	if *name == "" || *version == "" {
		return fmt.Errorf("build needs --name and --version")
	}
	tag, err := ociimage.ImageRef(*name)
	if err != nil {
		return err
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}

	var specs []ociimage.PlatformSpec
	var debArches []string
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("parsing --platforms: %w", err)
		}
		arch, ok := ociimage.Arches[p.Architecture]
		if !ok || p.OS != "linux" {
			return fmt.Errorf("platform %s: only linux/amd64 and linux/arm64", p)
		}
		ps := ociimage.PlatformSpec{Platform: *p}
		for _, b := range strings.Split(*binaries, ",") {
			ps.Binaries = append(ps.Binaries, filepath.Join(*binDir, p.OS+"_"+p.Architecture, b))
		}
		specs = append(specs, ps)
		debArches = append(debArches, arch.Debian)
	}

	start := time.Now()
	apt := ociimage.Apt{Dir: *cache, Sources: ociimage.DebianSources(*mirror), Log: os.Stderr}
	var lock []ociimage.LockEntry
	if *lockFile != "" {
		if lock, err = ociimage.ReadLock(*lockFile); err != nil && !*refresh {
			return err
		}
		if !*refresh {
			apt.Pins = ociimage.Pins(lock)
		}
	}
	pkgs, err := apt.Packages(ctx, debArches, ociimage.BasePackages, *refresh)
	if err != nil {
		return fmt.Errorf("getting the base layer's Debian packages: %w", err)
	}
	if *lockFile != "" {
		if pkgs, err = lockPackages(ctx, apt, *lockFile, lock, pkgs, debArches, *refresh); err != nil {
			return err
		}
	}
	for i := range specs {
		specs[i].Packages = pkgs[ociimage.Arches[specs[i].Platform.Architecture].Debian]
	}
	labels := map[string]string{
		ociimage.LabelTitle:       "accel-dra",
		ociimage.LabelDescription: "Kubernetes DRA driver for Huawei Ascend NPUs and Cambricon MLUs",
		ociimage.LabelSource:      "https://github.com/accel-dra/accel-dra",
		ociimage.LabelVersion:     *version,
	}
	spec := ociimage.Spec{
		Labels:     labels,
		Entrypoint: []string{*entrypoint},
		// root, not distroless's nonroot (65532): see
		// deployments/container/Dockerfile and docs/image.md.
		User:      "0:0",
		Created:   created,
		Platforms: specs,
	}
	idx, err := ociimage.Build(ctx, spec)
	if err != nil {
		return err
	}
	if _, err := ociimage.WriteLayout(*layoutDir, idx, tag); err != nil {
		return err
	}
	// Check what was written, read back.
	written, _, err := ociimage.ReadLayout(*layoutDir)
	if err != nil {
		return err
	}
	want := ociimage.Want{Entrypoint: spec.Entrypoint, User: spec.User, Labels: labels, Binaries: strings.Split(*binaries, ",")}
	for _, ps := range specs {
		want.Platforms = append(want.Platforms, ps.Platform)
	}
	if err := ociimage.Check(written, want); err != nil {
		return fmt.Errorf("checking the image in %s: %w", *layoutDir, err)
	}
	if *archive != "" {
		if err := ociimage.WriteArchive(*archive, *layoutDir, runtime.GOARCH, created); err != nil {
			return err
		}
	}
	if *sbomFile != "" {
		in := ociimage.SBOMInput{Name: tag.String(), Version: *version, Packages: pkgs, Created: created}
		for _, ps := range specs {
			in.Binaries = append(in.Binaries, ps.Binaries...)
		}
		doc, err := ociimage.SBOM(in)
		if err != nil {
			return err
		}
		if err := ociimage.WriteSBOM(*sbomFile, doc); err != nil {
			return err
		}
		fmt.Printf("SBOM %s: %d packages\n", *sbomFile, len(doc.Packages)-1)
	}
	if *provFile != "" {
		in := ociimage.ProvenanceInput{
			Name: tag.String(), Version: *version, Index: written, Archive: *archive,
			Binaries: strings.Split(*binaries, ","), Entrypoint: *entrypoint, Lock: repoRelative(*lockFile),
			Packages: pkgs, SourceCommit: *sourceCommit, SourceDirty: *sourceDirty,
			Created: created, StartedOn: start, FinishedOn: time.Now(),
		}
		for _, ps := range specs {
			in.Platforms = append(in.Platforms, ps.Platform.String())
			in.BinaryFiles = append(in.BinaryFiles, ps.Binaries...)
		}
		if err := writeProvenance(*provFile, in); err != nil {
			return err
		}
	}
	return summary(written, tag.String(), *layoutDir, *archive, time.Since(start))
}

// writeProvenance writes the image's provenance statement to path.
func writeProvenance(path string, in ociimage.ProvenanceInput) error {
	if in.SourceCommit == "" {
		fmt.Fprintln(os.Stderr, "no --source-commit: the provenance names no source")
	}
	st, err := ociimage.Provenance(in)
	if err != nil {
		return err
	}
	if err := ociimage.WriteProvenance(path, st); err != nil {
		return err
	}
	fmt.Printf("provenance %s: %d subjects\n", path, len(st.Subject))
	return nil
}

// repoRelative is path relative to the root of the git work tree that
// holds it (hack/image/debs.lock), so that the provenance's parameters do
// not depend on where the repository was checked out; else path as is.
func repoRelative(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	for dir := filepath.Dir(abs); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		// .git is a directory in a clone, a file in a worktree.
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			if rel, err := filepath.Rel(dir, abs); err == nil {
				return filepath.ToSlash(rel)
			}
			return path
		}
	}
	return path
}

// lockPackages checks pkgs against the lock file, or with refresh
// rewrites it (keeping the entries of architectures not built). A cache
// of other versions than the lock's is replaced by the locked ones once.
func lockPackages(ctx context.Context, apt ociimage.Apt, path string, lock []ociimage.LockEntry, pkgs map[string][]ociimage.Package, arches []string, refresh bool) (map[string][]ociimage.Package, error) {
	if refresh {
		entries, err := ociimage.LockOf(pkgs)
		if err != nil {
			return nil, err
		}
		built := map[string]bool{"all": true}
		for _, a := range arches {
			built[a] = true
		}
		for _, e := range lock {
			if !built[e.Architecture] {
				entries = append(entries, e)
			}
		}
		return pkgs, ociimage.WriteLock(path, entries)
	}
	if err := ociimage.VerifyLock(lock, pkgs); err == nil {
		return pkgs, nil
	}
	fmt.Fprintf(os.Stderr, "the package cache in %s is not what %s locks: downloading the locked versions\n", apt.Dir, path)
	pkgs, err := apt.Packages(ctx, arches, ociimage.BasePackages, true)
	if err != nil {
		return nil, fmt.Errorf("getting the locked Debian packages of %s: %w", path, err)
	}
	return pkgs, ociimage.VerifyLock(lock, pkgs)
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (the Makefile sets the last
// commit's time), else the Unix epoch: a build is reproducible either way.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func summary(idx v1.ImageIndex, name, layoutDir, archive string, took time.Duration) error {
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("computing the index digest: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the image index: %w", err)
	}
	fmt.Printf("image %s@%s (%s)\n", name, digest, took.Round(time.Millisecond))
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("reading the image of %s: %w", d.Platform, err)
		}
		layers, err := img.Layers()
		if err != nil {
			return fmt.Errorf("reading the layers of %s: %w", d.Platform, err)
		}
		var compressed, size int64
		for _, l := range layers {
			c, err := l.Size()
			if err != nil {
				return fmt.Errorf("sizing a layer of %s: %w", d.Platform, err)
			}
			rc, err := l.Uncompressed()
			if err != nil {
				return fmt.Errorf("reading a layer of %s: %w", d.Platform, err)
			}
			n, err := ociimage.CountBytes(rc)
			if err != nil {
				return fmt.Errorf("reading a layer of %s: %w", d.Platform, err)
			}
			compressed += c
			size += n
		}
		fmt.Printf("  %-12s %s  %5.1f MB compressed, %5.1f MB unpacked\n", d.Platform, d.Digest, float64(compressed)/1e6, float64(size)/1e6)
	}
	fmt.Printf("  OCI layout  %s\n", layoutDir)
	if archive != "" {
		fi, err := os.Stat(archive)
		if err != nil {
			return fmt.Errorf("sizing the archive: %w", err)
		}
		fmt.Printf("  archive     %s (%.1f MB): ctr -n k8s.io images import --all-platforms %s\n", archive, float64(fi.Size())/1e6, archive)
	}
	return nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	layoutDir := fs.String("layout", "_output/image/oci", "OCI image layout that image build wrote")
	to := fs.String("to", "", "registry/repository:tag to push to")
	insecure := fs.Bool("insecure", false, "speak HTTP to the registry (localhost and loopback registries always are)")
	_ = fs.Parse(args)
	if *to == "" {
		return fmt.Errorf("push needs --to registry/repository:tag")
	}
	idx, _, err := ociimage.ReadLayout(*layoutDir)
	if err != nil {
		return fmt.Errorf("%w (run make image first)", err)
	}
	ref, err := ociimage.Push(ctx, idx, *to, *insecure)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s (%s)\n", *to, ref)
	return nil
}

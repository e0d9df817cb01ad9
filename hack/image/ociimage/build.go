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

// Package ociimage builds the accel-dra image without a container engine:
// a multi-platform OCI image index whose images are a base layer of Debian
// 12 packages (the C runtime that the vendors' tools need, as in
// gcr.io/distroless/cc-debian12) and a layer of the static Go binaries. It
// writes the index as an OCI image layout and as an archive that
// `ctr images import` and `docker load` take, and pushes it to a registry.
package ociimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation keys of the image's labels.
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelCreated     = "org.opencontainers.image.created"
	// LabelPackages lists the Debian packages of the base layer as
	// name=version, sorted, space-separated.
	LabelPackages = "dev.accel-dra.image.debian-packages"
)

// Arch is what the image needs to know of a CPU architecture.
type Arch struct {
	// Debian is Debian's name of it (amd64, arm64).
	Debian string
	// Triplet is the multiarch directory (x86_64-linux-gnu).
	Triplet string
	// Loader is the glibc dynamic loader, the PT_INTERP of the
	// architecture's programs (npu-smi, cnmon).
	Loader string
	// ELFMachine is e_machine of its ELF files, as debug/elf's
	// elf.Machine.
	ELFMachine uint16
}

// Arches are the architectures the image is built for, by GOARCH: x86 and
// Arm servers (Kunpeng).
var Arches = map[string]Arch{
	"amd64": {Debian: "amd64", Triplet: "x86_64-linux-gnu", Loader: "/lib64/ld-linux-x86-64.so.2", ELFMachine: 62},  // EM_X86_64
	"arm64": {Debian: "arm64", Triplet: "aarch64-linux-gnu", Loader: "/lib/ld-linux-aarch64.so.1", ELFMachine: 183}, // EM_AARCH64
}

// Spec is what goes into the image.
type Spec struct {
	// Labels of every image config (title, description, source, version).
	Labels map[string]string
	// Entrypoint and User of the image config.
	Entrypoint []string
	User       string
	// Created is the creation time of the configs and every file's
	// modification time: SOURCE_DATE_EPOCH, so that a build is
	// reproducible.
	Created time.Time
	// Platforms, one image each, in this order in the index.
	Platforms []PlatformSpec
}

// PlatformSpec is one platform's image.
type PlatformSpec struct {
	// Platform is linux and a GOARCH of Arches.
	Platform v1.Platform
	// Binaries go into /usr/bin under their base names, mode 0755.
	Binaries []string
	// Packages are the base layer.
	Packages []Package
}

// Build makes the image index of spec.
func Build(ctx context.Context, spec Spec) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, ps := range spec.Platforms {
		img, err := buildImage(ctx, spec, ps)
		if err != nil {
			return nil, fmt.Errorf("building the image of %s: %w", ps.Platform.String(), err)
		}
		p := ps.Platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	annotations := map[string]string{LabelCreated: spec.Created.UTC().Format(time.RFC3339)}
	for _, k := range []string{LabelTitle, LabelDescription, LabelSource, LabelVersion} {
		if v, ok := spec.Labels[k]; ok {
			annotations[k] = v
		}
	}
	idx, ok := mutate.Annotations(idx, annotations).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the image index: not an index")
	}
	return idx, nil
}

func buildImage(ctx context.Context, spec Spec, ps PlatformSpec) (v1.Image, error) {
	if ps.Platform.OS != "linux" {
		return nil, fmt.Errorf("os %q: only linux", ps.Platform.OS)
	}
	arch, ok := Arches[ps.Platform.Architecture]
	if !ok {
		return nil, fmt.Errorf("architecture %q: only %s", ps.Platform.Architecture, strings.Join(archNames(), ", "))
	}
	for _, p := range ps.Packages {
		if p.Architecture != arch.Debian && p.Architecture != "all" {
			return nil, fmt.Errorf("package %s is for %s", p.Path, p.Architecture)
		}
	}

	base, err := baseTree(ctx, ps.Packages)
	if err != nil {
		return nil, fmt.Errorf("assembling the base layer: %w", err)
	}
	baseLayer, err := layer(base, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("packing the base layer: %w", err)
	}

	app := newTree()
	var names []string
	for _, bin := range ps.Binaries {
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("reading the binary: %w", err)
		}
		name := filepath.Base(bin)
		app.file(path.Join("usr/bin", name), 0o755, data)
		names = append(names, name)
	}
	// An empty /.dockerenv, as the Dockerfile ships it: in an image without
	// a shell, under containerd or CRI-O, it is the only sign by which
	// Huawei's DCMI library sees that it runs in a container; taken for the
	// host it renames the bind-mounted /etc/vnpu.cfg when it records a vNPU,
	// which fails (docs/hardware.md, "vNPU mode").
	app.file(".dockerenv", 0o644, nil)
	appLayer, err := layer(app, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("packing the binaries' layer: %w", err)
	}

	labels := map[string]string{}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	var versions []string
	for _, p := range ps.Packages {
		versions = append(versions, p.Name+"="+p.Version)
	}
	sort.Strings(versions)
	labels[LabelPackages] = strings.Join(versions, " ")

	created := v1.Time{Time: spec.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, MediaType: types.OCILayer, History: v1.History{
			Created:   created,
			CreatedBy: "accel-dra hack/image: Debian 12 packages " + strings.Join(versions, " "),
			Comment:   "C runtime for the host's vendor tools (npu-smi, cnmon), users, CA bundle",
		}},
		mutate.Addendum{Layer: appLayer, MediaType: types.OCILayer, History: v1.History{
			Created:   created,
			CreatedBy: "accel-dra hack/image: /usr/bin/" + strings.Join(names, " /usr/bin/"),
			Comment:   "static Go binaries (CGO_ENABLED=0)",
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("adding the layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = ps.Platform.OS, ps.Platform.Architecture, ps.Platform.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		Entrypoint: spec.Entrypoint,
		User:       spec.User,
		WorkingDir: "/",
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("writing the config: %w", err)
	}
	return img, nil
}

// layer packs t as a gzip-compressed OCI layer, in memory (the layers are
// tens of megabytes).
func layer(t *tree, mtime time.Time) (v1.Layer, error) {
	var b bytes.Buffer
	if err := t.write(&b, mtime); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

func archNames() []string {
	var names []string
	for n := range Arches {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

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
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Annotations of index.json's entries that name an image: containerd's
// (`ctr images import` names the image after it) and the OCI tag.
const (
	AnnotationContainerdName = "io.containerd.image.name"
	AnnotationRefName        = "org.opencontainers.image.ref.name"
)

// ImageRef parses an image reference that has a tag (no registry is
// docker.io).
func ImageRef(ref string, opts ...name.Option) (name.Tag, error) {
	tag, err := name.NewTag(ref, opts...)
	if err == nil && !strings.HasSuffix(ref, ":"+tag.TagStr()) {
		err = fmt.Errorf("no tag")
	}
	if err != nil {
		return name.Tag{}, fmt.Errorf("parsing the image name %q (registry/repository:tag): %w", ref, err)
	}
	return tag, nil
}

// containerdName is the full name, Docker Hub's registry spelled
// docker.io as containerd and the kubelet spell it.
func containerdName(tag name.Tag) string {
	registry := tag.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// dockerName is docker's short form of a name (docker.io/library/x:t is
// x:t), what docker save writes into manifest.json.
func dockerName(tag name.Tag) string {
	n := containerdName(tag)
	if rest, ok := strings.CutPrefix(n, "docker.io/"); ok {
		return strings.TrimPrefix(rest, "library/")
	}
	return n
}

// WriteLayout writes idx as an OCI image layout in dir, replacing what was
// there, with one entry in index.json: idx, named tag.
func WriteLayout(dir string, idx v1.ImageIndex, tag name.Tag) (layout.Path, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clearing the image layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("creating the image layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationContainerdName: containerdName(tag),
		AnnotationRefName:        tag.TagStr(),
	})); err != nil {
		return "", fmt.Errorf("writing the image index into %s: %w", dir, err)
	}
	return p, nil
}

// ReadLayout returns the one image index of the layout in dir and its name.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("opening the image layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, "", fmt.Errorf("%s/index.json has %d entries, not one image index (make image writes it)", dir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", fmt.Errorf("reading the image index of %s: %w", dir, err)
	}
	return idx, m.Manifests[0].Annotations[AnnotationContainerdName], nil
}

// WriteArchive writes the OCI image layout in dir as a tar archive at
// file: what `ctr images import` (containerd takes the OCI layout, every
// platform) and `docker load` take. For a docker that keeps its own image
// store (not containerd's), which reads manifest.json and one image per
// tag, manifest.json names the image of dockerArch, as `docker save` and
// `ctr images export` write it for the host's platform.
func WriteArchive(file, dir string, dockerArch string, mtime time.Time) error {
	idx, ref, err := ReadLayout(dir)
	if err != nil {
		return err
	}
	tag, err := ImageRef(ref)
	if err != nil {
		return fmt.Errorf("reading the name in %s/index.json: %w", dir, err)
	}
	dockerManifest, err := dockerManifestJSON(idx, dockerName(tag), dockerArch)
	if err != nil {
		return err
	}

	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the image layout %s: %w", dir, err)
	}
	names = append(names, "manifest.json")
	sort.Strings(names)

	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", file, err)
	}
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating the image archive: %w", err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, n := range names {
		if err := writeArchiveEntry(tw, dir, n, dockerManifest, mtime); err != nil {
			return fmt.Errorf("writing %s into %s: %w", n, file, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the image archive %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the image archive %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("writing the image archive %s: %w", file, err)
	}
	return nil
}

func writeArchiveEntry(tw *tar.Writer, dir, n string, dockerManifest []byte, mtime time.Time) error {
	h := &tar.Header{Name: n, Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if n == "manifest.json" {
		h.Size = int64(len(dockerManifest))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(dockerManifest)
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(n))
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, n+"/", 0o755
		return tw.WriteHeader(h)
	}
	h.Size = fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}

// dockerManifestJSON is docker-archive's manifest.json: the config and
// layers (blob paths of the layout) of the image of arch, tagged name.
func dockerManifestJSON(idx v1.ImageIndex, name, arch string) ([]byte, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the image index: %w", err)
	}
	if len(im.Manifests) == 0 {
		return nil, fmt.Errorf("the image index has no images")
	}
	// The image of arch, else the first.
	desc := im.Manifests[0]
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.Architecture == arch {
			desc = d
			break
		}
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the image %s: %w", desc.Digest, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest %s: %w", desc.Digest, err)
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: blob(m.Config.Digest), RepoTags: []string{name}}
	for _, l := range m.Layers {
		entry.Layers = append(entry.Layers, blob(l.Digest))
	}
	out, err := json.Marshal([]any{entry})
	if err != nil {
		return nil, fmt.Errorf("encoding manifest.json: %w", err)
	}
	return out, nil
}

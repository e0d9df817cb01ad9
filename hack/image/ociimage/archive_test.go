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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"
)

// readArchive returns the regular files of a tar by name.
func readArchive(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[hdr.Name] = data
		}
	}
}

func TestTheArchiveIsAnOCILayoutThatContainerdAndDockerName(t *testing.T) {
	for _, tc := range []struct {
		name, containerd, docker string
	}{
		{"ghcr.io/accel-dra/accel-dra:0.1.0", "ghcr.io/accel-dra/accel-dra:0.1.0", "ghcr.io/accel-dra/accel-dra:0.1.0"},
		{"localhost:5000/accel-dra/accel-dra:dev", "localhost:5000/accel-dra/accel-dra:dev", "localhost:5000/accel-dra/accel-dra:dev"},
		{"accel-dra/accel-dra:0.1.0", "docker.io/accel-dra/accel-dra:0.1.0", "accel-dra/accel-dra:0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := Build(context.Background(), fixtureSpec(t, "amd64", "arm64"))
			require.NoError(t, err)
			tag, err := ImageRef(tc.name)
			require.NoError(t, err)
			dir := filepath.Join(t.TempDir(), "oci")
			_, err = WriteLayout(dir, idx, tag)
			require.NoError(t, err)
			file := filepath.Join(t.TempDir(), "image.tar")
			require.NoError(t, WriteArchive(file, dir, "arm64", created))

			files := readArchive(t, file)
			require.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(files["oci-layout"]))
			// Every blob is named by its digest, as importers check.
			for name, data := range files {
				if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
					sum := sha256.Sum256(data)
					require.Equal(t, hexDigest, hex.EncodeToString(sum[:]), name)
				}
			}

			// containerd (ctr images import) reads index.json, names
			// the image after io.containerd.image.name and keeps the
			// multi-platform index as its target.
			var top v1.IndexManifest
			require.NoError(t, json.Unmarshal(files["index.json"], &top))
			require.Len(t, top.Manifests, 1)
			d := top.Manifests[0]
			require.True(t, d.MediaType.IsIndex(), d.MediaType)
			require.Equal(t, tc.containerd, d.Annotations[AnnotationContainerdName])
			require.Equal(t, tag.TagStr(), d.Annotations[AnnotationRefName])
			wantDigest, err := idx.Digest()
			require.NoError(t, err)
			require.Equal(t, wantDigest, d.Digest)
			require.Contains(t, files, "blobs/sha256/"+wantDigest.Hex)

			// docker with its own image store reads manifest.json: one
			// image, of the asked architecture, tagged.
			var dm []struct {
				Config   string
				RepoTags []string
				Layers   []string
			}
			require.NoError(t, json.Unmarshal(files["manifest.json"], &dm))
			require.Len(t, dm, 1)
			require.Equal(t, []string{tc.docker}, dm[0].RepoTags)
			var cf v1.ConfigFile
			require.Contains(t, files, dm[0].Config)
			require.NoError(t, json.Unmarshal(files[dm[0].Config], &cf))
			require.Equal(t, "arm64", cf.Architecture)
			require.Len(t, dm[0].Layers, 2)
			for _, l := range dm[0].Layers {
				require.Contains(t, files, l)
			}

			// The layout reads back as the same index.
			back, name, err := ReadLayout(dir)
			require.NoError(t, err)
			require.Equal(t, tc.containerd, name)
			got, err := back.Digest()
			require.NoError(t, err)
			require.Equal(t, wantDigest, got)
			require.NoError(t, Check(back, want("amd64", "arm64")))
		})
	}
}

func TestWriteLayoutReplacesAnEarlierBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oci")
	tag, err := ImageRef("ghcr.io/accel-dra/accel-dra:0.1.0")
	require.NoError(t, err)
	for _, arches := range [][]string{{"amd64", "arm64"}, {"amd64"}} {
		idx, err := Build(context.Background(), fixtureSpec(t, arches...))
		require.NoError(t, err)
		_, err = WriteLayout(dir, idx, tag)
		require.NoError(t, err)
	}
	idx, _, err := ReadLayout(dir)
	require.NoError(t, err)
	require.NoError(t, Check(idx, want("amd64")))
	blobs, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	require.NoError(t, err)
	// index, manifest, config, two layers: nothing left of arm64.
	require.Len(t, blobs, 5)
}

func TestImageRefWantsATag(t *testing.T) {
	for _, tc := range []struct {
		ref, err string
	}{
		{"ghcr.io/accel-dra/accel-dra", "parsing the image name \"ghcr.io/accel-dra/accel-dra\" (registry/repository:tag)"},
		{"Ghcr.io/UPPER/x:1", "parsing the image name"},
		{"ghcr.io/accel-dra/accel-dra:0.1.0", ""},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			_, err := ImageRef(tc.ref)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

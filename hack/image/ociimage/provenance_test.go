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
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// The provenance of an image built from the fixtures reads back with the
// in-toto library as a Statement v1 of a SLSA Provenance v1 predicate,
// whose subjects are the written index, its images and the archive, and
// whose dependencies are the source commit, the Go toolchain and the
// locked .deb files.
func TestTheProvenanceNamesTheImageAndWhatItIsBuiltFrom(t *testing.T) {
	spec := fixtureSpec(t, "amd64")
	built, err := Build(context.Background(), spec)
	require.NoError(t, err)
	tag, err := ImageRef("example.com/accel-dra:1.0")
	require.NoError(t, err)
	dir := t.TempDir()
	layoutDir := filepath.Join(dir, "oci")
	_, err = WriteLayout(layoutDir, built, tag)
	require.NoError(t, err)
	written, _, err := ReadLayout(layoutDir)
	require.NoError(t, err)
	archive := filepath.Join(dir, "accel-dra-1.0.tar")
	require.NoError(t, WriteArchive(archive, layoutDir, "amd64", created))

	// The lock make image verified the packages against.
	pkgs := map[string][]Package{"amd64": spec.Platforms[0].Packages}
	locked, err := LockOf(pkgs)
	require.NoError(t, err)
	lockFile := filepath.Join(dir, "debs.lock")
	require.NoError(t, WriteLock(lockFile, locked))
	lock, err := ReadLock(lockFile)
	require.NoError(t, err)

	base := ProvenanceInput{
		Name: tag.String(), Version: "1.0", Index: written,
		Platforms: []string{"linux/amd64"}, Binaries: binaries, Entrypoint: "/usr/bin/accel-dra-kubeletplugin", Lock: lockFile,
		BinaryFiles: spec.Platforms[0].Binaries, Packages: pkgs,
		Created: created, StartedOn: created.Add(time.Hour), FinishedOn: created.Add(time.Hour + time.Minute),
	}
	for _, tc := range []struct {
		name        string
		archive     string
		commit      string
		dirty       bool
		subjects    int    // the index, its image, the archive
		wantErr     string // from Provenance
		wantSource  bool
		wantDirtyTo bool
	}{
		{name: "a clean commit with the archive", archive: archive, commit: testCommit, subjects: 3, wantSource: true},
		{name: "a dirty tree without an archive", commit: testCommit, dirty: true, subjects: 2, wantSource: true, wantDirtyTo: true},
		{name: "no git checkout", archive: archive, subjects: 3},
		{name: "a commit that is not one", commit: "main", wantErr: "gitCommit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.Archive, in.SourceCommit, in.SourceDirty = tc.archive, tc.commit, tc.dirty
			st, err := Provenance(in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "accel-dra-1.0.provenance.json")
			require.NoError(t, WriteProvenance(path, st))

			back, prov := readProvenance(t, path)
			require.Len(t, back.GetSubject(), tc.subjects)
			requireSubjects(t, back, built, tc.archive)
			requireDebsLocked(t, prov, lock)
			requireSource(t, prov, tc.wantSource, tc.wantDirtyTo)
			require.Equal(t, ProvenanceBuildType, prov.GetBuildDefinition().GetBuildType())
			ext := prov.GetBuildDefinition().GetExternalParameters().AsMap()
			require.Equal(t, "example.com/accel-dra:1.0", ext["name"])
			require.Equal(t, []any{"linux/amd64"}, ext["platforms"])
			require.Equal(t, "1767225600", prov.GetBuildDefinition().GetInternalParameters().AsMap()["SOURCE_DATE_EPOCH"])
			require.Equal(t, ProvenanceBuilderID, prov.GetRunDetails().GetBuilder().GetId())
			require.Equal(t, created.Add(time.Hour), prov.GetRunDetails().GetMetadata().GetStartedOn().AsTime())
		})
	}
}

// readProvenance parses the file as a Statement and its predicate as a
// SLSA provenance, both validated by the library.
func readProvenance(t *testing.T, path string) (*intoto.Statement, *slsa.Provenance) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	require.Equal(t, "https://in-toto.io/Statement/v1", raw["_type"])
	require.Equal(t, "https://slsa.dev/provenance/v1", raw["predicateType"])

	st := &intoto.Statement{}
	require.NoError(t, protojson.Unmarshal(data, st))
	require.NoError(t, st.Validate())
	pred, err := protojson.Marshal(st.GetPredicate())
	require.NoError(t, err)
	prov := &slsa.Provenance{}
	require.NoError(t, protojson.Unmarshal(pred, prov))
	require.NoError(t, prov.Validate())
	return st, prov
}

// requireSubjects checks the index's and its images' digests against the
// built index, and the archive's against the file.
func requireSubjects(t *testing.T, st *intoto.Statement, built v1.ImageIndex, archive string) {
	t.Helper()
	digest, err := built.Digest()
	require.NoError(t, err)
	subjects := st.GetSubject()
	require.Equal(t, "example.com/accel-dra:1.0", subjects[0].GetName())
	require.Equal(t, map[string]string{"sha256": digest.Hex}, subjects[0].GetDigest(), "the index")
	im, err := built.IndexManifest()
	require.NoError(t, err)
	for i, d := range im.Manifests {
		s := subjects[1+i]
		require.Equal(t, d.Digest.Hex, s.GetDigest()["sha256"], "the image of %s", d.Platform)
		require.Equal(t, d.Platform.String(), s.GetAnnotations().AsMap()["platform"])
	}
	if archive == "" {
		return
	}
	sum, err := fileSHA256(archive)
	require.NoError(t, err)
	last := subjects[len(subjects)-1]
	require.Equal(t, filepath.Base(archive), last.GetName())
	require.Equal(t, sum, last.GetDigest()["sha256"], "the archive")
}

// requireDebsLocked checks that every .deb dependency has the lock's
// checksum, and that every locked package is one.
func requireDebsLocked(t *testing.T, prov *slsa.Provenance, lock []LockEntry) {
	t.Helper()
	debs := map[string]string{}
	for _, d := range prov.GetBuildDefinition().GetResolvedDependencies() {
		if strings.HasPrefix(d.GetUri(), "pkg:deb/") {
			debs[d.GetUri()] = d.GetDigest()["sha256"]
		}
	}
	require.Len(t, debs, len(lock))
	for _, e := range lock {
		require.Equal(t, e.SHA256, debs[debPURL(e)], "%s %s", e.key(), e.Version)
	}
	require.Contains(t, debs, "pkg:deb/debian/libc6@"+libcVersion+"?arch=amd64&distro=debian-12")
}

// requireSource checks the source dependency (the repository at the
// commit, dirty or not), or that there is none, and the Go toolchain.
func requireSource(t *testing.T, prov *slsa.Provenance, want, dirty bool) {
	t.Helper()
	var src, toolchain bool
	for _, d := range prov.GetBuildDefinition().GetResolvedDependencies() {
		switch {
		case strings.HasPrefix(d.GetUri(), "git+"):
			src = true
			require.Equal(t, "git+https://github.com/accel-dra/accel-dra@"+testCommit, d.GetUri())
			require.Equal(t, testCommit, d.GetDigest()["gitCommit"])
			require.Equal(t, dirty, d.GetAnnotations().AsMap()["dirty"])
		case strings.HasPrefix(d.GetUri(), "pkg:golang/stdlib@"):
			toolchain = true
			require.True(t, strings.HasPrefix(d.GetName(), "go"), d.GetName())
		}
	}
	require.Equal(t, want, src, "a source dependency")
	require.True(t, toolchain, "the Go toolchain")
}

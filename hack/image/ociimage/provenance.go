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
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The provenance's fixed URIs: what kind of build this is (the parameters
// below are its interface) and who ran it.
const (
	ProvenanceBuildType     = "https://github.com/accel-dra/accel-dra/hack/image/build@v1"
	ProvenanceBuilderID     = "https://github.com/accel-dra/accel-dra/Makefile#image"
	ProvenancePredicateType = "https://slsa.dev/provenance/v1"
	sourceRepository        = "git+https://github.com/accel-dra/accel-dra"
)

// ProvenanceInput is how the image was built, for its SLSA provenance.
type ProvenanceInput struct {
	// Name is the image reference, Version its version label.
	Name, Version string
	// Index is the image as written (read back from the layout), whose
	// digest and images' digests are the statement's subjects.
	Index v1.ImageIndex
	// Archive is the tar archive written, a subject too; none if empty.
	Archive string
	// Platforms, Binaries (base names), Entrypoint and Lock (the lock
	// file's path, relative to the repository so that it does not name
	// the builder's directories) are the build's parameters.
	Platforms  []string
	Binaries   []string
	Entrypoint string
	Lock       string
	// BinaryFiles are the Go binaries of every platform, whose build
	// information names the Go toolchain that built them.
	BinaryFiles []string
	// Packages are the base layer's Debian packages per architecture
	// (verified against the lock).
	Packages map[string][]Package
	// SourceCommit is the git commit built (40 hex digits), SourceDirty
	// whether the work tree had changes; no source is recorded without a
	// commit (a build outside a git checkout).
	SourceCommit string
	SourceDirty  bool
	// Created is SOURCE_DATE_EPOCH, the image's timestamp.
	Created time.Time
	// StartedOn and FinishedOn are the build's wall-clock times.
	StartedOn, FinishedOn time.Time
}

// Provenance returns the in-toto Statement v1 of the image with a SLSA
// Provenance v1 predicate, validated by the in-toto library.
func Provenance(in ProvenanceInput) (*intoto.Statement, error) {
	subjects, err := provenanceSubjects(in)
	if err != nil {
		return nil, err
	}
	def, err := buildDefinition(in)
	if err != nil {
		return nil, err
	}
	pred := &slsa.Provenance{
		BuildDefinition: def,
		RunDetails: &slsa.RunDetails{
			// The builder's version is the Go toolchain of this program
			// (go run from hack/image's pinned go.mod).
			Builder: &slsa.Builder{Id: ProvenanceBuilderID, Version: map[string]string{"go": runtime.Version()}},
			Metadata: &slsa.BuildMetadata{
				StartedOn:  timestamppb.New(in.StartedOn.UTC()),
				FinishedOn: timestamppb.New(in.FinishedOn.UTC()),
			},
		},
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("validating the SLSA provenance: %w", err)
	}
	predStruct, err := protoStruct(pred)
	if err != nil {
		return nil, fmt.Errorf("converting the SLSA provenance to the statement's predicate: %w", err)
	}
	st := &intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       subjects,
		PredicateType: ProvenancePredicateType,
		Predicate:     predStruct,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("validating the in-toto statement: %w", err)
	}
	return st, nil
}

// provenanceSubjects are the index, each platform's image manifest and
// the archive: what a verifier holds and checks the digests of.
func provenanceSubjects(in ProvenanceInput) ([]*intoto.ResourceDescriptor, error) {
	digest, err := in.Index.Digest()
	if err != nil {
		return nil, fmt.Errorf("computing the index digest for the provenance: %w", err)
	}
	mt, err := in.Index.MediaType()
	if err != nil {
		return nil, fmt.Errorf("reading the index media type for the provenance: %w", err)
	}
	out := []*intoto.ResourceDescriptor{{Name: in.Name, Digest: digestSet(digest), MediaType: string(mt)}}
	im, err := in.Index.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the image index for the provenance: %w", err)
	}
	for _, d := range im.Manifests {
		rd := &intoto.ResourceDescriptor{Name: in.Name, Digest: digestSet(d.Digest), MediaType: string(d.MediaType)}
		if d.Platform != nil {
			// The index's name again, told apart by the platform: a
			// verifier pulls name@digest.
			rd.Annotations, err = structpb.NewStruct(map[string]any{"platform": d.Platform.String()})
			if err != nil {
				return nil, fmt.Errorf("annotating the subject of %s: %w", d.Platform, err)
			}
		}
		out = append(out, rd)
	}
	if in.Archive != "" {
		sum, err := fileSHA256(in.Archive)
		if err != nil {
			return nil, err
		}
		out = append(out, &intoto.ResourceDescriptor{
			Name: filepath.Base(in.Archive), Digest: map[string]string{"sha256": sum}, MediaType: "application/x-tar",
		})
	}
	return out, nil
}

func digestSet(h v1.Hash) map[string]string {
	return map[string]string{h.Algorithm: h.Hex}
}

// buildDefinition is what was built from: the parameters a user chose,
// those the build set itself, and every input by digest.
func buildDefinition(in ProvenanceInput) (*slsa.BuildDefinition, error) {
	external, err := structpb.NewStruct(map[string]any{
		"name":       in.Name,
		"version":    in.Version,
		"platforms":  anySlice(in.Platforms),
		"binaries":   anySlice(in.Binaries),
		"entrypoint": in.Entrypoint,
		"lockFile":   in.Lock,
	})
	if err != nil {
		return nil, fmt.Errorf("recording the provenance's external parameters: %w", err)
	}
	internal, err := structpb.NewStruct(map[string]any{
		"SOURCE_DATE_EPOCH": strconv.FormatInt(in.Created.Unix(), 10),
	})
	if err != nil {
		return nil, fmt.Errorf("recording the provenance's internal parameters: %w", err)
	}
	deps, err := resolvedDependencies(in)
	if err != nil {
		return nil, err
	}
	return &slsa.BuildDefinition{
		BuildType: ProvenanceBuildType, ExternalParameters: external, InternalParameters: internal, ResolvedDependencies: deps,
	}, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// resolvedDependencies are the source at its commit, the Go toolchains
// of the binaries and the base layer's .deb files.
func resolvedDependencies(in ProvenanceInput) ([]*intoto.ResourceDescriptor, error) {
	var out []*intoto.ResourceDescriptor
	if in.SourceCommit != "" {
		src, err := sourceDependency(in.SourceCommit, in.SourceDirty)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	toolchains, err := goToolchains(in.BinaryFiles)
	if err != nil {
		return nil, err
	}
	out = append(out, toolchains...)
	locks, err := LockOf(in.Packages)
	if err != nil {
		return nil, fmt.Errorf("checksumming the Debian packages for the provenance: %w", err)
	}
	for _, e := range locks {
		out = append(out, &intoto.ResourceDescriptor{
			Name:   e.Name + "_" + e.Version + "_" + e.Architecture + ".deb",
			Uri:    debPURL(e),
			Digest: map[string]string{"sha256": e.SHA256},
		})
	}
	return out, nil
}

// sourceDependency is the repository at commit. A dirty tree is marked,
// since then the commit alone does not say what was built.
func sourceDependency(commit string, dirty bool) (*intoto.ResourceDescriptor, error) {
	rd := &intoto.ResourceDescriptor{
		Uri:    sourceRepository + "@" + commit,
		Digest: map[string]string{"gitCommit": commit},
	}
	var err error
	if rd.Annotations, err = structpb.NewStruct(map[string]any{"dirty": dirty}); err != nil {
		return nil, fmt.Errorf("annotating the source dependency: %w", err)
	}
	return rd, nil
}

// goToolchains are the Go versions that built the binaries (one, unless
// the bin directory mixes builds), as the SBOM's stdlib package URL.
func goToolchains(binaries []string) ([]*intoto.ResourceDescriptor, error) {
	versions := map[string]bool{}
	for _, b := range binaries {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return nil, fmt.Errorf("reading the Go version of %s for the provenance: %w", b, err)
		}
		versions[info.GoVersion] = true
	}
	var sorted []string
	for v := range versions {
		sorted = append(sorted, v)
	}
	sort.Strings(sorted)
	var out []*intoto.ResourceDescriptor
	for _, v := range sorted {
		out = append(out, &intoto.ResourceDescriptor{Name: v, Uri: "pkg:golang/stdlib@" + strings.TrimPrefix(v, "go")})
	}
	return out, nil
}

// protoStruct converts m to a Struct through its JSON form, the
// Statement's predicate type.
func protoStruct(m proto.Message) (*structpb.Struct, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	out := &structpb.Struct{}
	if err := protojson.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteProvenance writes st as indented JSON to path.
func WriteProvenance(path string, st *intoto.Statement) error {
	data, err := protojson.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding the provenance: %w", err)
	}
	// protojson varies its whitespace on purpose; json.Indent normalizes
	// it, so that the same build writes the same bytes.
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return fmt.Errorf("indenting the provenance: %w", err)
	}
	b.WriteByte('\n')
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the provenance: %w", err)
	}
	return nil
}

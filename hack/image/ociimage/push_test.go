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
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
)

func TestPushUploadsTheIndexAndEveryImage(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	// As make image-push does: the layout make image wrote, read back.
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64", "arm64"))
	require.NoError(t, err)
	tag, err := ImageRef("ghcr.io/accel-dra/accel-dra:0.1.0")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "oci")
	_, err = WriteLayout(dir, idx, tag)
	require.NoError(t, err)
	local, _, err := ReadLayout(dir)
	require.NoError(t, err)

	ref := host + "/accel-dra/accel-dra:0.1.0"
	pushed, err := Push(context.Background(), local, ref, false)
	require.NoError(t, err)
	wantDigest, err := idx.Digest()
	require.NoError(t, err)
	require.Equal(t, host+"/accel-dra/accel-dra@"+wantDigest.String(), pushed.String())

	// The tag resolves to the same index; each platform's image is there.
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	remoteIdx, err := remote.Index(r)
	require.NoError(t, err)
	got, err := remoteIdx.Digest()
	require.NoError(t, err)
	require.Equal(t, wantDigest, got)
	require.NoError(t, Check(remoteIdx, want("amd64", "arm64")))
}

func TestPushSaysWhereItCouldNotPush(t *testing.T) {
	idx, err := Build(context.Background(), fixtureSpec(t, "amd64"))
	require.NoError(t, err)
	for _, tc := range []struct {
		ref, err string
	}{
		{"localhost:1/accel-dra/accel-dra", `parsing the image name "localhost:1/accel-dra/accel-dra" (registry/repository:tag)`},
		// Port 1 on loopback: nothing listens there.
		{"127.0.0.1:1/accel-dra/accel-dra:0.1.0", "pushing the image index to 127.0.0.1:1/accel-dra/accel-dra:0.1.0: "},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			_, err := Push(context.Background(), idx, tc.ref, false)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

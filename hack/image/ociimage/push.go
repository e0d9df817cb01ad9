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
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads idx (every platform's image and the index) to the registry
// of ref and tags it there, with the credentials of docker's config
// (~/.docker/config.json, $DOCKER_CONFIG, credential helpers: what docker
// login writes). Registries on localhost and loopback addresses are spoken
// to over HTTP; insecure does that for any registry. It returns the pushed
// index's digest reference.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, insecure bool) (name.Digest, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := ImageRef(ref, opts...)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the image index to %s: %w", tag, err)
	}
	h, err := idx.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("computing the index digest: %w", err)
	}
	return tag.Context().Digest(h.String()), nil
}

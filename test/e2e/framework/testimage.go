//go:build e2e

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

package framework

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ImageFile is a regular file of an image a test builds.
type ImageFile struct {
	// Path is absolute, inside the image.
	Path    string
	Mode    int64
	Content []byte
}

// ImportImage builds the one-layer image name from files (with the
// directories they are in, /etc and /tmp), whose config sets env besides
// PATH and runs cmd, and imports it into the real node's containerd, for
// pods with imagePullPolicy Never.
func (c *Cluster) ImportImage(name string, env, cmd []string, files []ImageFile) error {
	dirs := map[string]bool{"etc": true, "tmp": true}
	var out []imageFile
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean(f.Path), "/")
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		out = append(out, imageFile{path: p, mode: f.Mode, content: f.Content})
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds) // parents first
	var all []imageFile
	for _, d := range ds {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		all = append(all, imageFile{path: d, dir: true, mode: mode})
	}
	all = append(all, out...)
	dir, err := c.dir("images")
	if err != nil {
		return err
	}
	archive := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(name)+".tar")
	if err := writeDockerArchive(archive, image{name: name, files: all, cmd: cmd, env: env}); err != nil {
		return err
	}
	if _, err := c.ctr("images", "import", "--platform", "linux/amd64", archive); err != nil {
		return fmt.Errorf("importing %s: %w", name, err)
	}
	return nil
}

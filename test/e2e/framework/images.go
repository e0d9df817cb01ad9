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
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// No registry is reachable here, so the node's images are made locally:
// a one-layer rootfs packed as a docker-archive tar (what `docker save`
// writes) and imported with `ctr -n k8s.io images import`. Pods use them
// without pulling (imagePullPolicy Never, or IfNotPresent with a tag).
const (
	// BusyboxImage is the name the demo manifests use (busybox:1.36,
	// normalized). Its content is Debian's busybox-static, whatever its
	// version: the demos only need a shell and coreutils.
	BusyboxImage = "docker.io/library/busybox:1.36"
	// PauseImage is containerd's sandbox image (pinned_images.sandbox) and
	// the image of the node agents' stand-in pods.
	PauseImage = "localhost/accel-dra-e2e/pause:e2e"
)

type imageFile struct {
	path    string // inside the image, no leading slash
	mode    int64
	content []byte
	link    string // symlink target
	dir     bool
}

type image struct {
	name       string
	files      []imageFile
	entrypoint []string
	cmd        []string
	env        []string // besides PATH
}

// busyboxImage is /bin/busybox from Debian's busybox-static with a
// symlink per applet, /etc/passwd and /etc/group.
func busyboxImage(busybox string) (image, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return image{}, fmt.Errorf("reading busybox (apt install busybox-static): %w", err)
	}
	out, err := run(10*time.Second, busybox, "--list")
	if err != nil {
		return image{}, fmt.Errorf("listing busybox applets: %w", err)
	}
	files := []imageFile{
		{path: "bin", dir: true, mode: 0o755}, {path: "dev", dir: true, mode: 0o755},
		{path: "etc", dir: true, mode: 0o755}, {path: "proc", dir: true, mode: 0o555},
		{path: "sys", dir: true, mode: 0o555}, {path: "tmp", dir: true, mode: 0o1777},
		{path: "root", dir: true, mode: 0o700}, {path: "var", dir: true, mode: 0o755},
		{path: "usr", dir: true, mode: 0o755}, {path: "usr/bin", dir: true, mode: 0o755},
		{path: "bin/busybox", mode: 0o755, content: bin},
		{path: "etc/passwd", mode: 0o644, content: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{path: "etc/group", mode: 0o644, content: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, applet := range strings.Fields(out) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, imageFile{path: "bin/" + applet, link: "busybox"})
	}
	return image{name: BusyboxImage, files: files, cmd: []string{"sh"}}, nil
}

func pauseImage(pause string) (image, error) {
	bin, err := os.ReadFile(pause)
	if err != nil {
		return image{}, fmt.Errorf("reading pause binary (hack/e2e/build.sh builds it): %w", err)
	}
	return image{name: PauseImage, files: []imageFile{{path: "pause", mode: 0o755, content: bin}}, entrypoint: []string{"/pause"}}, nil
}

// writeDockerArchive writes img as a docker-archive tar at path.
func writeDockerArchive(path string, img image) error {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	mtime := time.Unix(0, 0)
	for _, f := range img.files {
		h := &tar.Header{Name: f.path, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.path+"/"
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.content))
		}
		if err := lw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing layer of %s: %w", img.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := lw.Write(f.content); err != nil {
				return fmt.Errorf("writing layer of %s: %w", img.name, err)
			}
		}
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("writing layer of %s: %w", img.name, err)
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerID := hex.EncodeToString(layerSum[:])

	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      mtime.UTC().Format(time.RFC3339),
		"config": map[string]any{
			"Env":        append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, img.env...),
			"Entrypoint": img.entrypoint,
			"Cmd":        img.cmd,
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerID}},
		"history": []map[string]any{{"created": mtime.UTC().Format(time.RFC3339), "created_by": "accel-dra test/e2e/framework"}},
	})
	if err != nil {
		return fmt.Errorf("encoding image config of %s: %w", img.name, err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{img.name},
		"Layers":   []string{layerID + "/layer.tar"},
	}})
	if err != nil {
		return fmt.Errorf("encoding manifest of %s: %w", img.name, err)
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating image archive: %w", err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerID + "/layer.tar", layer.Bytes()}, {"manifest.json", manifest}} {
		if dir := filepath.Dir(e.name); dir != "." {
			if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
				return fmt.Errorf("writing image archive: %w", err)
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data)), ModTime: mtime}); err != nil {
			return fmt.Errorf("writing image archive: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("writing image archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing image archive: %w", err)
	}
	return f.Close()
}

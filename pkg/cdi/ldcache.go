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

package cdi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
)

// The driver's libraries reach a container through its ld.so cache, not
// LD_LIBRARY_PATH: CDI env edits replace a variable, so setting it would
// clobber the image's own (CANN, PyTorch and MindSpore images set one). As
// the NVIDIA container toolkit does (nvidia-cdi-hook update-ldcache), a
// createContainer hook runs the host's ldconfig on the container's root
// once the driver directories are mounted; the loader then finds the
// libraries after whatever the image's LD_LIBRARY_PATH names.
const (
	// HookSubcommand is the first argument that makes the node agent's
	// binary run as the hook (cmd/accel-dra-kubeletplugin).
	HookSubcommand = "cdi-hook"
	// HookUpdateLDCache is the hook's one action.
	HookUpdateLDCache = "update-ldcache"
	// HookFile is the name of the agent's binary installed as the hook
	// in its state directory, which the host and the agent see at the
	// same path.
	HookFile = "accel-dra-cdi-hook"
	// DefaultLDConfig is the host's ldconfig: /sbin/ldconfig on every
	// glibc distribution Ascend drivers ship for (a symlink into /usr/sbin
	// where /usr is merged; Ubuntu's wrapper script passes its arguments
	// to ldconfig.real).
	DefaultLDConfig = "/sbin/ldconfig"
	// hookTimeout bounds the hook: runc waits for it before the container
	// starts. ldconfig over a few directories takes milliseconds.
	hookTimeout = 10 * time.Second
	// maxHookInput bounds what the hook reads: the runtime's state (a few
	// hundred bytes) and the bundle's config.json.
	maxHookInput = 4 << 20
)

// InstallHook copies the executable at src (the agent's own binary) to
// dir/HookFile, unless an identical file is there, and returns that path.
// The copy is atomic (rename), so a container starting meanwhile runs the
// old hook or the new one, never half a file.
func InstallHook(src, dir string) (string, error) {
	dst := filepath.Join(dir, HookFile)
	// Streamed, never read whole: src is the agent's own binary (about
	// 50 MiB), and a buffer that size stays in the agent's resident memory
	// for minutes after it is freed (the Go runtime hands freed heap back
	// to the kernel slowly): it was most of the agent's RSS
	// (docs/benchmarks.md).
	want, err := fileSHA256(src)
	if err != nil {
		return "", fmt.Errorf("installing the CDI hook: reading %s: %w", src, err)
	}
	if have, err := fileSHA256(dst); err == nil && have == want {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("installing the CDI hook: reading %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, "."+HookFile+"-*")
	if err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return "", fmt.Errorf("installing the CDI hook: copying %s to %s: %w", src, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	return dst, nil
}

// fileSHA256 is the SHA-256 of the file at path, read in small pieces.
func fileSHA256(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// ldcacheHookArgs are the hook's arguments (args[0] included) for the
// library directories dirs.
func ldcacheHookArgs(hook string, dirs []string) []string {
	args := []string{hook, HookSubcommand, HookUpdateLDCache, "--ldconfig=" + DefaultLDConfig}
	for _, d := range dirs {
		args = append(args, "--folder="+d)
	}
	return args
}

// RunHook is the hook's main: args are those after HookSubcommand, state
// the OCI state the runtime writes to the hook's stdin.
func RunHook(ctx context.Context, args []string, state io.Reader) error {
	if len(args) == 0 || args[0] != HookUpdateLDCache {
		return fmt.Errorf("%s: want %s, got %q", HookSubcommand, HookUpdateLDCache, args)
	}
	ldconfig := DefaultLDConfig
	var dirs []string
	for _, a := range args[1:] {
		if d, ok := strings.CutPrefix(a, "--folder="); ok && d != "" {
			dirs = append(dirs, d)
			continue
		}
		if l, ok := strings.CutPrefix(a, "--ldconfig="); ok && l != "" {
			ldconfig = l
			continue
		}
		return fmt.Errorf("%s %s: unknown argument %q", HookSubcommand, HookUpdateLDCache, a)
	}
	root, err := containerRoot(state)
	if err != nil {
		return fmt.Errorf("%s %s: %w", HookSubcommand, HookUpdateLDCache, err)
	}
	return UpdateLDCache(ctx, ldconfig, root, dirs)
}

// containerRoot is the root filesystem of the container whose OCI state
// is read from state: its bundle's config.json root.path, relative to the
// bundle unless absolute.
func containerRoot(state io.Reader) (string, error) {
	var s oci.State
	if err := json.NewDecoder(io.LimitReader(state, maxHookInput)).Decode(&s); err != nil {
		return "", fmt.Errorf("decoding the container's state from stdin: %w", err)
	}
	if s.Bundle == "" {
		return "", errors.New("the container's state has no bundle")
	}
	f, err := os.Open(filepath.Join(s.Bundle, "config.json"))
	if err != nil {
		return "", fmt.Errorf("reading the bundle of container %s: %w", s.ID, err)
	}
	defer f.Close()
	var spec oci.Spec
	if err := json.NewDecoder(io.LimitReader(f, maxHookInput)).Decode(&spec); err != nil {
		return "", fmt.Errorf("decoding %s: %w", f.Name(), err)
	}
	if spec.Root == nil || spec.Root.Path == "" {
		return "", fmt.Errorf("%s has no root.path", f.Name())
	}
	root := spec.Root.Path
	if !filepath.IsAbs(root) {
		root = filepath.Join(s.Bundle, root)
	}
	return root, nil
}

// UpdateLDCache adds dirs (paths inside the container) to the ld.so cache
// of the container whose root filesystem is root, running ldconfig with
// -r: it resolves every path inside root, so a symlink in the image cannot
// point it at the host. -X leaves the read-only driver mounts alone (no
// soname links). The container's own /etc/ld.so.conf is kept: its
// directories stay in the cache.
func UpdateLDCache(ctx context.Context, ldconfig, root string, dirs []string) error {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("updating the ld.so cache: container root %s is not a directory", root)
	}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ldconfig, append([]string{"-X", "-r", root}, dirs...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("updating the ld.so cache of %s: %s %v: %w: %s", root, ldconfig, cmd.Args[1:], err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

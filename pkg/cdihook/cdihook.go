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

// Package cdihook is the createContainer hook of accel-dra's CDI specs,
// accel-dra-cdi-hook: it adds the vendor driver's library directories to
// a container's ld.so cache. It is its own small binary
// (cmd/accel-dra-cdi-hook), static, with no dynamic loader: the runtime
// runs it as root on the node before the container starts, and an
// interpreter would honour the LD_PRELOAD of whatever environment it got
// (the NVIDIAScape pattern, CVE-2025-23266; docs/security.md). The
// package imports the standard library and the OCI types only, so the
// binary stays static; test/imports keeps it so.
package cdihook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
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
	// Subcommand is the hook's first argument. Specs written before the
	// hook was a binary of its own ran the agent's binary with it; the
	// hook binary takes the same arguments, so those specs run the new
	// hook once the agent has replaced the file.
	Subcommand = "cdi-hook"
	// ActionUpdateLDCache is the hook's one action.
	ActionUpdateLDCache = "update-ldcache"
	// File is the name of the hook binary, shipped next to the agent's
	// and installed in the agent's state directory, which the host and
	// the agent see at the same path.
	File = "accel-dra-cdi-hook"
	// DefaultLDConfig is the host's ldconfig: /sbin/ldconfig on every
	// glibc distribution Ascend drivers ship for (a symlink into /usr/sbin
	// where /usr is merged; Ubuntu's is a /bin/sh wrapper that runs
	// ldconfig.real, which is why it runs with Env and Dir of its own).
	DefaultLDConfig = "/sbin/ldconfig"
	// hookTimeout bounds the hook: runc waits for it before the container
	// starts. ldconfig over a few directories takes milliseconds.
	hookTimeout = 10 * time.Second
	// maxHookInput bounds what the hook reads: the runtime's state (a few
	// hundred bytes) and the bundle's config.json.
	maxHookInput = 4 << 20
)

// Env is the whole environment the hook runs with, named in every spec.
// runc and crun run a createContainer hook whose spec has no env with the
// container's environment (the image's ENV and the pod's env), in the
// container's root directory: an LD_PRELOAD there would reach any
// dynamically linked program the hook is or runs. A spec's env replaces
// that environment; it must not be empty, or the runtime inherits again.
var Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}

// Args are the hook's arguments (args[0] included) for the library
// directories dirs, hook being the path of the installed binary.
func Args(hook string, dirs []string) []string {
	args := []string{hook, Subcommand, ActionUpdateLDCache, "--ldconfig=" + DefaultLDConfig}
	for _, d := range dirs {
		args = append(args, "--folder="+d)
	}
	return args
}

// Timeout is the hook's timeout in seconds, for the spec.
func Timeout() int { return int(hookTimeout / time.Second) }

// Install copies the hook binary at src to dir/File, unless an identical
// file is there, and returns that path. src must be statically linked
// (CheckStatic): the runtime runs it as root with an environment the
// container may have chosen. The copy is atomic (rename), so a container
// starting meanwhile runs the old hook or the new one, never half a file.
func Install(src, dir string) (string, error) {
	if err := CheckStatic(src); err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	dst := filepath.Join(dir, File)
	// Streamed, never read whole: a buffer the binary's size would stay
	// in the agent's resident memory for minutes after it is freed
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
	if err := copyExecutable(src, dir, dst); err != nil {
		return "", fmt.Errorf("installing the CDI hook: %w", err)
	}
	return dst, nil
}

// RemoveUnsafe removes dir/File when it is not static: an agent before
// 2026-12-06 installed its own dynamically linked binary there, and specs
// it wrote still name it. Without a hook to replace it, a container
// started from such a spec fails (the hook is missing) rather than run a
// loader that honours the container's LD_PRELOAD as root. It reports
// whether it removed the file.
func RemoveUnsafe(dir string) (bool, error) {
	path := filepath.Join(dir, File)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if CheckStatic(path) == nil {
		return false, nil
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("removing the dynamically linked CDI hook %s: %w", path, err)
	}
	return true, nil
}

// copyExecutable copies src to dst through a temporary file in dir.
func copyExecutable(src, dir, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, "."+File+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copying %s to %s: %w", src, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// CheckStatic fails unless path is an ELF executable without a program
// interpreter (PT_INTERP) and without shared library dependencies: the
// kernel then starts it directly, and no dynamic loader reads LD_PRELOAD,
// LD_LIBRARY_PATH or LD_AUDIT from its environment. A Go binary that
// uses purego (as the agent does for the vendor libraries) has an
// interpreter even with CGO_ENABLED=0.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it has a program interpreter): the hook runs as root with an environment the container may set, so it must be static (CGO_ENABLED=0, no purego)", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: reading its dynamic section: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v: the hook must be static", path, libs)
	}
	return nil
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

// Run is the hook's main: args are those after Subcommand, state the OCI
// state the runtime writes to the hook's stdin.
func Run(ctx context.Context, args []string, state io.Reader) error {
	if len(args) == 0 || args[0] != ActionUpdateLDCache {
		return fmt.Errorf("%s: want %s, got %q", Subcommand, ActionUpdateLDCache, args)
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
		return fmt.Errorf("%s %s: unknown argument %q", Subcommand, ActionUpdateLDCache, a)
	}
	root, err := containerRoot(state)
	if err != nil {
		return fmt.Errorf("%s %s: %w", Subcommand, ActionUpdateLDCache, err)
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
	// Never the hook's own environment nor working directory (the
	// container's root): ldconfig may be a shell script (Ubuntu's
	// wrapper), and a dynamic one honours LD_PRELOAD.
	cmd.Env, cmd.Dir = Env, "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("updating the ld.so cache of %s: %s %v: %w: %s", root, ldconfig, cmd.Args[1:], err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

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

package cdihook_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/cdihook"
)

// The hook, run as the container runtime runs it (the OCI state on stdin,
// the bundle's config.json naming the root relative to the bundle), puts
// a library of a mounted driver directory into the container's ld.so
// cache, where the loader finds it without LD_LIBRARY_PATH, and keeps the
// image's own /etc/ld.so.conf directories.
func TestTheLDCacheHookAddsTheDriverLibrariesToTheContainersCache(t *testing.T) {
	if _, err := os.Stat(cdihook.DefaultLDConfig); err != nil {
		t.Skipf("needs the host's ldconfig: %v", err)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("needs gcc to build a shared library")
	}
	bundle := t.TempDir()
	root := filepath.Join(bundle, "rootfs")
	lib := filepath.Join(root, "usr/local/Ascend/driver/lib64")
	own := filepath.Join(root, "opt/image/lib")
	for _, d := range []string{filepath.Join(root, "etc"), lib, own} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	src := filepath.Join(t.TempDir(), "probe.c")
	require.NoError(t, os.WriteFile(src, []byte("int probe(void) { return 42; }\n"), 0o644))
	for _, so := range []string{filepath.Join(lib, "libascend_probe.so"), filepath.Join(own, "libimage.so")} {
		out, err := exec.Command(gcc, "-shared", "-fPIC", "-Wl,-soname,"+filepath.Base(so), "-o", so, src).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/ld.so.conf"), []byte("/opt/image/lib\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"ociVersion":"1.2.0","root":{"path":"rootfs"}}`), 0o644))

	state := strings.NewReader(`{"ociVersion":"1.2.0","id":"c1","status":"creating","pid":1,"bundle":"` + bundle + `"}`)
	args := []string{cdihook.ActionUpdateLDCache, "--ldconfig=" + cdihook.DefaultLDConfig, "--folder=/usr/local/Ascend/driver/lib64", "--folder=/usr/local/Ascend/driver/lib64/common"}
	require.NoError(t, cdihook.Run(context.Background(), args, state))

	out, err := exec.Command(cdihook.DefaultLDConfig, "-p", "-C", filepath.Join(root, "etc/ld.so.cache")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "libascend_probe.so (libc6,x86-64) => /usr/local/Ascend/driver/lib64/libascend_probe.so")
	require.Contains(t, string(out), "libimage.so (libc6,x86-64) => /opt/image/lib/libimage.so")
	_, err = os.Lstat(filepath.Join(lib, "libascend_probe.so.0"))
	require.True(t, os.IsNotExist(err), "no links are made in the read-only driver mount")
}

func TestTheLDCacheHookRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, state string
		args        []string
		want        string
	}{
		{name: "another action", args: []string{"chmod"}, want: `cdi-hook: want update-ldcache, got ["chmod"]`},
		{name: "an unknown flag", args: []string{cdihook.ActionUpdateLDCache, "--root=/"}, want: `cdi-hook update-ldcache: unknown argument "--root=/"`},
		{name: "no state", args: []string{cdihook.ActionUpdateLDCache}, state: "", want: "cdi-hook update-ldcache: decoding the container's state from stdin: EOF"},
		{name: "no bundle", args: []string{cdihook.ActionUpdateLDCache}, state: `{"id":"c1"}`, want: "cdi-hook update-ldcache: the container's state has no bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.EqualError(t, cdihook.Run(context.Background(), tt.args, strings.NewReader(tt.state)), tt.want)
		})
	}
}

// The agent installs the hook binary once; an identical copy is left as
// it is, a changed binary replaces it.
func TestInstallCopiesTheHookOnlyWhenItChanged(t *testing.T) {
	v1, v2 := buildC(t, "int main(void) { return 1; }", "-static"), buildC(t, "int main(void) { return 2; }", "-static")
	src := filepath.Join(t.TempDir(), "hook")
	copyFile(t, v1, src)
	dir := filepath.Join(t.TempDir(), "state")
	p, err := cdihook.Install(src, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, cdihook.File), p)
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm())

	before := st
	_, err = cdihook.Install(src, dir)
	require.NoError(t, err)
	st, err = os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, st), "an identical hook is not rewritten")

	copyFile(t, v2, src)
	_, err = cdihook.Install(src, dir)
	require.NoError(t, err)
	requireSameContent(t, v2, p)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
}

// A hook binary with a dynamic loader is refused, and the installed hook
// is left as it was: the loader would honour an LD_PRELOAD the container
// set, as root on the node.
func TestInstallRefusesADynamicallyLinkedHook(t *testing.T) {
	static, dynamic := buildC(t, "int main(void) { return 0; }", "-static"), buildC(t, "int main(void) { return 0; }")
	dir := t.TempDir()
	_, err := cdihook.Install(static, dir)
	require.NoError(t, err)
	tests := []struct{ name, src, want string }{
		{name: "dynamic", src: dynamic, want: "is dynamically linked (it has a program interpreter)"},
		{name: "not ELF", src: writeFile(t, "#!/bin/sh\nexit 0\n"), want: "not an ELF executable"},
		{name: "missing", src: filepath.Join(dir, "nope"), want: "not an ELF executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cdihook.Install(tt.src, dir)
			require.ErrorContains(t, err, "installing the CDI hook: "+tt.src)
			require.ErrorContains(t, err, tt.want)
			requireSameContent(t, static, filepath.Join(dir, cdihook.File))
		})
	}
}

// The hook binary as the Makefile and the image build it (the default
// go build, no cgo package imported) is static.
func TestTheHookBinaryIsStatic(t *testing.T) {
	bin := filepath.Join(t.TempDir(), cdihook.File)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/accel-dra/accel-dra/cmd/accel-dra-cdi-hook").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, cdihook.CheckStatic(bin))
}

// buildC compiles the C program src with gcc and flags.
func buildC(t *testing.T, src string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	require.NoError(t, err, "the tests build C programs with gcc")
	dir := t.TempDir()
	c := filepath.Join(dir, "main.c")
	require.NoError(t, os.WriteFile(c, []byte(src+"\n"), 0o644))
	bin := filepath.Join(dir, "main")
	out, err := exec.Command(gcc, append(flags, "-o", bin, c)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	return p
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o755))
}

func requireSameContent(t *testing.T, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	require.NoError(t, err)
	g, err := os.ReadFile(got)
	require.NoError(t, err)
	require.True(t, string(w) == string(g), "%s has the content of %s", got, want)
}

// Without a hook to install, a dynamically linked one an older agent left
// is removed; a static one and none are left as they are.
func TestRemoveUnsafeRemovesOnlyADynamicallyLinkedHook(t *testing.T) {
	static, dynamic := buildC(t, "int main(void) { return 0; }", "-static"), buildC(t, "int main(void) { return 0; }")
	tests := []struct {
		name, installed string
		removed         bool
	}{
		{name: "dynamic", installed: dynamic, removed: true},
		{name: "static", installed: static},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, cdihook.File)
			if tt.installed != "" {
				copyFile(t, tt.installed, path)
			}
			removed, err := cdihook.RemoveUnsafe(dir)
			require.NoError(t, err)
			require.Equal(t, tt.removed, removed)
			_, err = os.Stat(path)
			require.Equal(t, tt.installed == "" || tt.removed, os.IsNotExist(err), "the hook is gone: %v", err)
		})
	}
}

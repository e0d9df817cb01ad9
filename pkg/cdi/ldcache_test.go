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

package cdi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// An Ascend claim's container keeps the image's LD_LIBRARY_PATH (CDI env
// edits replace a variable) and gets a createContainer hook that adds the
// driver's library directories present on the node to its ld.so cache.
// Cambricon mounts no libraries, so its specs have no hook.
func TestAscendSpecsLeaveTheImagesLDLibraryPathAndAddTheDriverLibrariesToTheLDCache(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	require.NoError(t, os.RemoveAll(filepath.Join(n.root, "usr/local/Ascend/driver/lib64/common")))
	w, dir := n.writerWith(t, cdi.VisibleDevicesAuto)
	uid := types.UID("0a1b2c3d-0000-4000-8000-000000000003")

	a := n.claim(uid, ascend.Vendor, 0)
	ids, err := w.Write(context.Background(), a)
	require.NoError(t, err)
	spec := injectWithEnv(t, dir, []string{"LD_LIBRARY_PATH=/opt/app/lib"}, flatten(a, ids)...)
	var ld []string
	for _, e := range spec.Process.Env {
		if v, ok := strings.CutPrefix(e, "LD_LIBRARY_PATH="); ok {
			ld = append(ld, v)
		}
	}
	require.Equal(t, []string{"/opt/app/lib"}, ld, "the image's LD_LIBRARY_PATH is left as it was")
	require.NotNil(t, spec.Hooks)
	require.Len(t, spec.Hooks.CreateContainer, 1)
	h := spec.Hooks.CreateContainer[0]
	require.Equal(t, testHook, h.Path)
	// lib64/common is not on this node: only the directories present.
	require.Equal(t, []string{testHook, cdi.HookSubcommand, cdi.HookUpdateLDCache, "--ldconfig=/sbin/ldconfig",
		"--folder=/usr/local/Ascend/driver/lib64/driver"}, h.Args)
	require.NotNil(t, h.Timeout)

	m := n.claim(uid, cambricon.Vendor, 0)
	ids, err = w.Write(context.Background(), m)
	require.NoError(t, err)
	spec = inject(t, dir, flatten(m, ids)...)
	require.True(t, spec.Hooks == nil || len(spec.Hooks.CreateContainer) == 0, "no hook for Cambricon: %+v", spec.Hooks)
}

// The hook, run as the container runtime runs it (the OCI state on stdin,
// the bundle's config.json naming the root relative to the bundle), puts
// a library of a mounted driver directory into the container's ld.so
// cache, where the loader finds it without LD_LIBRARY_PATH, and keeps the
// image's own /etc/ld.so.conf directories.
func TestTheLDCacheHookAddsTheDriverLibrariesToTheContainersCache(t *testing.T) {
	if _, err := os.Stat(cdi.DefaultLDConfig); err != nil {
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
	args := []string{cdi.HookUpdateLDCache, "--ldconfig=" + cdi.DefaultLDConfig, "--folder=/usr/local/Ascend/driver/lib64", "--folder=/usr/local/Ascend/driver/lib64/common"}
	require.NoError(t, cdi.RunHook(context.Background(), args, state))

	out, err := exec.Command(cdi.DefaultLDConfig, "-p", "-C", filepath.Join(root, "etc/ld.so.cache")).CombinedOutput()
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
		{name: "an unknown flag", args: []string{cdi.HookUpdateLDCache, "--root=/"}, want: `cdi-hook update-ldcache: unknown argument "--root=/"`},
		{name: "no state", args: []string{cdi.HookUpdateLDCache}, state: "", want: "cdi-hook update-ldcache: decoding the container's state from stdin: EOF"},
		{name: "no bundle", args: []string{cdi.HookUpdateLDCache}, state: `{"id":"c1"}`, want: "cdi-hook update-ldcache: the container's state has no bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.EqualError(t, cdi.RunHook(context.Background(), tt.args, strings.NewReader(tt.state)), tt.want)
		})
	}
}

// The agent installs its binary as the hook once; an identical copy is
// left as it is, a changed binary replaces it.
func TestInstallHookCopiesTheBinaryOnlyWhenItChanged(t *testing.T) {
	src := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.WriteFile(src, []byte("v1"), 0o755))
	dir := filepath.Join(t.TempDir(), "state")
	p, err := cdi.InstallHook(src, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, cdi.HookFile), p)
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm())

	before := st
	_, err = cdi.InstallHook(src, dir)
	require.NoError(t, err)
	st, err = os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, st), "an identical hook is not rewritten")

	require.NoError(t, os.WriteFile(src, []byte("v2"), 0o755))
	_, err = cdi.InstallHook(src, dir)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "v2", string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
}

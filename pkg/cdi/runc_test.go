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

// The written spec's createContainer hook under a real OCI runtime
// (Debian's runc, which make testdeps installs): runc runs a hook whose
// spec has no env with the container's environment, in the container's
// root directory, as root on the node. A tenant's LD_PRELOAD must reach
// nothing that runs there.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// preload is a library that records, in the file RECORD, every process
// that loads it: its uid, executable and working directory.
const preload = `#include <stdio.h>
#include <unistd.h>
#include <limits.h>
__attribute__((constructor)) static void record(void) {
	char cwd[PATH_MAX] = "?", exe[PATH_MAX] = "?";
	if (!getcwd(cwd, sizeof cwd)) cwd[0] = '?';
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) exe[n] = 0;
	FILE *f = fopen(RECORD, "a");
	if (!f) return;
	fprintf(f, "uid=%d exe=%s cwd=%s\n", (int)getuid(), exe, cwd);
	fclose(f);
}
`

func TestTheLDCacheHookRunsNoTenantCodeUnderRunc(t *testing.T) {
	runc, err := exec.LookPath("runc")
	if os.Geteuid() != 0 {
		t.Skip("needs root: runc runs the container")
	}
	require.NoError(t, err, "make testdeps installs Debian's runc")
	tests := []struct {
		name string
		// edit changes the hook as the written spec has it.
		edit func(t *testing.T, h *oci.Hook, preloadEnv string)
	}{
		{name: "the written spec", edit: func(*testing.T, *oci.Hook, string) {}},
		{
			// Ubuntu's /sbin/ldconfig is a /bin/sh script: the hook runs
			// it with an environment of its own even when the hook's
			// environment carries LD_PRELOAD.
			name: "an ldconfig wrapper script, and LD_PRELOAD in the hook's env",
			edit: func(t *testing.T, h *oci.Hook, preloadEnv string) {
				wrapper := filepath.Join(t.TempDir(), "ldconfig")
				require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+cdihook.DefaultLDConfig+" \"$@\"\n"), 0o755))
				for i, a := range h.Args {
					if strings.HasPrefix(a, "--ldconfig=") {
						h.Args[i] = "--ldconfig=" + wrapper
					}
				}
				h.Env = append(h.Env, preloadEnv)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRuncContainer(t)
			preloadEnv := "LD_PRELOAD=/proc/self/cwd/evil.so:" + c.evil
			spec := c.spec(t, preloadEnv)
			require.NotNil(t, spec.Hooks)
			require.Len(t, spec.Hooks.CreateContainer, 1, "the written spec's one hook")
			tt.edit(t, &spec.Hooks.CreateContainer[0], preloadEnv)
			// The control: a dynamically linked hook without env, as
			// the spec used to have, runs the tenant's library.
			spec.Hooks.CreateContainer = append([]oci.Hook{{Path: "/bin/true", Args: []string{"true"}}}, spec.Hooks.CreateContainer...)
			c.run(t, runc, spec)

			records := c.records(t)
			require.NotEmpty(t, records, "the control hook loads the tenant's library: the runtime passes the container's environment")
			for _, r := range records {
				require.Contains(t, r, "exe=/usr/bin/true ", "only the control hook ran the tenant's library: %q", records)
			}
			out, err := exec.Command(cdihook.DefaultLDConfig, "-p", "-C", filepath.Join(c.rootfs, "etc/ld.so.cache")).CombinedOutput()
			require.NoError(t, err, "the hook wrote the container's ld.so cache: %s", out)
			require.Contains(t, string(out), "libascend_probe.so (libc6,x86-64) => /usr/local/Ascend/driver/lib64/driver/libascend_probe.so", "the hook did its job")
		})
	}
}

// runcContainer is a bundle for runc whose container gets an Ascend
// claim's CDI devices, with a tenant library evil that records who loads
// it in record.
type runcContainer struct {
	node                         node
	bundle, rootfs, evil, record string
	hook, specDir, stateDir      string
}

func newRuncContainer(t *testing.T) *runcContainer {
	t.Helper()
	n := newNode(t, "atlas-800t-a2", nil)
	dir := t.TempDir()
	c := &runcContainer{node: n, bundle: filepath.Join(dir, "bundle"), record: filepath.Join(dir, "record"), specDir: filepath.Join(dir, "cdi"), stateDir: filepath.Join(dir, "runc")}
	c.rootfs = filepath.Join(c.bundle, "rootfs")
	for _, d := range []string{filepath.Join(c.rootfs, "etc"), c.specDir} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	// The tenant's library, in the image (found through the hook's
	// working directory, the container's root) and on the host.
	c.evil = filepath.Join(dir, "evil.so")
	cc(t, preload, c.evil, "-shared", "-fPIC", `-DRECORD="`+c.record+`"`)
	data, err := os.ReadFile(c.evil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(c.rootfs, "evil.so"), data, 0o755))
	// The container's process: static, so the preload never runs in it.
	cc(t, "int main(void) { return 0; }", filepath.Join(c.rootfs, "init"), "-static")
	// A driver library the hook puts into the container's cache.
	lib := filepath.Join(n.root, "usr/local/Ascend/driver/lib64/driver")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	cc(t, "int probe(void) { return 42; }", filepath.Join(lib, "libascend_probe.so"), "-shared", "-fPIC", "-Wl,-soname,libascend_probe.so")
	// The hook as the agent installs it.
	bin := filepath.Join(dir, "bin", cdihook.File)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/accel-dra/accel-dra/cmd/accel-dra-cdi-hook").CombinedOutput()
	require.NoError(t, err, "%s", out)
	c.hook, err = cdihook.Install(bin, filepath.Join(dir, "state"))
	require.NoError(t, err)
	return c
}

// spec is the OCI spec of a container that sets env and gets an Ascend
// claim's devices, injected by the CDI library from the written spec as
// a container runtime injects them.
func (c *runcContainer) spec(t *testing.T, env string) *oci.Spec {
	t.Helper()
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: c.specDir, HostRoot: c.node.root, LDCacheHook: c.hook})
	require.NoError(t, err)
	claim := c.node.claim(types.UID("0a1b2c3d-0000-4000-8000-0000000000ee"), ascend.Vendor, 0)
	ids, err := w.Write(context.Background(), claim)
	require.NoError(t, err)
	spec := runcDefaultSpec(t)
	spec.Process.Terminal = false
	spec.Process.Args = []string{"/init"}
	spec.Process.Env = append(spec.Process.Env, env)
	spec.Root = &oci.Root{Path: "rootfs"}
	unresolved, err := requireValidSpecs(t, c.specDir).InjectDevices(spec, flatten(claim, ids)...)
	require.NoError(t, err)
	require.Empty(t, unresolved)
	return spec
}

// runcDefaultSpec is the spec `runc spec` writes.
func runcDefaultSpec(t *testing.T) *oci.Spec {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("runc", "spec", "--bundle", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var spec oci.Spec
	require.NoError(t, json.Unmarshal(data, &spec))
	return &spec
}

// run runs the container to its end with runc.
func (c *runcContainer) run(t *testing.T, runc string, spec *oci.Spec) {
	t.Helper()
	data, err := json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(c.bundle, "config.json"), data, 0o644))
	id := "accel-dra-hook-" + filepath.Base(filepath.Dir(c.bundle))
	t.Cleanup(func() { _ = exec.Command(runc, "--root", c.stateDir, "delete", "--force", id).Run() })
	out, err := exec.Command(runc, "--root", c.stateDir, "run", "--bundle", c.bundle, id).CombinedOutput()
	require.NoError(t, err, "runc run: %s", out)
}

// records are the lines the tenant's library wrote.
func (c *runcContainer) records(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(c.record)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// cc compiles the C source src into out with gcc and flags.
func cc(t *testing.T, src, out string, flags ...string) {
	t.Helper()
	c := filepath.Join(t.TempDir(), "src.c")
	require.NoError(t, os.WriteFile(c, []byte(src+"\n"), 0o644))
	res, err := exec.Command("gcc", append(flags, "-o", out, c)...).CombinedOutput()
	require.NoError(t, err, "gcc: %s", res)
}

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

package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// TestAnImageKeepsItsLDLibraryPathAndFindsTheAscendDriverLibraries runs,
// in a real container with an Ascend claim, a program linked against a
// driver library (in the node's /usr/local/Ascend/driver/lib64, which
// the claim's CDI spec mounts) and against a library of the image, which
// the image finds through its own LD_LIBRARY_PATH, as CANN, PyTorch and
// MindSpore images do. The spec must not replace that variable, and the
// driver library must still load: the spec's createContainer hook put
// the driver directories into the container's ld.so cache.
func TestAnImageKeepsItsLDLibraryPathAndFindsTheAscendDriverLibraries(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	require.NoError(t, err, "the e2e tier builds the probe with gcc")
	agent := cluster.RealAgent()
	work := t.TempDir()
	cc := func(args ...string) {
		t.Helper()
		out, err := exec.Command(gcc, args...).CombinedOutput()
		require.NoError(t, err, "gcc %v: %s", args, out)
	}
	write := func(name, src string) string {
		p := filepath.Join(work, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	driverDir := filepath.Join(work, "driver")
	imageDir := filepath.Join(work, "image")
	require.NoError(t, os.MkdirAll(driverDir, 0o755))
	require.NoError(t, os.MkdirAll(imageDir, 0o755))
	cc("-shared", "-fPIC", "-Wl,-soname,libascend_probe.so", "-o", filepath.Join(driverDir, "libascend_probe.so"),
		write("probe.c", "int ascend_probe(void) { return 42; }\n"))
	cc("-shared", "-fPIC", "-Wl,-soname,libimage_probe.so", "-o", filepath.Join(imageDir, "libimage_probe.so"),
		write("image.c", "int image_probe(void) { return 7; }\n"))
	app := filepath.Join(work, "app")
	cc("-o", app, write("main.c", `#include <stdio.h>
#include <stdlib.h>
int ascend_probe(void);
int image_probe(void);
int main(void) {
	const char *ld = getenv("LD_LIBRARY_PATH");
	printf("ascend_probe=%d image_probe=%d\nLD_LIBRARY_PATH=%s\n", ascend_probe(), image_probe(), ld ? ld : "<unset>");
	return 0;
}
`), "-L"+driverDir, "-lascend_probe", "-L"+imageDir, "-limage_probe")

	// The driver library goes where the node's driver keeps its
	// libraries, under the agent's root.
	lib64 := filepath.Join(agent.Root, "usr/local/Ascend/driver/lib64/driver")
	require.NoError(t, os.MkdirAll(lib64, 0o755))
	installed := filepath.Join(lib64, "libascend_probe.so")
	data, err := os.ReadFile(filepath.Join(driverDir, "libascend_probe.so"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(installed, data, 0o755))
	t.Cleanup(func() { _ = os.Remove(installed) })

	// The image: the program, its own library and the C library and
	// loader it was linked with, at the host's paths; no ld.so cache.
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	files := []framework.ImageFile{
		{Path: "/app", Mode: 0o755, Content: read(app)},
		{Path: "/opt/image/lib/libimage_probe.so", Mode: 0o755, Content: read(filepath.Join(imageDir, "libimage_probe.so"))},
	}
	out, err := exec.Command("ldd", app).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var p string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			p = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			p = f[0]
		default:
			continue
		}
		files = append(files, framework.ImageFile{Path: p, Mode: 0o755, Content: read(p)})
	}
	const img = "localhost/accel-dra-e2e/ld-probe:e2e"
	require.NoError(t, cluster.ImportImage(img, []string{"LD_LIBRARY_PATH=/opt/image/lib"}, []string{"/app"}, files))

	ns := newNamespace(t)
	createTemplate(t, template(ns, "one-npu", exactly("npu", "ascend.accel-dra.dev", 1)))
	pod := realNodePod(ns, "ld-probe", "one-npu")
	pod.Spec.Containers[0].Image = img
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	pod.Spec.Containers[0].Command = nil
	pod = createPod(t, pod)
	logs := podLogsContaining(t, pod, "LD_LIBRARY_PATH=")
	require.Contains(t, logs, "ascend_probe=42 image_probe=7", "both libraries loaded")
	require.Contains(t, logs, "LD_LIBRARY_PATH=/opt/image/lib\n", "the image's LD_LIBRARY_PATH is its own")
}

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

package ascend

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/nativetest"
)

// buildMockDCMI compiles testdata/dcmi/mock_dcmi.c for the test binary's
// architecture into a libdcmi.so of its own (so every test has the mock's
// state to itself) and points the mock at a fixture of testdata/dcmi,
// with extra lines appended.
func buildMockDCMI(t *testing.T, fixture string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	lib := filepath.Join(dir, "libdcmi.so")
	nativetest.Compile(t, "", "-shared", "-fPIC", "-O1", "-I", "testdata/dcmi", "-o", lib, "testdata/dcmi/mock_dcmi.c")
	data, err := os.ReadFile(filepath.Join("testdata", "dcmi", fixture+".txt"))
	require.NoError(t, err)
	var place string
	lines := slices.DeleteFunc(slices.Clone(extra), func(l string) bool {
		p, ok := strings.CutPrefix(l, "env ")
		if ok {
			place = p
		}
		return ok
	})
	path := filepath.Join(dir, fixture+".txt")
	require.NoError(t, os.WriteFile(path, []byte(string(data)+strings.Join(lines, "\n")+"\n"), 0o644))
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", path)
	t.Setenv("ACCEL_DRA_DCMI_STATE", filepath.Join(dir, "vnpus.state"))
	// The host files DCMI needs for vNPUs (VNPUHostFiles), as the chart
	// mounts them.
	host := filepath.Join(dir, "host")
	require.NoError(t, os.MkdirAll(filepath.Join(host, "run", "vnpu_cfg_lock"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(host, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "etc", "vnpu.cfg"), []byte("vnpu_config_recover:enable\n"), 0o644))
	t.Setenv("ACCEL_DRA_DCMI_ROOT", host)
	layOut(t, host, path, place)
	return lib
}

// layOut makes the caller's filesystem under host what DCMI sees where
// the agent runs (an "env <place>" line of buildMockDCMI's extra lines,
// which is no fixture line): the mock decides where it runs from that, as
// the library does (mock_dcmi.c, in_container). "physical" (or none) is
// root on the host; "privileged" and "container" are our image in a
// privileged or unprivileged container under containerd: the empty
// /.dockerenv the image ships, no shell, a cgroup v2 namespace that names
// no runtime, and the host's /etc/vnpu.cfg as a single-file bind mount;
// the kernel flags the unprivileged one (container-flag plain).
func layOut(t *testing.T, host, fixture, place string) {
	t.Helper()
	switch place {
	case "", "physical":
		return
	case "privileged", "container":
	default:
		t.Fatalf("env %q: want physical, privileged or container", place)
	}
	containerLayout(t, host, true)
	if place == "container" {
		f, err := os.OpenFile(fixture, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("container-flag plain\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// containerLayout writes what a container of our image shows DCMI under
// containerd: /proc/self/cgroup and /proc/self/mountinfo as the kernel
// shows them there, and /.dockerenv where the image ships it.
func containerLayout(t *testing.T, host string, dockerenv bool) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(host, "proc", "self"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "proc", "self", "cgroup"), []byte("0::/\n"), 0o644))
	mountinfo := "1071 992 0:146 / / rw,relatime master:424 - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/41/fs,upperdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/58/fs,workdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/58/work\n" +
		"1072 1071 0:148 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n" +
		"1080 1071 253:1 /etc/vnpu.cfg /etc/vnpu.cfg rw,relatime - ext4 /dev/mapper/root rw\n" +
		"1081 1071 0:25 /vnpu_cfg_lock /run/vnpu_cfg_lock rw,nosuid,nodev - tmpfs tmpfs rw,mode=755\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "proc", "self", "mountinfo"), []byte(mountinfo), 0o644))
	if dockerenv {
		require.NoError(t, os.WriteFile(filepath.Join(host, ".dockerenv"), nil, 0o644))
	}
}

// dcmiLayouts are the C structs of testdata/dcmi/dcmi.h with their fields
// in declaration order, and their Go mirrors.
var dcmiLayouts = []struct {
	c      string
	mirror any
	fields []string
}{
	{"dcmi_chip_info", dcmiChipInfo{}, []string{"chip_type", "chip_name", "chip_ver", "aicore_cnt"}},
	{"dcmi_chip_info_v2", dcmiChipInfoV2{}, []string{"chip_type", "chip_name", "chip_ver", "aicore_cnt", "npu_name"}},
	{"dcmi_pcie_info_all", dcmiPCIeInfoAll{}, []string{"venderid", "subvenderid", "deviceid", "subdeviceid", "domain", "bdf_busid", "bdf_deviceid", "bdf_funcid", "reserve"}},
	{"dcmi_hbm_info", dcmiHBMInfo{}, []string{"memory_size", "freq", "memory_usage", "temp", "bandwith_util_rate"}}, //nolint:misspell // DCMI's own spelling
	{"dcmi_get_memory_info_stru", dcmiMemoryInfo{}, []string{"memory_size", "memory_available", "freq", "hugepagesize", "hugepages_total", "hugepages_free", "utiliza", "reserve"}},
	{"dcmi_ip_addr", dcmiIPAddr{}, []string{"u_addr", "ip_type"}},
	{"dcmi_base_resource", dcmiBaseResource{}, []string{"token", "token_max", "task_timeout", "vfg_id", "vip_mode", "reserved"}},
	{"dcmi_computing_resource", dcmiComputingResource{}, []string{"aic", "aiv", "dsa", "rtsq", "acsq", "cdqm", "c_core", "ffts", "sdma", "pcie_dma",
		"memory_size", "event_id", "notify_id", "stream_id", "model_id", "topic_schedule_aicpu", "host_ctrl_cpu", "host_aicpu", "device_aicpu",
		"topic_ctrl_cpu_slot", "vdev_aicore_utilization", "vdev_memory_total", "vdev_memory_free", "reserved"}},
	{"dcmi_media_resource", dcmiMediaResource{}, []string{"jpegd", "jpege", "vpc", "vdec", "pngd", "venc", "reserved"}},
	{"dcmi_create_vdev_out", dcmiCreateVDevOut{}, []string{"vdev_id", "pcie_bus", "pcie_device", "pcie_func", "vfg_id", "reserved"}},
	{"dcmi_create_vdev_res_stru", dcmiCreateVDevResStru{}, []string{"vdev_id", "vfg_id", "template_name", "reserved"}},
	{"dcmi_vdev_query_info", dcmiVDevQueryInfo{}, []string{"name", "status", "is_container_used", "vfid", "vfg_id", "container_id", "base", "computing", "media"}},
	{"dcmi_vdev_query_stru", dcmiVDevQueryStru{}, []string{"vdev_id", "query_info"}},
	{"dcmi_spod_info", dcmiSpodInfo{}, []string{"sdid", "super_pod_size", "super_pod_id", "server_index", "chassis_id", "super_pod_type", "reserve"}},
	{"dcmi_board_info", dcmiBoardInfo{}, []string{"board_id", "pcb_id", "bom_id", "slot_id"}},
	{"dcmi_soc_total_resource", dcmiSocTotalResource{}, []string{"vdev_num", "vdev_id", "vfg_num", "vfg_bitmap", "base", "computing", "media"}},
}

// TestDCMILayoutMatchesTheCHeader compiles a program against our header
// that prints every struct's size and field offsets, and compares them
// with the Go mirrors purego hands to the library.
func TestDCMILayoutMatchesTheCHeader(t *testing.T) {
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"dcmi.h\"\nint main(void) {\n")
	for _, l := range dcmiLayouts {
		fmt.Fprintf(&src, "  printf(\"%s sizeof %%zu\\n\", sizeof(struct %s));\n", l.c, l.c)
		for _, f := range l.fields {
			fmt.Fprintf(&src, "  printf(\"%s %s %%zu\\n\", offsetof(struct %s, %s));\n", l.c, f, l.c, f)
		}
	}
	src.WriteString("  return 0;\n}\n")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "layout.c"), []byte(src.String()), 0o644))
	abs, err := filepath.Abs("testdata/dcmi")
	require.NoError(t, err)
	nativetest.Compile(t, "", "-I", abs, "-o", filepath.Join(dir, "layout"), filepath.Join(dir, "layout.c"))
	out, err := nativetest.Command(t, filepath.Join(dir, "layout")).Output()
	require.NoError(t, err)
	c := map[string]uintptr{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.Len(t, f, 3)
		n, err := strconv.ParseUint(f[2], 10, 64)
		require.NoError(t, err)
		c[f[0]+" "+f[1]] = uintptr(n)
	}
	for _, l := range dcmiLayouts {
		typ := reflect.TypeOf(l.mirror)
		require.Equal(t, len(l.fields), typ.NumField(), "%s: the Go mirror has one field per C field", l.c)
		require.Equal(t, c[l.c+" sizeof"], typ.Size(), "sizeof(struct %s)", l.c)
		for i, f := range l.fields {
			require.Equal(t, c[l.c+" "+f], typ.Field(i).Offset, "offsetof(struct %s, %s), Go field %s", l.c, f, typ.Field(i).Name)
		}
	}
}

// The fixtures say where their facts come from, not which of this
// project's issues asked for them: an external issue is cited with its
// project and "#" (nvtop issue #421), never a bare "issue 15".
func TestFixturesCiteSourcesNotOurIssueNumbers(t *testing.T) {
	ours := regexp.MustCompile(`(?i)(^|[^a-z#])issues? [0-9]`)
	for _, dir := range []string{"testdata", filepath.Join("..", "cambricon", "testdata")} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".txt") && !strings.HasSuffix(path, ".md")) {
				return err
			}
			for i, line := range strings.Split(readFile(t, path), "\n") {
				require.False(t, ours.MatchString(line), "%s:%d cites an issue of ours: %q", path, i+1, line)
			}
			return nil
		})
		require.NoError(t, err)
	}
}

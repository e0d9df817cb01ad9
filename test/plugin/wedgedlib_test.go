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

package plugin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon/cndevtest"
)

// TestAHungVendorLibraryFailsLivenessAndARestartRecovers runs the node
// agent as a process on a node with both vendors' chips, each read
// through its mock library. Once the driver hangs in DCMI's
// dcmi_get_device_health (the health re-read calls it), the Cambricon
// driver still prepares and unprepares, and /livez fails naming the hung
// call once it has been hung for longer than the hang limit. The kubelet
// then restarts the agent: a new process, with the hang gone, publishes
// the chips and serves both drivers again.
func TestAHungVendorLibraryFailsLivenessAndARestartRecovers(t *testing.T) {
	dir := t.TempDir()
	hang := filepath.Join(dir, "hang")
	a, dcmiLib := twoLibraryNode(t, dir, "hang dcmi_get_device_health "+hang)
	cfg := a.cfg

	livez := func() (int, string) {
		addr, err := os.ReadFile(cfg.HealthAddrFile)
		require.NoError(t, err)
		resp, err := http.Get("http://" + string(addr) + "/livez")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	serves := func(round string) {
		t.Helper()
		for i, k := range []claimKind{
			{vendor: cambricon.Vendor, devices: []string{"mlu-2"}},
			{vendor: ascend.Vendor, devices: []string{"npu-2"}},
		} {
			if round == "hung" && k.vendor == ascend.Vendor {
				continue
			}
			name := fmt.Sprintf("%s-%d", round, i)
			c := k.allocated(name, types.UID("uid-"+name))
			a.addClaim(c)
			a.mustPrepare(k, c)
			resp, err := a.unprepare(registry.DriverFor(k.vendor), c)
			require.NoError(t, err)
			require.Empty(t, resp[string(c.UID)].Error, "unprepare %s", c.Name)
		}
	}

	a.start("")
	a.waitPublished()
	status, body := livez()
	require.Equal(t, http.StatusOK, status, body)
	serves("before")

	// The driver hangs: the next health re-read makes the call.
	require.NoError(t, os.WriteFile(hang, nil, 0o644))
	t.Cleanup(func() { os.Remove(hang) })
	hungAt := time.Now()
	require.Eventually(t, func() bool {
		status, body = livez()
		return status == http.StatusServiceUnavailable
	}, time.Minute, 50*time.Millisecond, "/livez fails once the call is hung past the limit")
	require.GreaterOrEqual(t, time.Since(hungAt), cfg.LibraryHangLimit, "not before the limit")
	require.Regexp(t, `ascend: `+dcmiLib+`: dcmi_get_device_health has not returned for \d+s \(longer than --library-hang-limit 2s\)`, body)
	require.NotContains(t, body, "cambricon", "only the hung library fails liveness")
	// The other vendor's driver serves on.
	serves("hung")

	// The kubelet restarts the agent; the driver no longer hangs.
	a.kill()
	require.NoError(t, os.Remove(hang))
	require.NoError(t, os.Remove(cfg.HealthAddrFile))
	a.start("")
	a.waitPublished()
	require.Eventually(t, func() bool {
		_, err := os.Stat(cfg.HealthAddrFile)
		return err == nil
	}, time.Minute, 10*time.Millisecond)
	status, body = livez()
	require.Equal(t, http.StatusOK, status, body)
	serves("after")
	a.stop()
}

// twoLibraryNode prepares an agent on a node with Ascend and Cambricon
// chips, each read through its mock library, the mock DCMI's fixture
// with these lines added; it returns the agent and the DCMI library.
func twoLibraryNode(t *testing.T, dir, dcmiLines string) (*agent, string) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	// One root with both nodes' device files and PCI functions.
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	for _, src := range []string{dcmiTestdata + "/atlas-800t-a2/root", cambriconTestdata + "/mlu370-x8/root"} {
		out, err := exec.Command("cp", "-a", src+"/.", root).CombinedOutput()
		require.NoError(t, err, "copying %s: %s", src, out)
	}

	// mock_dcmi.c's fixture lines: hang <fn> <file>, count <fn> <n>.
	dcmiLib := filepath.Join(dir, "libdcmi.so")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-I", dcmiTestdata+"/dcmi", "-o", dcmiLib, dcmiTestdata+"/dcmi/mock_dcmi.c").CombinedOutput()
	require.NoError(t, err, "building the mock libdcmi.so: %s", out)
	fixture, err := os.ReadFile(filepath.Join(dcmiTestdata, "dcmi", "atlas-800t-a2.txt"))
	require.NoError(t, err)
	dcmiFixture := filepath.Join(dir, "dcmi.txt")
	require.NoError(t, os.WriteFile(dcmiFixture, append(fixture, []byte(dcmiLines+"\n")...), 0o644))
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", dcmiFixture)
	t.Setenv("ACCEL_DRA_DCMI_STATE", filepath.Join(dir, "dcmi.state"))
	cndevLib := mockCNDevFor(t, dir, root)
	tool := libraryOnlyTool(t, dir)

	cfg := agentConfig{Root: root,
		Libraries:          map[string]string{ascend.Option: dcmiLib, cambricon.Option: cndevLib},
		Tools:              map[string]string{ascend.NpuSmi: tool, cambricon.Cnmon: tool},
		LibraryCallTimeout: 200 * time.Millisecond, LibraryHangLimit: 2 * time.Second,
		HealthInterval: 100 * time.Millisecond, HealthAddrFile: filepath.Join(dir, "healthz-addr")}
	// The node's chips, read through the libraries without the lines.
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", filepath.Join(dcmiTestdata, "dcmi", "atlas-800t-a2.txt"))
	inv, err := source.Discover(ctx, cfg.discovery())
	require.NoError(t, err)
	require.ElementsMatch(t, []inventory.Vendor{ascend.Vendor, cambricon.Vendor}, inv.Vendors(), "both vendors' chips")
	t.Setenv("ACCEL_DRA_DCMI_FIXTURE", dcmiFixture)
	return newAgentOf(t, inv, cfg), dcmiLib
}

// mockCNDevFor builds the mock libcndev for an agent on root (the
// MLU370-X8 fixture node), keeping its state in dir, and returns it.
func mockCNDevFor(t *testing.T, dir, root string) string {
	t.Helper()
	lib := cndevtest.Build(t)
	t.Setenv(cndevtest.EnvFixture, cndevtest.Fixture("mlu370-x8"))
	t.Setenv(cndevtest.EnvState, filepath.Join(dir, "cndev.state"))
	t.Setenv(cndevtest.EnvRoot, root)
	return lib
}

// TestABogusLibraryCountFailsOnlyItsVendorNamingTheCall: a DCMI that
// reports more cards than a node can have fails Ascend's discovery with
// the call named, instead of sizing a slice or loop by the count. The
// agent does not stop for it: the node's MLUs are published and served,
// and /readyz names the failed call until DCMI answers sensibly.
func TestABogusLibraryCountFailsOnlyItsVendorNamingTheCall(t *testing.T) {
	a, dcmiLib := twoLibraryNode(t, t.TempDir(), "count dcmi_get_card_list 100000")
	a.launch("")
	defer a.kill()
	want := "listing Ascend chips through " + dcmiLib + ": dcmi_get_card_list reports 100000 cards, not within 0..64"
	var body string
	require.Eventually(t, func() bool {
		addr, err := os.ReadFile(a.cfg.HealthAddrFile)
		if err != nil {
			return false
		}
		resp, err := http.Get("http://" + string(addr) + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		body = string(data)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, want)
	}, time.Minute, 20*time.Millisecond, "/readyz names the failed call; last: %s", body)
	require.True(t, a.alive(time.Second), "the agent serves the MLUs meanwhile")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(a.dial(a.registrarSocket(cambricon.Driver))).GetInfo(ctx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err, "the Cambricon driver registers")
	require.Equal(t, cambricon.Driver, info.Name)
	require.NoFileExists(t, a.registrarSocket(ascend.Driver), "no Ascend driver without its chips")
	a.stop()
}

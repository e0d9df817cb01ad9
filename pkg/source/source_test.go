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

package source_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// mixedRoot combines the Ascend 910B3 and Cambricon MLU370-X8 fixture
// nodes into one host root with both vendors' recorded tool output, as a
// real mixed node would look.
func mixedRoot(t *testing.T) (root, tools string) {
	t.Helper()
	dir := t.TempDir()
	root, tools = filepath.Join(dir, "root"), filepath.Join(dir, "tools")
	require.NoError(t, os.CopyFS(root, os.DirFS("../vendors/ascend/testdata/atlas-800t-a2/root")))
	require.NoError(t, os.CopyFS(root, os.DirFS("../vendors/cambricon/testdata/mlu370-x8/root")))
	require.NoError(t, os.CopyFS(tools, os.DirFS("../vendors/ascend/testdata/atlas-800t-a2/npu-smi")))
	require.NoError(t, os.CopyFS(tools, os.DirFS("../vendors/cambricon/testdata/mlu370-x8/cnmon")))
	return root, tools
}

func TestARootWithBothVendorsFindsBothWithoutConfiguration(t *testing.T) {
	root, tools := mixedRoot(t)
	inv, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: root, ToolOutput: tools, NodeName: "mixed"})
	require.NoError(t, err)
	require.Equal(t, []inventory.Vendor{cambricon.Vendor, ascend.Vendor}, inv.Vendors())
	require.Len(t, inv.ChipsOf(ascend.Vendor), 8)
	require.Len(t, inv.ChipsOf(cambricon.Vendor), 8)
}

func TestARootWithoutChipsRunsNoToolAndFindsNothing(t *testing.T) {
	// No recorded output at all: running a tool would fail.
	inv, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: t.TempDir(), ToolOutput: t.TempDir()})
	require.NoError(t, err)
	require.Empty(t, inv.Chips)
}

func TestAProfileSimulatesTheNode(t *testing.T) {
	inv, err := source.Discover(context.Background(), source.Options{Registry: registry, Profile: "mixed-910b-mlu370", NodeName: "m"})
	require.NoError(t, err)
	require.Len(t, inv.Chips, 8)
	_, err = source.Discover(context.Background(), source.Options{Registry: registry, Profile: "nope"})
	require.ErrorContains(t, err, `unknown hardware profile "nope"`)
}

func TestAToolFailureNamesTheBackend(t *testing.T) {
	root, _ := mixedRoot(t)
	_, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: root, ToolOutput: t.TempDir()})
	require.ErrorContains(t, err, "discovering ascend chips: ")
	require.ErrorContains(t, err, "npu-smi info")
}

func TestToolPathsAreRunInsteadOfTheToolsInPath(t *testing.T) {
	root, tools := mixedRoot(t)
	// A "cnmon" that replays the recording, at a path outside PATH, as a
	// DaemonSet runs the host's tool under /host.
	script := filepath.Join(t.TempDir(), "my-cnmon")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexec cat \""+tools+"/cnmon_$(echo \"$@\" | tr ' ' _).txt\"\n"), 0o755))
	_, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: root, Tools: map[string]string{cambricon.Cnmon: script, ascend.NpuSmi: filepath.Join(t.TempDir(), "no-npu-smi")}})
	require.ErrorContains(t, err, "no-npu-smi", "the configured npu-smi path is what runs")
	require.NoError(t, os.RemoveAll(filepath.Join(root, "dev")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	for i := 0; i < 8; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "cambricon_dev"+string(rune('0'+i))), nil, 0o644))
	}
	inv, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: root, Tools: map[string]string{cambricon.Cnmon: script}})
	require.NoError(t, err)
	require.Len(t, inv.ChipsOf(cambricon.Vendor), 8)
}

func TestVendorsLimitsDiscoveryToTheServedVendors(t *testing.T) {
	root, tools := mixedRoot(t)
	inv, err := source.Discover(context.Background(), source.Options{Registry: registry, Root: root, ToolOutput: tools, Vendors: []string{"cambricon"}})
	require.NoError(t, err)
	require.Equal(t, []inventory.Vendor{cambricon.Vendor}, inv.Vendors())

	inv, err = source.Discover(context.Background(), source.Options{Registry: registry, Profile: "mixed-910b-mlu370", NodeName: "m", Vendors: []string{"ascend"}})
	require.NoError(t, err)
	require.Equal(t, []inventory.Vendor{ascend.Vendor}, inv.Vendors())
	require.NotContains(t, inv.SharedDeviceNodes, cambricon.Vendor)

	_, err = source.Discover(context.Background(), source.Options{Registry: registry, Root: root, Vendors: []string{"nvidia"}})
	require.ErrorContains(t, err, `vendors: "nvidia" is not one of ascend, cambricon`)
}

// Every vendor with a management library gets its flag, each setting its
// own entry of Options.Libraries, with the variable pkg/flagenv reads.
func TestEachVendorsLibraryFlagSetsItsEntry(t *testing.T) {
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	libs := map[string]string{}
	source.AddLibraryFlags(fs, registry, libs, true, "")
	require.NoError(t, fs.Parse([]string{"--dcmi-library=/opt/dcmi/libdcmi.so", "--cndev-library", "none"}))
	require.Equal(t, map[string]string{"ascend": "/opt/dcmi/libdcmi.so", "cambricon": "none"}, libs)
	require.Equal(t, "ACCEL_DRA_DCMI_LIBRARY", flagenv.Var(fs.Lookup("dcmi-library")))
	require.Equal(t, "ACCEL_DRA_CNDEV_LIBRARY", flagenv.Var(fs.Lookup("cndev-library")))
}

// recordingAcme is the test vendor, recording the configuration its
// backends are made with.
type recordingAcme struct {
	vendortest.Acme
	configs *[]vendors.BackendConfig
}

func (r recordingAcme) NewBackend(cfg vendors.BackendConfig) discovery.Backend {
	*r.configs = append(*r.configs, cfg)
	return r.Acme.NewBackend(cfg)
}

// The partition mode the admin declares (the agent's --partition-mode)
// reaches every vendor's backend, and a mode that is none is refused.
func TestThePartitionModeReachesTheBackends(t *testing.T) {
	var configs []vendors.BackendConfig
	reg, err := registry.With(recordingAcme{configs: &configs})
	require.NoError(t, err)
	for _, mode := range []string{"", vendors.PartitionModeAuto, vendors.PartitionModeOn, vendors.PartitionModeOff} {
		configs = nil
		backends, err := source.Backends(source.Options{Registry: reg, Root: t.TempDir(), PartitionMode: mode})
		require.NoError(t, err)
		require.Len(t, backends, 3)
		require.Len(t, configs, 1)
		require.Equal(t, mode, configs[0].PartitionMode)
	}
	_, err = source.Backends(source.Options{Registry: reg, Root: t.TempDir(), PartitionMode: "docker"})
	require.EqualError(t, err, `partition mode "docker" is not one of auto, on, off`)
}

// A simulated node honours the declared mode too: off turns every chip's
// partitions off, as the real backends do, so its shares are accounting
// only; on and auto leave the profile's chips as they are.
func TestASimulatedNodeHonoursTheDeclaredPartitionMode(t *testing.T) {
	for mode, off := range map[string]string{
		vendors.PartitionModeOff:  "the node's partition mode is declared off (--partition-mode=off)",
		vendors.PartitionModeAuto: "",
		"":                        "",
	} {
		backends, err := source.Backends(source.Options{Registry: registry, NodeName: "node-a", Profile: "atlas-800t-a2", PartitionMode: mode})
		require.NoError(t, err)
		require.Len(t, backends, 1)
		inv, err := backends[0].Discover(context.Background())
		require.NoError(t, err)
		require.NotEmpty(t, inv.Chips)
		for _, c := range inv.Chips {
			require.Equal(t, off, c.PartitionModeOff, "mode %q, chip %d", mode, c.Index)
		}
	}
}

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
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/devicefaker"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// node is a simulated node of a profile with its fake host root.
type node struct {
	inv  inventory.Inventory
	root string
}

// newNode discovers profileName's chips with the simulated backend,
// lets adjust change them (nil: as discovered) and fakes their device and
// driver files under a temporary root.
func newNode(t *testing.T, profileName string, adjust func(*inventory.Inventory)) node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("faking device nodes needs root (mknod)")
	}
	p, err := profile.Load(registry, profileName)
	require.NoError(t, err)
	inv, err := profilenode.New(registry, "node-0", p).Discover(context.Background())
	require.NoError(t, err)
	if adjust != nil {
		adjust(&inv)
	}
	root := t.TempDir()
	require.NoError(t, devicefaker.Create(context.Background(), registry, root, inv))
	return node{inv: inv, root: root}
}

// withMLU590Nodes gives every Cambricon chip the IPC, communication and
// message nodes the Cambricon backend finds on an MLU590 host
// (pkg/vendors/cambricon/testdata/mlu590/root/dev), which the simulated
// backend leaves out.
func withMLU590Nodes(inv *inventory.Inventory) {
	for i, c := range inv.Chips {
		if c.Vendor == cambricon.Vendor {
			inv.Chips[i].DeviceNodes = []string{
				fmt.Sprintf("/dev/cambricon_dev%d", c.Index),
				fmt.Sprintf("/dev/cambricon_ipcm%d", c.Index),
				fmt.Sprintf("/dev/commu%d", c.Index),
				fmt.Sprintf("/dev/cmsg_ctrl%d", c.Index),
			}
		}
	}
}

// claim is a claim for the chips of vendor with the given indices, as
// DRA devices npu-N / mlu-N.
func (n node) claim(uid types.UID, vendor inventory.Vendor, indices ...int) cdi.Claim {
	c := cdi.Claim{
		UID: uid, Namespace: "default", Name: "claim-" + string(uid)[:8], Vendor: vendorOf(vendor),
		SharedDeviceNodes: n.inv.SharedDeviceNodes[vendor],
	}
	chips := n.inv.ChipsOf(vendor)
	for _, i := range indices {
		c.Devices = append(c.Devices, cdi.Device{Name: fmt.Sprintf("%s-%d", registry.NamesOf(vendor).DevicePrefix, i), Chip: chips[i]})
	}
	return c
}

func (n node) writer(t *testing.T) (*cdi.Writer, string) {
	t.Helper()
	return n.writerWith(t, "")
}

// writerWith is writer with a Config.VisibleDevicesEnv mode.
func (n node) writerWith(t *testing.T, visibleDevicesEnv string) (*cdi.Writer, string) {
	t.Helper()
	specDir := t.TempDir()
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: specDir, HostRoot: n.root, VisibleDevicesEnv: visibleDevicesEnv,
		LDCacheHook: testHook})
	require.NoError(t, err)
	return w, specDir
}

// testHook is the writers' LDCacheHook: where the agent installs it with
// the chart's --state-dir.
const testHook = "/var/lib/accel-dra/" + cdihook.File

// installAscendRuntime puts the file that marks ascend-docker-runtime as
// installed on the node (the installer's default path) under its root.
func (n node) installAscendRuntime(t *testing.T) {
	t.Helper()
	p := filepath.Join(n.root, "usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
}

// flatten returns the IDs of the devices in the claim's order, which is
// the order kubelet passes them.
func flatten(c cdi.Claim, ids map[string][]string) []string {
	var out []string
	for _, d := range c.Devices {
		out = append(out, ids[d.Name]...)
	}
	return out
}

// specFiles lists the files of the spec directory.
func specFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// requireValidSpecs checks that every file of the directory parses and
// validates with the CDI library, and that the library's cache loads the
// directory without errors or conflicts.
func requireValidSpecs(t *testing.T, dir string) *cdiapi.Cache {
	t.Helper()
	for _, f := range specFiles(t, dir) {
		_, err := cdiapi.ReadSpec(filepath.Join(dir, f), 0)
		require.NoError(t, err, f)
	}
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	require.NoError(t, err)
	require.Empty(t, cache.GetErrors())
	return cache
}

// inject lets the CDI library, as a container runtime does, resolve ids
// from the spec directory into an OCI spec of a container.
func inject(t *testing.T, dir string, ids ...string) *oci.Spec {
	t.Helper()
	return injectWithEnv(t, dir, nil, ids...)
}

// injectWithEnv is inject into a container whose pod sets env itself.
func injectWithEnv(t *testing.T, dir string, env []string, ids ...string) *oci.Spec {
	t.Helper()
	spec := &oci.Spec{Process: &oci.Process{Env: append([]string{"PATH=/usr/bin:/bin"}, env...)}, Linux: &oci.Linux{}}
	unresolved, err := requireValidSpecs(t, dir).InjectDevices(spec, ids...)
	require.NoError(t, err)
	require.Empty(t, unresolved)
	return spec
}

// vendorOf is the vendor of inventory value v in the registry.
func vendorOf(v inventory.Vendor) vendors.Vendor {
	x, _ := registry.Lookup(v)
	return x
}

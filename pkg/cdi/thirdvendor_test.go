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
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/devicefaker"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// withAcme is the real vendors and the test-only ACME, as the main of a
// binary serving all three would build its registry.
func withAcme(t *testing.T) vendors.Registry {
	r, err := registry.With(vendortest.Acme{})
	require.NoError(t, err)
	return r
}

// TestAThirdVendorNeedsOnlyItsPackageAndARegistration is the evidence that
// adding a vendor edits no generic package: with the test-only ACME vendor
// in the registry, discovery finds its chips, the slice builder names and
// describes them, the device faker fakes its driver files and the CDI
// writer writes its spec, all from what the vendor object says. Its
// config kind is decoded when a claim is prepared (pkg/driver
// TestAThirdVendorsClaimIsPreparedWithItsOwnConfigKind) and judged at
// apply (pkg/webhook TestAThirdVendorsConfigsAreJudgedByItsOwnKind).
func TestAThirdVendorNeedsOnlyItsPackageAndARegistration(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("faking device nodes needs root (mknod)")
	}
	registry := withAcme(t)
	ctx := context.Background()

	// A node with two ACME chips and nothing else.
	found := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(found, "dev"), 0o755))
	for _, f := range []string{"acme0", "acme1", "acme_ctl"} {
		require.NoError(t, os.WriteFile(filepath.Join(found, "dev", f), nil, 0o644))
	}
	inv, err := source.Discover(ctx, source.Options{Registry: registry, Root: found, ToolOutput: t.TempDir(), Vendors: []string{vendortest.Option}})
	require.NoError(t, err)
	require.Equal(t, []inventory.Vendor{vendortest.Vendor}, inv.Vendors())
	require.Len(t, inv.ChipsOf(vendortest.Vendor), 2)

	devices, _ := resourceslices.DevicesFor(registry, inv, vendortest.Vendor, resourceslices.Options{})
	require.Len(t, devices, 2)
	require.Equal(t, "xpu-1", devices[1].Name, "named with the vendor's device prefix")
	require.Equal(t, "xpu", *devices[1].Attributes["accel-dra.dev/family"].StringValue)
	require.Equal(t, "acme", *devices[1].Attributes["accel-dra.dev/vendor"].StringValue)
	require.Contains(t, resourceslices.DriverResourcesFor(registry, "node-0", inv, resourceslices.Options{}), vendortest.Driver, "published by the vendor's driver")

	root := t.TempDir()
	require.NoError(t, devicefaker.Create(ctx, registry, root, inv))
	require.FileExists(t, filepath.Join(root, "usr/lib/acme/libacme.so"), "the vendor's fake driver files")

	specDir := t.TempDir()
	w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: specDir, HostRoot: root})
	require.NoError(t, err)
	uid := types.UID("a0000000-0000-4000-8000-00000000000a")
	chips := inv.ChipsOf(vendortest.Vendor)
	claim := cdi.Claim{UID: uid, Namespace: "default", Name: "xpus", Vendor: vendortest.Acme{},
		SharedDeviceNodes: inv.SharedDeviceNodes[vendortest.Vendor],
		Devices:           []cdi.Device{{Name: "xpu-0", Chip: chips[0]}, {Name: "xpu-1", Chip: chips[1]}}}
	ids, err := w.Write(ctx, claim)
	require.NoError(t, err)
	require.Equal(t, []string{"accel-dra.dev/acme=" + string(uid) + "-xpu-1"}, ids["xpu-1"], "the vendor's CDI kind")

	spec, err := cdiapi.ReadSpec(filepath.Join(specDir, "accel-dra.dev-acme_"+string(uid)+".json"), 0)
	require.NoError(t, err)
	edits := spec.ContainerEdits
	require.Subset(t, edits.Env, []string{"DRA_DRIVER=" + vendortest.Driver, vendortest.EnvVisibleDevices + "=0,1"})
	require.Len(t, edits.Mounts, 1)
	require.Equal(t, "/usr/lib/acme", edits.Mounts[0].ContainerPath, "the vendor's driver mount")
	require.Len(t, edits.DeviceNodes, 1)
	require.Equal(t, vendortest.CtlNode, edits.DeviceNodes[0].Path)
	require.Equal(t, "rw", edits.DeviceNodes[0].Permissions, "the vendor's permissions")

	claim.Devices[0].Env = map[string]string{vendortest.EnvVisibleDevices: "7"}
	_, err = w.Write(ctx, claim)
	require.ErrorContains(t, err, "env[ACME_VISIBLE_DEVICES]: Forbidden: ACME_VISIBLE_DEVICES and DRA_* are set by the driver", "the vendor's visible-devices variable is reserved")

	back, err := w.ReadClaim(vendortest.Acme{}, uid)
	require.NoError(t, err)
	require.Equal(t, "xpus", back.Name, "the spec read back by the vendor's kind")
}

// The node agent's vendor-specific settings come from the vendor object
// too: its devices in --chip-modes, its tool's path flag, and its chips in
// a hardware profile.
func TestAThirdVendorHasChipModesAToolPathAndProfiles(t *testing.T) {
	registry := withAcme(t)
	ctx := context.Background()

	// A profile node of two ACME chips.
	profile := filepath.Join(t.TempDir(), "acme.yaml")
	require.NoError(t, os.WriteFile(profile, []byte(`apiVersion: accel-dra.dev/v1alpha1
kind: HardwareProfile
name: acme-2
chips:
- vendor: acme
  model: ACME-1
  count: 2
  memory: 16Gi
  cores: 8
  linkType: pcie
  driverVersion: 1.2.3
`), 0o644))
	inv, err := source.Discover(ctx, source.Options{Registry: registry, Profile: profile, NodeName: "node-0"})
	require.NoError(t, err)
	chips := inv.ChipsOf(vendortest.Vendor)
	require.Len(t, chips, 2)
	require.Equal(t, []string{"/dev/acme1"}, chips[1].DeviceNodes, "the vendor's profile node hook names the device nodes")
	require.Equal(t, []string{vendortest.CtlNode}, inv.SharedDeviceNodes[vendortest.Vendor])

	// --chip-modes takes the vendor's device prefix.
	policy, err := partitions.ParsePolicy(registry, "xpu-1=Shared")
	require.NoError(t, err)
	devices, _ := resourceslices.DevicesFor(registry, inv, vendortest.Vendor, resourceslices.Options{Policy: policy})
	require.Len(t, devices, 2)
	require.Nil(t, devices[0].AllowMultipleAllocations, "xpu-0 is Whole")
	require.True(t, *devices[1].AllowMultipleAllocations, "xpu-1 is Shared")
	_, err = partitions.ParsePolicy(registry, "gpu-0=Shared")
	require.ErrorContains(t, err, `"gpu-0" is not a chip device name (xpu-N, npu-N, mlu-N, xpu-*, npu-* or mlu-*)`)

	// --acme-smi sets the path the vendor's tool runs from.
	tool := filepath.Join(t.TempDir(), "acme-smi")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\necho acme-smi \"$@\"\n"), 0o755))
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	o := source.Options{Registry: registry, Tools: map[string]string{}}
	source.AddToolFlags(fs, registry, o.Tools, true)
	require.NoError(t, fs.Parse([]string{"--acme-smi=" + tool}))
	require.Equal(t, "ACCEL_DRA_ACME_SMI", flagenv.Var(fs.Lookup(vendortest.Tool)))
	out, err := discovery.ExecRunner{Tools: o.ToolPaths()}.Run(ctx, vendortest.Tool, "info")
	require.NoError(t, err)
	require.Equal(t, "acme-smi info\n", string(out))

	// The help and errors that list vendors list it too.
	acme := vendors.MustRegistry(vendortest.Acme{})
	require.Equal(t, "serve only these vendors' chips: acme (comma list); default: every vendor found", source.VendorsHelp(acme))
	require.Contains(t, cdi.VisibleDevicesEnvHelp(acme), "whether CDI specs set ACME_VISIBLE_DEVICES, which the vendors' container runtimes react to by injecting the chips again: auto sets them; set; omit")
	require.EqualError(t, source.NoChipsError(acme, nil, "/host"), "no acme chips found under /host: nothing to serve")
	require.Contains(t, cdi.VisibleDevicesEnvHelp(registry), `auto sets ASCEND_VISIBLE_DEVICES="" where ascend-docker-runtime is installed`)
}

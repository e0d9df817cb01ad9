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

package vendors_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// TestTheBinariesVendorsHaveTheContractsNames pins the user-facing names
// of every vendor the binaries serve (docs/architecture.md): one object per vendor
// holds them all.
func TestTheBinariesVendorsHaveTheContractsNames(t *testing.T) {
	var got []vendors.Names
	for _, v := range all.Registry().All() {
		n := v.Names()
		require.NotEmpty(t, n.ToolHelp, "%s: the tool flag has a usage text", n.Vendor)
		n.LibraryHelp, n.ToolHelp = "", "" // prose, not names
		got = append(got, n)
	}
	require.Equal(t, []vendors.Names{
		{Vendor: "huawei", Family: "ascend", Driver: "ascend.accel-dra.dev", Option: "ascend", CDIKind: "accel-dra.dev/ascend", DevicePrefix: "npu", Tool: "npu-smi", ConfigKind: "AscendConfig", LibraryFlag: "dcmi-library"},
		{Vendor: "cambricon", Family: "mlu", Driver: "cambricon.accel-dra.dev", Option: "cambricon", CDIKind: "accel-dra.dev/cambricon", DevicePrefix: "mlu", Tool: "cnmon", ConfigKind: "CambriconConfig", LibraryFlag: "cndev-library"},
	}, got, "ordered by option, the order discovery runs the backends in")
	require.Equal(t, []string{"ascend", "cambricon"}, all.Registry().Options())
}

// TestEveryNameOfAVendorLeadsBackToIt checks the registry is consistent:
// each name of each vendor is its own, and every lookup finds the vendor
// it came from. The test vendor ACME is registered too, as a line in
// pkg/vendors/all would: what the seam calls optional (partitions, a
// management library) it lacks, and this test must not demand.
func TestEveryNameOfAVendorLeadsBackToIt(t *testing.T) {
	reg := vendors.MustRegistry(append(all.Vendors(), vendortest.Acme{})...)
	require.Len(t, reg.All(), len(all.Vendors())+1)
	seen := map[string]inventory.Vendor{}
	for _, v := range reg.All() {
		n := v.Names()
		t.Run(string(n.Vendor), func(t *testing.T) {
			for _, name := range []string{string(n.Vendor), string(n.Family), n.Driver, n.Option, n.CDIKind, n.DevicePrefix, n.Tool, n.ConfigKind, v.CDI().VisibleEnv} {
				if name == vendors.ConfigKindNone {
					continue // any number of vendors may have no config
				}
				require.NotEmpty(t, name)
				owner, dup := seen[name]
				require.False(t, dup && owner != n.Vendor, "%q is a name of %s and of %s", name, owner, n.Vendor)
				seen[name] = n.Vendor
			}
			for lookup, found := range map[string]func() (vendors.Vendor, bool){
				"vendor":   func() (vendors.Vendor, bool) { return reg.Lookup(n.Vendor) },
				"driver":   func() (vendors.Vendor, bool) { return reg.ByDriver(n.Driver) },
				"option":   func() (vendors.Vendor, bool) { return reg.ByOption(n.Option) },
				"CDI kind": func() (vendors.Vendor, bool) { return reg.ByCDIKind(n.CDIKind) },
			} {
				x, ok := found()
				require.True(t, ok, "by %s", lookup)
				require.Equal(t, n, x.Names(), "by %s", lookup)
			}
			require.Equal(t, n.Vendor, reg.VendorFor(reg.DriverFor(n.Vendor)))
			option, err := source.VendorOption(reg, n.Vendor)
			require.NoError(t, err)
			require.Equal(t, n.Option, option, "--vendors takes the vendor's option")

			// Every vendor has the parts the seam requires. Partitions
			// (nil without) and a management library (no LibraryFlag) are
			// optional; a library flag has a usage text.
			require.Equal(t, n.LibraryFlag == "", n.LibraryHelp == "", "%s: a library flag and its usage text come together", n.Vendor)
			require.NotEmpty(t, v.Models(), "%s lists its models", n.Vendor)
			sim := v.ProfileNode()
			require.NotNil(t, sim.Chip)
			require.NotNil(t, sim.DriverFiles)
			require.NotEmpty(t, sim.SharedDeviceNodes)
			require.NotEmpty(t, v.CDI().Permissions)
		})
	}
	_, ok := reg.Lookup("nvidia")
	require.False(t, ok)
	require.Empty(t, reg.DriverFor("nvidia"))
	require.Empty(t, reg.VendorFor("gpu.nvidia.com"))
}

// clashing is a vendor whose names are all ACME's but one.
type clashing struct {
	vendortest.Acme
	edit func(*vendors.Names)
}

func (c clashing) Names() vendors.Names {
	n := vendortest.Acme{}.Names()
	n.Vendor, n.Family, n.Driver, n.Option, n.CDIKind, n.DevicePrefix, n.Tool, n.ConfigKind = "other", "other", "other.accel-dra.dev", "other", "accel-dra.dev/other", "oth", "other-smi", "OtherConfig"
	c.edit(&n)
	return n
}

func TestRegisteringANameTwiceOrNoneIsRefused(t *testing.T) {
	withAcme, err := all.Registry().With(vendortest.Acme{})
	require.NoError(t, err)
	for _, tt := range []struct {
		name, wantErr string
		edit          func(*vendors.Names)
	}{
		{"the same vendor", `registering vendor "acme": vendor "acme" is registered already`, func(n *vendors.Names) { n.Vendor = vendortest.Vendor }},
		{"another vendor's driver", `registering vendor "other": driver "ascend.accel-dra.dev" is vendor "huawei"'s`, func(n *vendors.Names) { n.Driver = "ascend.accel-dra.dev" }},
		{"another vendor's option", `registering vendor "other": option "acme" is vendor "acme"'s`, func(n *vendors.Names) { n.Option = vendortest.Option }},
		{"another vendor's CDI kind", `registering vendor "other": CDI kind "accel-dra.dev/cambricon" is vendor "cambricon"'s`, func(n *vendors.Names) { n.CDIKind = "accel-dra.dev/cambricon" }},
		{"another vendor's device prefix", `registering vendor "other": device prefix "npu" is vendor "huawei"'s`, func(n *vendors.Names) { n.DevicePrefix = "npu" }},
		{"another vendor's tool", `registering vendor "other": tool "cnmon" is vendor "cambricon"'s`, func(n *vendors.Names) { n.Tool = "cnmon" }},
		{"another vendor's config kind", `registering vendor "other": config kind "AscendConfig" is vendor "huawei"'s`, func(n *vendors.Names) { n.ConfigKind = "AscendConfig" }},
		{"no driver name", `registering vendor "other": driver name is empty`, func(n *vendors.Names) { n.Driver = "" }},
		{"no config kind said", `registering vendor "other": config kind name is empty: name the kind of the driver's opaque config, or "none" (ConfigKindNone) if it takes none`,
			func(n *vendors.Names) { n.ConfigKind = "" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := withAcme.With(clashing{edit: tt.edit})
			require.EqualError(t, err, tt.wantErr)
			require.PanicsWithError(t, tt.wantErr, func() { vendors.MustRegistry(append(withAcme.All(), clashing{edit: tt.edit})...) })
		})
	}
	x, ok := withAcme.ByDriver(vendortest.Driver)
	require.True(t, ok)
	require.Equal(t, vendortest.Vendor, x.Names().Vendor)
	_, ok = all.Registry().Lookup(vendortest.Vendor)
	require.False(t, ok, "With leaves the registry it extends as it was")
}

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

package vendortable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

func TestAValuesKeyIsTheFlagInLowerCamelCase(t *testing.T) {
	for flag, key := range map[string]string{"npu-smi": "npuSmi", "cnmon": "cnmon", "dcmi-library": "dcmiLibrary", "cndev-library": "cndevLibrary", "acme-smi": "acmeSmi"} {
		require.Equal(t, key, ValueKey(flag), flag)
	}
}

// The entries of today's vendors hold what the chart's templates named
// by hand before the table: the values keys of values.yaml, the vendors'
// partition types and the node paths their DaemonSets mounted.
func TestTheTableHoldsWhatTheTemplatesNeed(t *testing.T) {
	table, err := Build(all.Registry())
	require.NoError(t, err)
	require.Equal(t, Vendor{
		Vendor: "huawei", Driver: "ascend.accel-dra.dev", DevicePrefix: "npu", VisibleDevicesEnv: "ASCEND_VISIBLE_DEVICES",
		Tool:    Setting{Name: "npu-smi", Flag: "npu-smi", Value: "npuSmi"},
		Library: &Setting{Flag: "dcmi-library", Value: "dcmiLibrary"},
		// The slugs partitionTemplates may name (the chart refuses others).
		Partitions: &Partitions{Type: "vnpu", Slugs: []string{"vir01", "vir02", "vir02-1c", "vir04", "vir04-3c", "vir04-3c-ndvpp",
			"vir04-4c-dvpp", "vir05-1c-16g", "vir05-1c-8g", "vir06-1c-16g", "vir08", "vir10-3c-16g", "vir10-3c-32g", "vir12-3c-32g", "vir16"}},
		Mounts: []Mount{
			{Name: "host-run-vnpu-cfg-lock", Path: "/run/vnpu_cfg_lock", Type: "DirectoryOrCreate", Library: true, Partitions: true},
			{Name: "host-etc-vnpu-cfg", Path: "/etc/vnpu.cfg", Type: "File", Library: true, Partitions: true},
		},
	}, table["ascend"])
	require.Equal(t, Vendor{
		Vendor: "cambricon", Driver: "cambricon.accel-dra.dev", DevicePrefix: "mlu", VisibleDevicesEnv: "CAMBRICON_VISIBLE_DEVICES",
		Tool:       Setting{Name: "cnmon", Flag: "cnmon", Value: "cnmon"},
		Library:    &Setting{Flag: "cndev-library", Value: "cndevLibrary"},
		Partitions: &Partitions{Type: "smlu", Prefix: true, Slugs: []string{"smlu-25p", "smlu-50p"}},
		Mounts:     []Mount{{Name: "host-proc-driver-cambricon", Path: "/proc/driver/cambricon", Type: "Directory"}},
	}, table["cambricon"])
	require.Len(t, table, 2)
}

// The test vendor has no library, partitions or mounts: all optional.
func TestAVendorWithOnlyItsNamesHasAnEntry(t *testing.T) {
	reg, err := all.Registry().With(vendortest.Acme{})
	require.NoError(t, err)
	table, err := Build(reg)
	require.NoError(t, err)
	require.Equal(t, Vendor{Vendor: "acme", Driver: vendortest.Driver, DevicePrefix: vendortest.DevicePrefix, VisibleDevicesEnv: vendortest.EnvVisibleDevices,
		Tool: Setting{Name: vendortest.Tool, Flag: vendortest.Tool, Value: "acmeSmi"}}, table[vendortest.Option])
	content, err := Render(reg)
	require.NoError(t, err)
	require.Contains(t, string(content), "Do not edit")
}

// odd is the test vendor with other names and what a test sets.
type odd struct {
	vendortest.Acme
	tool, library string
	models        []vendors.Model
	mounts        []vendors.HostMount
}

func (o odd) Names() vendors.Names {
	n := o.Acme.Names()
	n.Tool, n.LibraryFlag = o.tool, o.library
	return n
}
func (o odd) Models() []vendors.Model         { return o.models }
func (o odd) HostMounts() []vendors.HostMount { return o.mounts }

func TestWhatTheChartCannotServeStopsTheGenerator(t *testing.T) {
	mixed := []vendors.Model{{Name: "A", Shapes: []vendors.Shape{{Type: "x"}}}, {Name: "B", Shapes: []vendors.Shape{{Type: "x", Prefix: true}}}}
	for _, tc := range []struct {
		name, err string
		vendor    odd
	}{
		{"a tool named like a value of every vendor", "the values key hostPaths of tool host-paths is taken", odd{tool: "host-paths"}},
		{"a library flag the schema does not check as one", `library flag "acme-lib" does not end in -library`, odd{tool: "acme-smi", library: "acme-lib"}},
		{"shapes of two kinds", "the shapes of model B are", odd{tool: "acme-smi", models: mixed}},
		{"a relative mount", `host mount "run/x" is not absolute`, odd{tool: "acme-smi", mounts: []vendors.HostMount{{Path: "run/x", Type: vendors.HostDirectory}}}},
		{"a mount that creates a file", `type "FileOrCreate" is none of`, odd{tool: "acme-smi", mounts: []vendors.HostMount{{Path: "/etc/x", Type: "FileOrCreate"}}}},
		{"another vendor's volume", "the volume name host-proc-driver-cambricon of /proc/driver/cambricon is vendor", odd{tool: "acme-smi", mounts: []vendors.HostMount{{Path: "/proc/driver/cambricon", Type: vendors.HostDirectory}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := all.Registry().With(tc.vendor)
			require.NoError(t, err)
			_, err = Build(reg)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

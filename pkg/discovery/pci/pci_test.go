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

package pci_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
)

func TestNormalizeBusIDAcceptsTheFormsVendorToolsPrint(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "0000:C1:00.0", want: "0000:c1:00.0"},
		{in: "00000000:C1:00.0", want: "0000:c1:00.0"},
		{in: "c1:00.0", want: "0000:c1:00.0"},
		{in: " 0000:3b:1f.7\n", want: "0000:3b:1f.7"},
		{in: "c1", err: "not in [domain:]bus:device.function form"},
		{in: "zz:00.0", err: "bad bus"},
		{in: "0000:c1:00", err: "device.function missing"},
		{in: "0000:c1:20.0", err: "bad device number"},
		{in: "0000:c1:00.8", err: "bad function number"},
		{in: "x:c1:00.0", err: "bad domain"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := pci.NormalizeBusID(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// sysfs writes one PCI function the way the kernel lays it out: the
// function's directory under /sys/devices/<root>/..., linked from
// /sys/bus/pci/devices.
func sysfs(t *testing.T, root, pcieRoot, busID string, files map[string]string) {
	t.Helper()
	dev := filepath.Join(root, "sys", "devices", pcieRoot, "0000:00:01.0", busID)
	require.NoError(t, os.MkdirAll(dev, 0o755))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dev, name), []byte(content), 0o644))
	}
	links := filepath.Join(root, "sys", "bus", "pci", "devices")
	require.NoError(t, os.MkdirAll(links, 0o755))
	rel, err := filepath.Rel(links, dev)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(rel, filepath.Join(links, busID)))
}

func TestReadReturnsVendorNUMAAndPCIeRootFromSysfs(t *testing.T) {
	root := t.TempDir()
	sysfs(t, root, "pci0000:80", "0000:c1:00.0", map[string]string{"vendor": "0x19e5\n", "device": "0xd801\n", "numa_node": "1\n"})
	sysfs(t, root, "pci0000:00", "0000:1a:00.0", map[string]string{"vendor": "0xcabc\n", "device": "0x0370\n", "numa_node": "-1\n"})
	sysfs(t, root, "pci0000:00", "0000:1b:00.0", map[string]string{"vendor": "0xcabc\n", "device": "0x0370\n"})

	d, err := pci.Read(root, "0000:C1:00.0")
	require.NoError(t, err)
	numa := 1
	require.Equal(t, pci.Device{BusID: "0000:c1:00.0", VendorID: 0x19e5, DeviceID: 0xd801, NUMANode: &numa, PCIeRoot: "pci0000:80"}, d)

	d, err = pci.Read(root, "1a:00.0")
	require.NoError(t, err)
	require.Nil(t, d.NUMANode, "numa_node -1 means no affinity")
	require.Equal(t, "pci0000:00", d.PCIeRoot)

	d, err = pci.Read(root, "0000:1b:00.0")
	require.NoError(t, err)
	require.Nil(t, d.NUMANode, "no numa_node file means no affinity")

	ids, err := pci.List(root, 0xcabc)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:1a:00.0", "0000:1b:00.0"}, ids)
	ids, err = pci.List(t.TempDir(), 0x19e5)
	require.NoError(t, err)
	require.Empty(t, ids, "a root without /sys/bus/pci has no PCI functions")
}

func TestReadNamesTheSysfsFileThatIsWrong(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing vendor", map[string]string{"device": "0x1\n"}, "reading PCI id"},
		{"garbled vendor", map[string]string{"vendor": "huawei\n", "device": "0x1\n"}, `vendor: "huawei" is not a 16-bit hex number`},
		{"garbled device", map[string]string{"vendor": "0x19e5\n", "device": "0x12345\n"}, `device: "0x12345" is not a 16-bit hex number`},
		{"garbled numa node", map[string]string{"vendor": "0x19e5\n", "device": "0x1\n", "numa_node": "one\n"}, `numa_node: "one" is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			sysfs(t, root, "pci0000:00", "0000:01:00.0", tt.files)
			_, err := pci.Read(root, "0000:01:00.0")
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := pci.Read(t.TempDir(), "not-a-bus-id")
	require.ErrorContains(t, err, "not in [domain:]bus:device.function form")
}

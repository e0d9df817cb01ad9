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

// Fuzz targets of the PCI address normalization and the sysfs readers.
// Run one for a while with
//
//	go test -run x -fuzz FuzzRead -fuzztime 60s -parallel 1 ./pkg/discovery/pci

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
)

var kernelBusID = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[01][0-9a-f]\.[0-7]$`)

func FuzzNormalizeBusID(f *testing.F) {
	// The forms npu-smi and cnmon print, and edge cases.
	for _, s := range []string{
		"0000:C1:00.0", "00000000:C1:00.0", "c1:00.0", " 0000:3b:1f.7\n", "NA", "", ":", "0:0:0.0",
		"0000:c1:20.0", "0000:c1:00.8", "+1:00.0", "ffffffff:ff:1f.7", "100000000:00:00.0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := pci.NormalizeBusID(in)
		if err != nil {
			require.ErrorContains(t, err, "PCI bus id")
			return
		}
		require.Regexp(t, kernelBusID, out)
		again, err := pci.NormalizeBusID(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
	})
}

// FuzzRead writes the fuzzed contents as a PCI function's vendor, device
// and numa_node files and reads them back.
func FuzzRead(f *testing.F) {
	f.Add("0x19e5\n", "0xd801\n", "0\n")
	f.Add("0xcabc\n", "0x0370\n", "-1\n")
	f.Add("19e5", "d801", "")
	f.Add("0x10000", "0x", "99999999999999999999")
	f.Fuzz(func(t *testing.T, vendor, device, numa string) {
		const busID = "0000:c1:00.0"
		root := t.TempDir()
		dir := filepath.Join(root, "sys", "bus", "pci", "devices", busID)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, content := range map[string]string{"vendor": vendor, "device": device, "numa_node": numa} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		}
		d, err := pci.Read(root, busID)
		if err != nil {
			// The error names the file it could not understand.
			require.Regexp(t, `(vendor|device|numa_node)`, err.Error())
			return
		}
		require.Equal(t, busID, d.BusID)
		if d.NUMANode != nil {
			require.GreaterOrEqual(t, *d.NUMANode, 0)
		}
		ids, err := pci.List(root, d.VendorID)
		require.NoError(t, err)
		require.Equal(t, []string{busID}, ids)
	})
}

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

// Fuzz targets of the parsers of the partition tools' output (npu-smi
// info-vnpu and set). The seed corpus
// is the recorded output under testdata plus edge cases; testdata/fuzz/<target>
// keeps the inputs fuzzing once broke a parser with. Run one for a while
// with
//
//	go test -run x -fuzz FuzzParseVNPUInfo -fuzztime 60s -parallel 1 ./pkg/vendors/ascend

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func FuzzParseVNPUInfo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/vnpu/info-vnpu_*.txt", "", "Total number of vnpu: 0", "Total number of vnpu: x")
	discoverytest.FuzzParser(f, "npu-smi info -t info-vnpu -i 0 -c 0", ParseVNPUInfo, func(t *testing.T, _ []byte, vnpus []VNPU) {
		seen := map[int]bool{}
		for _, v := range vnpus {
			require.GreaterOrEqual(t, v.ID, 0)
			require.GreaterOrEqual(t, v.VGroup, -1)
			require.GreaterOrEqual(t, v.Status, 0)
			require.NotEmpty(t, v.Template)
			require.False(t, seen[v.ID], "vNPU %d twice", v.ID)
			seen[v.ID] = true
		}
	})
}

func FuzzParseSetResult(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/vnpu/*vnpu*_ok.txt", "", "Status : Failed\nMessage : busy\n", "Status:ok")
	f.Fuzz(func(t *testing.T, data []byte) {
		const source = "npu-smi set -t create-vnpu -i 0 -c 0 -f vir02"
		if _, err := parseSetResult(source, data); err != nil {
			// A failed status is the tool's answer, not a parse error,
			// but it still names the command.
			require.ErrorContains(t, err, source)
		}
	})
}

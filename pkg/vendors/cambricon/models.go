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

package cambricon

// mluCoresPerChip is the number of MLU cores of one chip (one
// /dev/cambricon_devN) by the product name cnmon prints, because cnmon info
// does not print a core count. Each number is clusters × 4 MLU cores per
// cluster, from the published MLU driver source; a model missing here gets
// 0 cores (unknown) rather than a guess. Sources and the data-sheet check:
// docs/hardware.md#mlu-cores-per-chip.
var mluCoresPerChip = map[string]int{
	"MLU270-S4":  16, // 4 clusters
	"MLU270-S4a": 16,
	"MLU270-F4":  16,
	"MLU270-FD4": 16,
	"MLU270-V4":  16,
	"MLU270-V4K": 16,
	"MLU270-X5K": 16,
	"MLU270-A4K": 16,
	"MLU270-D4":  8,  // 2 clusters
	"MLU365-D2":  8,  // 2 clusters
	"MLU370-S4":  24, // 6 clusters
	"MLU370-X4":  32, // 8 clusters
	"MLU370-X4L": 32,
	"MLU370-X4K": 32,
	"MLU370-M8":  32,
	"MLU370-X8":  16, // 4 clusters per chip, 2 chips per board
	"MLU590":     48, // 12 clusters (what cnmon prints on a VF)
	"MLU590-H8":  48,
	"MLU590-M9":  48,
	"MLU590-M9U": 48,
	"MLU590-M9L": 48,
	"MLU590-M9B": 48,
	"MLU590-M9C": 40, // 10 clusters
}

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

package scale

import (
	"maps"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// The share sides of the benchmark (issue 40): the same quarter-chip and
// half-chip claims, once as partition slots of Partitioned chips and once
// as capacity of Shared chips whose shares the hardware enforces.

// SharesFile holds both forms of the share claims.
const SharesFile = "test/scale/testdata/shares.yaml"

// PartitionedShareTemplates ask for a quarter and a half of a 910B3 and
// of an MLU370-X8 by the per-model class of the template of that size;
// SharedShareTemplates ask the same fractions of the model's chip by
// capacity.
var (
	PartitionedShareTemplates = []string{"quarter-910b3-partitioned", "half-910b3-partitioned", "quarter-mlu370-partitioned", "half-mlu370-partitioned"}
	SharedShareTemplates      = []string{"quarter-910b3-shared", "half-910b3-shared", "quarter-mlu370-shared", "half-mlu370-shared"}
)

// EnforcedShares publishes every chip Shared as an agent whose hardware
// enforces the shares does: a 910B3 with vNPUs on (the profile node's
// partition mode) in template units, an MLU370 whose libcndev makes
// dynamic sMLU profiles (the fact discovery sets from the library's
// symbols, pkg/vendors/cambricon discovery) on the driver's grid.
var EnforcedShares = Slices{
	Modes:   string(partitions.ModeShared),
	Sources: map[string]string{cambricon.SourceSizedSMLU: cambricon.CNDevLibrary + " cndevCreateSMluProfileInfo"},
}

// withSources adds sources to every chip's facts, keeping those
// discovery set; a copy, as discovery may share one map among chips.
func withSources(inv *inventory.Inventory, sources map[string]string) {
	if len(sources) == 0 {
		return
	}
	for i := range inv.Chips {
		c := &inv.Chips[i]
		facts := maps.Clone(c.Sources)
		if facts == nil {
			facts = map[string]string{}
		}
		maps.Copy(facts, sources)
		c.Sources = facts
	}
}

//go:build e2e

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

package main

import (
	"k8s.io/client-go/kubernetes"

	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/test/scale"
)

// withShareSides appends the share sides of issue 40 to sides: the same
// quarter-chip and half-chip claims (test/scale/testdata/shares.yaml),
// first as template slots of Partitioned chips (chip + 6 slots), then as
// capacity of Shared chips whose shares the hardware enforces (one
// device per chip), compared with the first. The goal is 3× its pods/s.
// Both take -pods pods, not -partitioned-pods: the Shared side binds
// 100 pods in about 10 s, where the second or so before the first pod
// binds (its claim created, the informers caught up) would weigh on its
// pods/s and not on the slower side's.
func withShareSides(sides []side, client kubernetes.Interface, repo string, pods int) ([]side, error) {
	slots, err := scale.LoadWorkload(repo, scale.SharesFile, scale.PartitionedShareTemplates)
	if err != nil {
		return nil, err
	}
	capacity, err := scale.LoadWorkload(repo, scale.SharesFile, scale.SharedShareTemplates)
	if err != nil {
		return nil, err
	}
	partitioned := scale.Slices{Modes: string(partitions.ModePartitioned)}
	return append(sides,
		oursSide(client, "shares: Partitioned (chip + 6 slots), a quarter and a half of a chip by template class", slots, partitioned, pods, 0),
		oursSide(client, "shares: Shared, shareEnforcement hardware (1 device per chip), the same fractions by capacity (goal 3× pods/s)", capacity, scale.EnforcedShares, pods, len(sides)),
	), nil
}

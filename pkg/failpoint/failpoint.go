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

// Package failpoint is a test hook: named points in the plugin's code
// where a test makes the process fail on purpose, to prove that a crash or
// an error there loses nothing.
//
// Failpoints exist only in binaries built with the build tag failpoint
// (go build -tags failpoint, as the crash tests build the node agent). In
// every other build, the production binaries included, Inject is a
// function that returns nil: no environment variable is read and there is
// no code that kills the process, so nothing can arm a failpoint in a
// DaemonSet. With the tag, points are armed by the environment variable
// ACCEL_DRA_FAILPOINTS (read once, at the first Inject), e.g.
//
//	ACCEL_DRA_FAILPOINTS=prepare-before-cdi=kill,unprepare-after-cdi=error
//
// Actions:
//
//   - kill: the process sends itself SIGKILL, as the OOM killer or a node
//     reboot would end it, with no deferred function or flush run;
//   - error: Inject returns an error naming the point;
//   - pause: Inject creates <point>.paused in the directory PauseDirEnv
//     names and returns once a test creates <point>.release there: a
//     call held in flight at that point while the test does something
//     else on the node (starts a second agent, as a rolling update does).
package failpoint

// EnvVar arms failpoints in a binary built with the tag: a comma list of
// point=action.
const EnvVar = "ACCEL_DRA_FAILPOINTS"

// PauseDirEnv names the directory of the pause action's files.
const PauseDirEnv = "ACCEL_DRA_FAILPOINT_DIR"

// The points the driver calls, in the order a prepare passes them.
const (
	// PartitionCreated: the vendor tool made a partition, not yet recorded anywhere.
	PartitionCreated = "prepare-partition-created"
	// PrepareBeforeCDI: the claim is checked (partitions made), no CDI spec written.
	PrepareBeforeCDI = "prepare-before-cdi"
	// PrepareAfterCDI: the CDI spec is written, the checkpoint not yet saved.
	PrepareAfterCDI = "prepare-after-cdi"
	// PrepareAfterCheckpoint: the checkpoint lists the claim, the kubelet has no answer.
	PrepareAfterCheckpoint = "prepare-after-checkpoint"
	// UnprepareAfterCDI: the CDI spec is removed, partitions and checkpoint not yet.
	UnprepareAfterCDI = "unprepare-after-cdi"
	// UnprepareBeforeCheckpoint: the partitions are destroyed, the checkpoint still lists the claim.
	UnprepareBeforeCheckpoint = "unprepare-before-checkpoint"
)

// Action is what an armed point does.
type Action string

const (
	Kill  Action = "kill"
	Error Action = "error"
	Pause Action = "pause"
)

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

// Package driver is the kubelet plugin of one accel-dra driver
// (ascend.accel-dra.dev or cambricon.accel-dra.dev) on one node: it
// publishes the node's chips of its vendor (Config.Vendor, the vendor
// object it asks for names, partitions and container edits) as
// ResourceSlices and prepares allocated chips for containers through CDI,
// remembering what it prepared in a checkpoint so restarts lose nothing.
//
// Each chip is published in the mode the node agent gives it
// (partitions.Policy): Whole, Partitioned or Shared, as
// docs/partitions.md describes for users, with what each isolates.
// Preparing a partition device creates the partition with the vendor's
// tool or library, records it in the checkpoint before the kubelet gets an
// answer, and points the CDI spec at the partition's own device node;
// unprepare destroys it. On start-up the plugin lists the partitions of
// its Partitioned chips and destroys those the checkpoint does not know,
// which a crash between creating and recording leaves behind (chips
// served by accel-dra must not be partitioned by hand).
//
// prepare.go runs a claim as phases behind a small transaction
// (transaction.go): check (check.go, nothing changes), create partitions,
// write the CDI spec, commit the checkpoint; each phase that changes the
// node registers its undo, and a failure rolls back in one place.
package driver

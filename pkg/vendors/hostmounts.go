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

package vendors

// HostMount is a path of the node that a vendor's node agent uses on real
// hardware besides /dev, /sys, its tool and the driver directories the
// admin lists (the chart's vendors.<option>.hostPaths). The chart's
// DaemonSet mounts it in the node groups serving the vendor:
// hack/gen-deviceclasses writes every vendor's into the chart's vendor
// table (deployments/helm/accel-dra/files/vendors.yaml).
type HostMount struct {
	// Path is absolute on the node.
	Path string
	// Type is the hostPath type: HostDirectory or HostFile, which fail
	// the pod's start on a node without the path, or
	// HostDirectoryOrCreate for a directory the vendor's library would
	// make itself. Never a type that creates a file.
	Type string
	// Library marks a path the vendor's library opens by its absolute
	// path, writing into it: it is mounted read-write at Path. The other
	// paths the agent reads under its --root: mounted read-only at
	// /host<Path>.
	Library bool
	// Partitions limits the mount to the node groups that may make
	// partitions: partition mode not off, chip modes that partition.
	Partitions bool
}

// The hostPath types of a HostMount.
const (
	HostDirectory         = "Directory"
	HostFile              = "File"
	HostDirectoryOrCreate = "DirectoryOrCreate"
)

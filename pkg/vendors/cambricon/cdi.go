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

import "github.com/accel-dra/accel-dra/pkg/vendors"

// EnvVisibleDevices is set by cambricon-k8s-device-plugin
// (device-plugin/pkg/mlu/server.go, PrepareResponse) to the comma list of
// MLU slots, for the Cambricon container runtime and Neuware.
const EnvVisibleDevices = "CAMBRICON_VISIBLE_DEVICES"

// CDI implements vendors.Vendor. The Cambricon container runtime cannot
// be detected on a node (its source and install layout are not public),
// so there is no Runtime: the visible-devices variable is set in auto mode.
func (Cambricon) CDI() vendors.CDIEdits {
	return vendors.CDIEdits{
		VisibleEnv: EnvVisibleDevices,
		// cambricon-k8s-device-plugin device-plugin/pkg/mlu/server.go
		// addDevice gives every node "rw".
		Permissions: "rw",
		Mounts: []string{
			// server.go PrepareResponse mounts the host's cnmon read-only
			// (--cnmon-path, /usr/bin/cnmon in the plugin's README). It
			// mounts no driver libraries: Neuware user-space libraries
			// (libcndev, libcnrt) ship in the workload image.
			"/usr/bin/cnmon",
		},
	}
}

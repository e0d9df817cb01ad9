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

import "github.com/accel-dra/accel-dra/pkg/vendors"

// The variables Huawei's device plugin and runtime set, and their values;
// docs/hardware.md ("What a container gets") cites each.
const (
	// EnvVisibleDevices lists the physical NPU ids a container may use.
	EnvVisibleDevices = "ASCEND_VISIBLE_DEVICES"
	// EnvRuntimeOptions is "VIRTUAL" in a claim of vNPUs.
	EnvRuntimeOptions = "ASCEND_RUNTIME_OPTIONS"
)

// LibraryDirs are the driver's user-space library directories a container
// needs, as Huawei names them: the driver installer tells a container
// install to put lib64/common and lib64/driver on LD_LIBRARY_PATH (CANN
// driver source, GitHub verylucky01/driver e29d066,
// scripts/package/driver/common/scripts/install.sh:205-213; lib64 itself
// only for the "specific" library placement), and Huawei's device plugin
// image sets those two (Ascend/ascend-device-plugin Dockerfile: ENV
// LD_LIBRARY_PATH …/lib64/driver:…/lib64/common). The specs add them to the
// container's ld.so cache instead (the ldcache hook): CDI cannot append to
// an image's LD_LIBRARY_PATH, only replace it.
var LibraryDirs = []string{"/usr/local/Ascend/driver/lib64/common", "/usr/local/Ascend/driver/lib64/driver"}

// CDI implements vendors.Vendor.
func (Ascend) CDI() vendors.CDIEdits {
	return vendors.CDIEdits{
		VisibleEnv: EnvVisibleDevices,
		// As ascend-docker-runtime: every node "rwm", its hook's default
		// mount list (npu-smi in bin or, on older and edge hosts, sbin)
		// and the two files every Ascend container recipe mounts
		// (docs/hardware.md, "What a container gets").
		Permissions: "rwm",
		Mounts: []string{
			"/usr/local/Ascend/driver/lib64",
			"/usr/local/Ascend/driver/include",
			"/usr/local/dcmi",
			"/usr/local/bin/npu-smi",
			"/usr/local/sbin/npu-smi",
			"/usr/local/Ascend/driver/version.info",
			"/etc/ascend_install.info",
			// The AI CPU queue scheduler's directory, where the node has
			// it: ascend-docker-runtime's mount list of the 6.0 runtime
			// and every Ascend container recipe (vllm-ascend's and
			// sglang's `docker run -v /var/queue_schedule:/var/queue_schedule`)
			// give it to the container (docs/hardware.md, "What a container gets").
			"/var/queue_schedule",
			// The driver's HCCL topology files (a 950's HCCL_TOPO_FILE_PATH
			// names one), where the node has them, as ascend-docker-runtime
			// and Huawei's CDI specs mount them (hccltopo.go).
			HCCLTopoDir,
		},
		// The driver installer writes both; the chart mounts nothing of
		// the host's /etc into the agent (a hostPath cannot be optional,
		// and FileOrCreate would create the file on Cambricon-only nodes).
		MountedWith: map[string]string{"/etc/ascend_install.info": "/usr/local/Ascend/driver/lib64"},
		VirtualEnv:  map[string]string{EnvRuntimeOptions: "VIRTUAL"},
		ChipEnv:     hcclTopoEnv,
		LibraryDirs: LibraryDirs,
		Runtime: &vendors.Runtime{
			Name: "ascend-docker-runtime",
			// The file that shows ascend-docker-runtime is installed: its
			// binary at the installer's default path, inside the
			// /usr/local/Ascend the chart mounts (docs/hardware.md, "What
			// a container gets"). Not containerd's or docker's
			// configuration: the chart mounts nothing of the host's /etc
			// (containerd's can hold registry credentials), so a marker
			// there would never be seen; a runtime installed elsewhere
			// needs kubeletPlugin.visibleDevicesEnv.
			Markers: []vendors.Marker{
				{Path: "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"},
			},
			// The one value every release passes through: an empty
			// variable. Ascend/mind-cluster@22bb3d98
			// component/ascend-docker-runtime/runtime/process/process.go:732
			// (checkVisibleDevice: "" or "void" → no devices, and :971
			// adds the hook and devices only for a non-empty list) and
			// hook/process/process.go:452 (the hook returns on ""); the
			// older Ascend/ascend-docker-runtime@c451124d runtime/main.go:523
			// and hook/main.go:328 know only "" ("void" fails its
			// parseDevices, so the container would not start).
			Neutral: "",
		},
	}
}

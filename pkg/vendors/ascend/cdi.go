package ascend

import "github.com/accel-dra/accel-dra/pkg/vendors"

const (
	// EnvVisibleDevices is read by ascend-docker-runtime
	// (runtime/main.go, checkVisibleDevice/parseDevices) and by CANN as the
	// comma list of physical NPU ids a container may use, as the Ascend
	// device plugin sets it.
	EnvVisibleDevices = "ASCEND_VISIBLE_DEVICES"
	// EnvRuntimeOptions is "VIRTUAL" for a claim of vNPUs: Huawei's
	// device plugin sets it beside ASCEND_VISIBLE_DEVICES=<vnpu id>
	// (Ascend/ascend-device-plugin pkg/common/common.go SetAscendRuntimeEnv,
	// common.VirtualDev), and ascend-docker-runtime then mounts
	// /dev/vdavinci<id>; with CDI the node is already in the spec, the
	// variable tells CANN and tools in the container what they run on.
	EnvRuntimeOptions = "ASCEND_RUNTIME_OPTIONS"
	// EnvLibraryPath is LD_LIBRARY_PATH: the driver's user-space libraries
	// live in lib64/common and lib64/driver beside lib64, and CANN finds
	// them only through this path. Huawei's container recipes set it so
	// (MindIE's non-root launch script
	// "LD_LIBRARY_PATH=…:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver:",
	// the MindSpeed-MM image guide's `-e LD_LIBRARY_PATH=…/lib64/driver:…/lib64/common`
	// for a driver outside the image). CDI cannot append to an image's
	// value, so a claim's own LD_LIBRARY_PATH (opaque config env) wins.
	EnvLibraryPath = "LD_LIBRARY_PATH"
	// LibraryPath is its value: the three driver directories.
	LibraryPath = "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver"
)

// CDI implements vendors.Vendor.
func (Ascend) CDI() vendors.CDIEdits {
	return vendors.CDIEdits{
		VisibleEnv: EnvVisibleDevices,
		// ascend-docker-runtime runtime/main.go addDeviceToSpec allows
		// every node it adds with "rwm".
		Permissions: "rwm",
		Mounts: []string{
			// ascend-docker-runtime build/scripts/base.list, the default
			// mount list of its hook (cli/src/main.c CheckWhiteList):
			"/usr/local/Ascend/driver/lib64",
			"/usr/local/Ascend/driver/include",
			"/usr/local/dcmi",
			"/usr/local/bin/npu-smi",
			// base.list_A200, base.list_A500A2 and the whitelist: npu-smi
			// lives in sbin on older and edge hosts.
			"/usr/local/sbin/npu-smi",
			// Not in base.list, but every Ascend container recipe mounts
			// them (vllm-ascend installation guide, `docker run -v
			// /usr/local/Ascend/driver/version.info... -v
			// /etc/ascend_install.info...`): CANN reads the driver version
			// and install path from them.
			"/usr/local/Ascend/driver/version.info",
			"/etc/ascend_install.info",
		},
		VirtualEnv: map[string]string{EnvRuntimeOptions: "VIRTUAL"},
		Env:        map[string]string{EnvLibraryPath: LibraryPath},
		Runtime: &vendors.Runtime{
			Name: "ascend-docker-runtime",
			// Files whose presence on the node means ascend-docker-runtime is
			// installed, so a container that carries ASCEND_VISIBLE_DEVICES
			// may be handed to it (as containerd's or docker's runtime it
			// edits every container's spec, runtime/process/process.go
			// DoProcess → modifySpecFile):
			//   - the binary at the installer's default path: INSTALL_PATH in
			//     component/ascend-docker-runtime/build/scripts/run_main.sh
			//     (Ascend/mind-cluster) is /usr/local/Ascend/Ascend-Docker-Runtime;
			//   - containerd's or docker's configuration naming it: the
			//     installer adds a runtime "ascend" whose BinaryName
			//     (containerd) or path (docker) is <install
			//     path>/ascend-docker-runtime and makes it the default, for a
			//     custom --install-path too
			//     (install/process/containerd_process.go editContainerdConfig,
			//     constant.go runtimeName, default_runtime_name; run_main.sh).
			Markers: []vendors.Marker{
				{Path: "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"},
				{Path: "/etc/containerd/config.toml", Contains: "ascend-docker-runtime"},
				{Path: "/etc/docker/daemon.json", Contains: "ascend-docker-runtime"},
			},
		},
	}
}

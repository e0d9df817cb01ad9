package cdi

import (
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// Environment variables the driver sets in every container that gets a
// claim's devices. names has no constants for them, so they live here.
const (
	// EnvDriver is the DRA driver that prepared the claim.
	EnvDriver = "DRA_DRIVER"
	// EnvClaimUID is the ResourceClaim's UID.
	EnvClaimUID = "DRA_CLAIM_UID"
	// EnvClaim is the ResourceClaim as namespace/name.
	EnvClaim = "DRA_CLAIM"
	// EnvDevicePrefix starts the per-device variables
	// DRA_DEVICE_<NAME>_DRIVER, _CLAIM_UID, _UUID and _MODEL, where <NAME> is
	// the DRA device name upper-cased with non-alphanumerics as "_"
	// (npu-3 → DRA_DEVICE_NPU_3_UUID).
	EnvDevicePrefix = "DRA_DEVICE_"
	// EnvAdminAccess is "true" in a container whose claim has only
	// admin-access devices of the driver (a monitoring or debugging pod):
	// it sees chips other claims use, and must not use them for work.
	// Mixed claims have DRA_DEVICE_<NAME>_ADMIN_ACCESS per device instead.
	EnvAdminAccess = "DRA_ADMIN_ACCESS"
	// envReservedPrefix covers every variable above: user configuration may
	// set none of them, now or when more are added.
	envReservedPrefix = "DRA_"

	// EnvAscendVisibleDevices is read by ascend-docker-runtime
	// (runtime/main.go, checkVisibleDevice/parseDevices) and by CANN as the
	// comma list of physical NPU ids a container may use, as the Ascend
	// device plugin sets it.
	EnvAscendVisibleDevices = "ASCEND_VISIBLE_DEVICES"
	// EnvCambriconVisibleDevices is set by cambricon-k8s-device-plugin
	// (device-plugin/pkg/mlu/server.go, PrepareResponse) to the comma list
	// of MLU slots, for the Cambricon container runtime and Neuware.
	EnvCambriconVisibleDevices = "CAMBRICON_VISIBLE_DEVICES"
	// EnvAscendRuntimeOptions is "VIRTUAL" for a claim of vNPUs: Huawei's
	// device plugin sets it beside ASCEND_VISIBLE_DEVICES=<vnpu id>
	// (Ascend/ascend-device-plugin pkg/common/common.go SetAscendRuntimeEnv,
	// common.VirtualDev), and ascend-docker-runtime then mounts
	// /dev/vdavinci<id>; with CDI the node is already in the spec, the
	// variable tells CANN and tools in the container what they run on.
	EnvAscendRuntimeOptions = "ASCEND_RUNTIME_OPTIONS"

	// Suffixes of the per-device variables DRA_DEVICE_<NAME>_<SUFFIX> the
	// driver sets for partitions, shares and admin access (never for a whole
	// chip a claim holds):
	//   - PARTITION: the vendor template or sMLU profile (vir04, 25p.5827mb);
	//   - MEMORY: bytes of device memory of the partition or share;
	//   - CORES: AI cores / MLU cores of the partition, or the cores the
	//     share reserved (0: none reserved, time-shared);
	//   - SHARE_ID: the allocation's shareID, one per claim on a shared chip;
	//   - ADMIN_ACCESS: "true" on a device allocated with admin access.
	EnvSuffixAdminAccess = "ADMIN_ACCESS"
	EnvSuffixPartition   = "PARTITION"
	EnvSuffixMemory      = "MEMORY"
	EnvSuffixCores       = "CORES"
	EnvSuffixShareID     = "SHARE_ID"
)

// vendorEdits is what a vendor's own container runtime or device plugin
// puts into a container, which our CDI specs reproduce.
type vendorEdits struct {
	// kind is the CDI vendor/class of the vendor's specs (docs/architecture.md).
	kind string
	// visibleEnv lists the claim's chip indices.
	visibleEnv string
	// permissions are the cgroup device permissions of the device nodes.
	permissions string
	// mounts are host driver files, bind-mounted read-only at the same
	// path where they exist on the host.
	mounts []string
}

var vendorTable = map[inventory.Vendor]vendorEdits{
	inventory.VendorHuawei: {
		kind:       names.AscendCDIKind,
		visibleEnv: EnvAscendVisibleDevices,
		// ascend-docker-runtime runtime/main.go addDeviceToSpec allows
		// every node it adds with "rwm".
		permissions: "rwm",
		mounts: []string{
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
	},
	inventory.VendorCambricon: {
		kind:       names.CambriconCDIKind,
		visibleEnv: EnvCambriconVisibleDevices,
		// cambricon-k8s-device-plugin device-plugin/pkg/mlu/server.go
		// addDevice gives every node "rw".
		permissions: "rw",
		mounts: []string{
			// server.go PrepareResponse mounts the host's cnmon read-only
			// (--cnmon-path, /usr/bin/cnmon in the plugin's README). It
			// mounts no driver libraries: Neuware user-space libraries
			// (libcndev, libcnrt) ship in the workload image.
			"/usr/bin/cnmon",
		},
	},
}

// mountOptions make a read-only bind mount that cannot smuggle in setuid
// binaries or device files; rprivate keeps host mount events out. The
// same options as the NVIDIA container toolkit's CDI specs use.
var mountOptions = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}

// reservedEnv are the variables user configuration may not set besides
// the DRA_ ones: either vendor's visible-devices list, since a container
// can hold devices of both vendors.
var reservedEnv = map[string]bool{
	EnvAscendVisibleDevices:    true,
	EnvCambriconVisibleDevices: true,
}

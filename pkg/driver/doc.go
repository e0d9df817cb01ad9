// Package driver is the kubelet plugin of one accel-dra driver
// (ascend.accel-dra.dev or cambricon.accel-dra.dev) on one node: it
// publishes the node's chips of that vendor as ResourceSlices and prepares
// allocated chips for containers through CDI, remembering what it prepared
// in a checkpoint so restarts lose nothing.
//
// # Whole chips, partitions and shares
//
// Each chip is published in the mode the node agent gives it
// (partitions.Policy):
//
//   - Whole (the default): the chip alone. Partitions and shares are
//     published only where the admin asks for them: partition devices
//     multiply what the scheduler evaluates per claim, and in Kubernetes
//     1.37 an admin-access claim cannot get a chip in use that offers
//     partitions (the allocator still checks its shared counters,
//     kubernetes/kubernetes#140729).
//   - Partitioned (where the model has partitions): the whole chip
//     and its partition devices (Ascend vNPUs, Cambricon sMLU instances),
//     kept apart by the chip's counter set. Preparing a partition device
//     creates the partition with the vendor tool (npu-smi create-vnpu,
//     cnmon smlu), records it in the checkpoint before the kubelet gets an
//     answer, and points the CDI spec at the partition's own device node;
//     Unprepare destroys it. On start-up the plugin lists the partitions of
//     its Partitioned chips and destroys those the checkpoint does not
//     know, which a crash between creating and recording leaves behind
//     (chips served by accel-dra must not be partitioned by hand).
//   - Shared: one device with allowMultipleAllocations; each claim gets the
//     memory and cores it requested (consumable capacity). The container
//     gets the whole chip's device node and the share in
//     DRA_DEVICE_<NAME>_MEMORY / _CORES / _SHARE_ID.
//
// # What is isolated
//
// A vNPU is isolated by the Ascend driver and firmware: its AI cores, AI
// CPUs and HBM are its own and the container only has /dev/vdavinci<id>
// (on a 310P two vir01 time-share one vGroup of 2 AI cores). An sMLU
// instance is limited by the Cambricon driver: its device memory is capped
// at the profile's size and its MLU-core time at the profile's utilization
// quota, but the cores are time-shared with the chip's other instances,
// not dedicated; the container has the chip's nodes plus the instance's
// capability node, without which the driver refuses work on a chip in sMLU
// mode.
//
// A share of a Shared chip isolates nothing. The scheduler never hands out
// more memory or cores than the chip has, but nothing on the node enforces
// a share: every container sharing the chip sees the whole chip and all of
// its memory, can allocate beyond its share (and so starve or crash its
// neighbours with out-of-memory errors), and competes for all AI/MLU cores
// by the driver's time slicing. The share is passed to the container
// (DRA_DEVICE_<NAME>_MEMORY, _CORES) for frameworks to limit themselves
// (e.g. a serving engine's memory fraction); it is not a limit. Faults of
// one process may reset the chip for all. Use partitions where tenants
// must not affect each other, shares for cooperative workloads.
package driver

package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

// slot is a published partition device: its chip and template.
type slot struct {
	chip     inventory.Chip
	template partitions.Template
}

// CDI device annotations that let rebuildFromCDI recover what a device
// was, when the checkpoint is lost.
const (
	annotationPartition = names.Domain + "/partition"
	annotationShare     = names.Domain + "/share"
	annotationAdmin     = names.Domain + "/admin-access"
)

func toCheckpoint(i partitions.Instance) *checkpoint.Partition {
	return &checkpoint.Partition{Type: i.Type, Chip: i.Chip, Template: i.Template, ID: i.ID, DeviceNode: i.DeviceNode, UUID: i.UUID}
}

func fromCheckpoint(p *checkpoint.Partition) partitions.Instance {
	return partitions.Instance{Type: p.Type, Chip: p.Chip, Template: p.Template, ID: p.ID, DeviceNode: p.DeviceNode, UUID: p.UUID}
}

// annotations are the CDI device annotations of a prepared device.
func annotations(e checkpoint.Device) (map[string]string, error) {
	out := map[string]string{}
	if e.Partition != nil {
		raw, err := json.Marshal(e.Partition)
		if err != nil {
			return nil, err
		}
		out[annotationPartition] = string(raw)
	}
	if e.Share != nil {
		raw, err := json.Marshal(e.Share)
		if err != nil {
			return nil, err
		}
		out[annotationShare] = string(raw)
	}
	if e.AdminAccess {
		out[annotationAdmin] = "true"
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func decodeAnnotations(a map[string]string, e *checkpoint.Device) error {
	if raw, ok := a[annotationPartition]; ok {
		var p checkpoint.Partition
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return fmt.Errorf("annotation %s: %w", annotationPartition, err)
		}
		e.Partition = &p
	}
	if raw, ok := a[annotationShare]; ok {
		var s checkpoint.Share
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return fmt.Errorf("annotation %s: %w", annotationShare, err)
		}
		e.Share = &s
	}
	e.AdminAccess = a[annotationAdmin] == "true"
	return nil
}

// withoutPartitions is c with its partitions forgotten, once destroyed.
func withoutPartitions(c checkpoint.Claim) checkpoint.Claim {
	devs := make([]checkpoint.Device, len(c.Devices))
	for i, d := range c.Devices {
		d.Partition = nil
		devs[i] = d
	}
	c.Devices = devs
	return c
}

// holder is a claim that has a device prepared: another claim, or an
// earlier result (index result) of the claim being prepared.
type holder struct {
	uid    types.UID
	result int
	share  *checkpoint.Share
}

// usage is what the prepared claims other than one hold, to refuse what
// the scheduler should never have allocated (a stale allocation, a
// restart that lost the scheduler's view): a device twice, a whole chip
// and one of its partitions, more partitions than fit, a share beyond the
// chip's memory.
type usage struct {
	// self is the claim being prepared, whose own results are added as
	// they are checked.
	self    types.UID
	devices map[string][]holder
	// partitions on each chip by index, with the claim holding them.
	partitions map[int][]partitionUse
}

type partitionUse struct {
	uid      types.UID
	result   int
	device   string
	template string
}

// usage is what the prepared claims other than self hold.
func (d *Driver) usage(self types.UID) usage {
	u := usage{self: self, devices: map[string][]holder{}, partitions: map[int][]partitionUse{}}
	uids := make([]types.UID, 0, len(d.prepared.Claims))
	for uid := range d.prepared.Claims {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	for _, uid := range uids {
		if uid == self {
			continue
		}
		for _, dev := range d.prepared.Claims[uid].Devices {
			if dev.AdminAccess {
				continue // holds nothing: see planAdmin
			}
			u.devices[dev.Device] = append(u.devices[dev.Device], holder{uid: uid, share: dev.Share})
			if dev.Partition != nil {
				u.partitions[dev.Partition.Chip] = append(u.partitions[dev.Partition.Chip], partitionUse{uid: uid, device: dev.Device, template: dev.Partition.Template})
			}
		}
	}
	return u
}

// claimRef names a prepared claim for messages.
func (d *Driver) claimRef(uid types.UID) string {
	c := d.prepared.Claims[uid]
	return fmt.Sprintf("%s/%s (%s)", c.Namespace, c.Name, uid)
}

// heldBy names the holder of a device for messages: another claim, or
// another result of the claim being prepared (which the checkpoint does
// not list yet, or lists from an earlier prepare).
func (d *Driver) heldBy(u usage, uid types.UID, result int) string {
	if uid == u.self {
		return fmt.Sprintf("status.allocation.devices.results[%d] of this claim", result)
	}
	return "claim " + d.claimRef(uid)
}

// checkPartition refuses a partition device whose chip is taken whole or
// has no room left for it.
func (d *Driver) checkPartition(u usage, device string, s slot) error {
	if hs := u.devices[device]; len(hs) > 0 {
		return fmt.Errorf("device %s is already prepared for %s: refusing to give it to two claims", device, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	parent := partitions.ChipDeviceName(s.chip)
	if hs := u.devices[parent]; len(hs) > 0 {
		return fmt.Errorf("device %s is a partition of %s, which is prepared whole for %s: refusing to give out a chip and its partition", device, parent, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	total := partitions.CountersOf(s.chip)
	used := partitions.Counters{}
	for _, p := range u.partitions[s.chip.Index] {
		if t, ok := partitions.TemplateByName(s.chip, p.template); ok {
			used.Cores += t.Cores
			used.MemoryBytes += t.MemoryBytes
			used.AICPUs += t.AICPUs
		}
	}
	if used.Cores+s.template.Cores > total.Cores || used.MemoryBytes+s.template.MemoryBytes > total.MemoryBytes ||
		(total.AICPUs > 0 && used.AICPUs+s.template.AICPUs > total.AICPUs) {
		return fmt.Errorf("device %s (%s) does not fit on %s next to the %d partitions prepared there: refusing to over-commit the chip", device, s.template.Name, parent, len(u.partitions[s.chip.Index]))
	}
	return nil
}

// checkWhole refuses a whole chip that is prepared for another claim or
// has partitions prepared.
func (d *Driver) checkWhole(u usage, device string, c inventory.Chip) error {
	if hs := u.devices[device]; len(hs) > 0 {
		return fmt.Errorf("device %s is already prepared for %s: refusing to give it to two claims", device, d.heldBy(u, hs[0].uid, hs[0].result))
	}
	if ps := u.partitions[c.Index]; len(ps) > 0 {
		return fmt.Errorf("device %s has partition %s prepared for %s: refusing to give out a chip and its partition", device, ps[0].device, d.heldBy(u, ps[0].uid, ps[0].result))
	}
	return nil
}

// checkShare refuses a share that does not fit next to the other shares
// of a shared chip, or a share of a chip another claim holds exclusively.
func (d *Driver) checkShare(u usage, device string, c inventory.Chip, memory int64) error {
	used := int64(0)
	for _, h := range u.devices[device] {
		if h.share == nil {
			return fmt.Errorf("device %s is already prepared whole for %s: refusing to share it", device, d.heldBy(u, h.uid, h.result))
		}
		if q, ok := h.share.Consumed[string(names.CapMemory)]; ok {
			used += q.Value()
		} else {
			used += c.MemoryBytes
		}
	}
	if used+memory > c.MemoryBytes {
		return fmt.Errorf("device %s has %s of its %s memory prepared already (for other claims or this claim's other requests), no room for %s more: refusing to over-commit the chip", device,
			resource.NewQuantity(used, resource.BinarySI), resource.NewQuantity(c.MemoryBytes, resource.BinarySI), resource.NewQuantity(memory, resource.BinarySI))
	}
	return nil
}

// reconcilePartitions makes the partitions on the Partitioned chips agree
// with the checkpoint:
//
//   - it destroys those the checkpoint does not list: left by a crash
//     after the vendor tool made them and before the checkpoint recorded
//     them (the kubelet got no answer and retries, making a new one);
//   - it forgets those the checkpoint lists that no longer exist: left by
//     a crash of unprepare after destroying them and before saving the
//     checkpoint. The tool reuses ids, so a record kept would make the
//     kubelet's retry of that unprepare destroy another claim's partition.
//
// Errors are logged: a chip whose partitions cannot be listed still serves
// everything else.
func (d *Driver) reconcilePartitions(ctx context.Context) {
	if d.tool == nil {
		return
	}
	logger := klog.FromContext(ctx)
	// known maps chip and id to the recorded template.
	known := map[[2]int]string{}
	for _, c := range d.prepared.Claims {
		for _, dev := range c.Devices {
			if dev.Partition != nil {
				known[[2]int{dev.Partition.Chip, dev.Partition.ID}] = dev.Partition.Template
			}
		}
	}
	exists := map[[2]int]string{}
	listed := map[int]bool{}
	for _, c := range d.inv.Chips {
		if d.policy.ModeOf(c) != partitions.ModePartitioned {
			continue
		}
		list, err := d.tool.List(ctx, c)
		if err != nil {
			logger.Error(err, "Cannot list the partitions of a chip; orphaned partitions there are not removed", "chip", partitions.ChipDeviceName(c))
			continue
		}
		listed[c.Index] = true
		for _, inst := range list {
			key := [2]int{inst.Chip, inst.ID}
			if t, ok := known[key]; ok && t == inst.Template {
				exists[key] = inst.Template
				continue
			}
			if err := d.tool.Destroy(ctx, c, inst); err != nil {
				logger.Error(err, "Cannot remove a partition the checkpoint does not list", "chip", partitions.ChipDeviceName(c), "partition", inst.String())
				continue
			}
			logger.Info("Removed a partition the checkpoint does not list (left by a crash before it was recorded)",
				"chip", partitions.ChipDeviceName(c), "type", inst.Type, "template", inst.Template, "id", inst.ID, "deviceNode", inst.DeviceNode)
		}
	}
	forgot := false
	for uid, c := range d.prepared.Claims {
		for i, dev := range c.Devices {
			p := dev.Partition
			if p == nil || !listed[p.Chip] {
				continue
			}
			if t, ok := exists[[2]int{p.Chip, p.ID}]; ok && t == p.Template {
				continue
			}
			logger.Info("Forgetting a recorded partition that no longer exists (destroyed by an unprepare that crashed before saving the checkpoint)",
				"claimUID", uid, "device", dev.Device, "partition", fromCheckpoint(p).String())
			c.Devices[i].Partition = nil
			forgot = true
		}
	}
	if forgot {
		if err := d.store.Save(d.prepared); err != nil {
			logger.Error(err, "Saving the checkpoint without the partitions that no longer exist; the next save writes it")
		}
	}
}

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

package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// slot is a published partition device: its chip and template.
type slot struct {
	chip     inventory.Chip
	template vendors.Template
	// model is the partition facts of the chip.
	model vendors.PartitionModel
}

// CDI device annotations that let rebuildFromCDI recover what a device
// was, when the checkpoint is lost.
const (
	annotationPartition = names.Domain + "/partition"
	annotationShare     = names.Domain + "/share"
	annotationAdmin     = names.Domain + "/admin-access"
)

func toCheckpoint(i vendors.Instance) *checkpoint.Partition {
	return &checkpoint.Partition{Type: i.Type, Chip: i.Chip, Template: i.Template, ID: i.ID, DeviceNode: i.DeviceNode, UUID: i.UUID}
}

func fromCheckpoint(p *checkpoint.Partition) vendors.Instance {
	return vendors.Instance{Type: p.Type, Chip: p.Chip, Template: p.Template, ID: p.ID, DeviceNode: p.DeviceNode, UUID: p.UUID}
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
	if e.Kind == checkpoint.KindAdmin {
		out[annotationAdmin] = "true"
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// decodeAnnotations reads back what annotations wrote into e, and its kind.
func decodeAnnotations(a map[string]string, e *checkpoint.Device) error {
	if a[annotationAdmin] == "true" {
		e.Kind = checkpoint.KindAdmin
	}
	if raw, ok := a[annotationPartition]; ok {
		var p checkpoint.Partition
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return fmt.Errorf("annotation %s: %w", annotationPartition, err)
		}
		e.Kind, e.Partition = checkpoint.KindPartition, &p
	}
	if raw, ok := a[annotationShare]; ok {
		var s checkpoint.Share
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return fmt.Errorf("annotation %s: %w", annotationShare, err)
		}
		e.Kind, e.Share = checkpoint.KindShare, &s
	}
	return nil
}

// reconcilePartitions makes the partitions on the chips where the driver
// makes them (Partitioned chips, Shared chips whose shares the vendor's
// driver carves) agree with the checkpoint:
//
//   - it destroys those the checkpoint does not list: left by a crash
//     after the vendor tool made them and before the checkpoint recorded
//     them (the kubelet got no answer and retries, making a new one);
//   - it forgets those the checkpoint lists that no longer exist: gone
//     with a reboot, or left by a crash of unprepare after destroying
//     them and before saving the checkpoint. The tool reuses ids, so a
//     record kept would make the kubelet's retry of that unprepare
//     destroy another claim's partition; and the claim's CDI spec, where
//     it survived, is removed for the same reason (forgetPartitions).
//
// Errors listing a chip are logged: a chip whose partitions cannot be
// listed still serves everything else. An error removing a CDI spec is
// returned: start-up must not serve while a spec may name another
// claim's partition.
func (d *Driver) reconcilePartitions(ctx context.Context) error {
	_, err := d.reconcileChips(ctx, nil)
	return err
}

// reconcileChips is reconcilePartitions for the chips only (nil: all
// chips with partitions), and returns the chips it could list.
func (d *Driver) reconcileChips(ctx context.Context, only map[int]bool) (listed map[int]bool, err error) {
	listed = map[int]bool{}
	if d.tool == nil {
		return listed, nil
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
	for _, c := range d.inv.Chips {
		if !d.policy.MakesPartitions(c) || (only != nil && !only[c.Index]) {
			continue
		}
		list, err := d.tool.List(ctx, c)
		if err != nil {
			logger.Error(err, "Cannot list the partitions of a chip; orphaned partitions there are not removed", "chip", d.names.ChipDevice(c.Index))
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
				logger.Error(err, "Cannot remove a partition the checkpoint does not list", "chip", d.names.ChipDevice(c.Index), "partition", inst.String())
				continue
			}
			logger.Info("Removed a partition the checkpoint does not list (left by a crash before it was recorded)",
				"chip", d.names.ChipDevice(c.Index), "type", inst.Type, "template", inst.Template, "id", inst.ID, "deviceNode", inst.DeviceNode)
		}
	}
	return listed, d.forgetPartitions(ctx, only == nil, listed, exists)
}

// forgetPartitions forgets the recorded partitions that do not exist on
// the chips listed (exists) and removes their claims' CDI specs. At
// start-up (atStart) after a reboot (d.rebootID) it also forgets those on
// chips it could not list: they were made in another boot, and a record
// kept would have the re-prepare reuse a device node the tool may give
// to another claim; those chips are listed again at the next call
// (d.unsure), which removes a partition there that no claim holds. At
// start-up it forgets too, with a warning, the partitions of chips that
// are not on the node (while running, Update keeps a gone chip that
// claims use): no tool can destroy them, and the record would fail the
// claim's unprepare at every retry of the kubelet.
//
// The claim keeps its CDI device IDs in the checkpoint: the kubelet
// recorded them, and the prepare that makes its partition again writes
// its spec under the same IDs. Without a spec they name nothing, so a
// container started meanwhile fails rather than gets another's device.
func (d *Driver) forgetPartitions(ctx context.Context, atStart bool, listed map[int]bool, exists map[[2]int]string) error {
	logger := klog.FromContext(ctx)
	forgot := map[types.UID]bool{}
	for uid, c := range d.prepared.Claims {
		for i, dev := range c.Devices {
			p := dev.Partition
			if p == nil {
				continue
			}
			why, ok := d.whyGone(p, atStart, listed, exists)
			if !ok {
				continue
			}
			if _, onNode := d.chipByIndex(p.Chip); !onNode {
				logger.Error(nil, "Forgetting a recorded partition whose chip is not on this node any more; the claim's unprepare will not destroy it",
					"claimUID", uid, "device", dev.Device, "partition", fromCheckpoint(p).String(), "chip", p.Chip)
			} else {
				logger.Info("Forgetting a recorded partition that no longer exists", "why", why,
					"claimUID", uid, "device", dev.Device, "partition", fromCheckpoint(p).String(), "chipListed", listed[p.Chip])
			}
			c.Devices[i].Partition = nil
			forgot[uid] = true
		}
	}
	if len(forgot) == 0 {
		return nil
	}
	if err := d.store.Save(d.prepared); err != nil {
		logger.Error(err, "Saving the checkpoint without the partitions that no longer exist; the next save writes it")
	}
	var errs []error
	for _, uid := range sortedUIDs(forgot) {
		if err := d.cdi.Delete(ctx, d.vendor, uid); err != nil {
			errs = append(errs, fmt.Errorf("removing the CDI spec of claim %s, whose partition no longer exists: %w", d.claimRef(uid), err))
			continue
		}
		logger.Info("Removed the CDI spec of a claim whose partition no longer exists: it named a device node the next partition made may get",
			"claim", klog.KRef(d.prepared.Claims[uid].Namespace, d.prepared.Claims[uid].Name), "claimUID", uid)
	}
	return errors.Join(errs...)
}

// whyGone says why recorded partition p is to be forgotten, if it is.
// Only start-up (atStart) knows that a record is from before a reboot or
// that its chip is gone: later, reconcileChips lists only the chips where
// a create failed, and every record is of this boot (start-up forgot the
// others), so a chip not listed then keeps its records.
func (d *Driver) whyGone(p *checkpoint.Partition, atStart bool, listed map[int]bool, exists map[[2]int]string) (string, bool) {
	const rebooted = "the node rebooted since the checkpoint recorded it; the claim is prepared again"
	if _, onNode := d.chipByIndex(p.Chip); atStart && !onNode {
		return "its chip is not on this node any more", true
	}
	if !listed[p.Chip] {
		if !atStart || d.rebootID == "" {
			return "", false
		}
		d.markUnsure(p.Chip)
		return rebooted, true
	}
	if t, ok := exists[[2]int{p.Chip, p.ID}]; ok && t == p.Template {
		return "", false
	}
	if atStart && d.rebootID != "" {
		return rebooted, true
	}
	return "destroyed by an unprepare that crashed before saving the checkpoint", true
}

// markUnsure has the next call list a chip again (retryOrphans), if the
// driver makes partitions on it.
func (d *Driver) markUnsure(chip int) {
	if c, ok := d.chipByIndex(chip); !ok || !d.policy.MakesPartitions(c) {
		return
	}
	if d.unsure == nil {
		d.unsure = map[int]bool{}
	}
	d.unsure[chip] = true
}

// chipByIndex is the chip of index on this node.
func (d *Driver) chipByIndex(index int) (inventory.Chip, bool) {
	for _, c := range d.inv.Chips {
		if c.Index == index {
			return c, true
		}
	}
	return inventory.Chip{}, false
}

// saveOrphans saves the checkpoint after a rollback recorded partitions
// it could not destroy. Callers hold d.mu.
func (d *Driver) saveOrphans(ctx context.Context) {
	if err := d.store.Save(d.prepared); err != nil {
		klog.FromContext(ctx).Error(err, "Saving the partitions a rollback could not destroy; start-up reconciliation removes them", "partitions", len(d.prepared.Orphans))
	}
}

// retryOrphans destroys the partitions a rollback could not (recorded in
// the checkpoint), at start-up and before each call. One that no longer
// exists, or whose chip and id a prepared claim now holds (the tool
// reuses ids: the first one is gone), is forgotten, never destroyed.
// Callers hold d.mu.
//
// It also reconciles the chips where a create failed (d.unsure) as
// start-up does: a partition there that no claim holds is destroyed.
func (d *Driver) retryOrphans(ctx context.Context) {
	if len(d.unsure) > 0 {
		listed, err := d.reconcileChips(ctx, d.unsure)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Reconciling the partitions of the chips where a create failed")
		}
		for chip := range listed {
			delete(d.unsure, chip)
		}
	}
	if len(d.prepared.Orphans) == 0 || d.tool == nil {
		return
	}
	logger := klog.FromContext(ctx)
	held := map[[2]int]bool{}
	for _, c := range d.prepared.Claims {
		for _, dev := range c.Devices {
			if dev.Partition != nil {
				held[[2]int{dev.Partition.Chip, dev.Partition.ID}] = true
			}
		}
	}
	lists := map[int][]vendors.Instance{}
	var left []checkpoint.Partition
	for _, p := range d.prepared.Orphans {
		inst := fromCheckpoint(&p)
		chip, ok := d.chipByIndex(p.Chip)
		if !ok || held[[2]int{p.Chip, p.ID}] {
			logger.Info("Forgetting a partition left by a rollback: its chip or id is another's now", "partition", inst.String())
			continue
		}
		list, ok := lists[p.Chip]
		if !ok {
			var err error
			if list, err = d.tool.List(ctx, chip); err != nil {
				logger.Error(err, "Cannot list the partitions of a chip to destroy one a rollback left; retrying later", "partition", inst.String())
				left = append(left, p)
				continue
			}
			lists[p.Chip] = list
		}
		if !slices.ContainsFunc(list, func(i vendors.Instance) bool { return i.ID == p.ID && i.Template == p.Template }) {
			logger.Info("A partition left by a rollback is gone", "partition", inst.String())
			continue
		}
		if err := d.tool.Destroy(ctx, chip, inst); err != nil {
			logger.Error(err, "Cannot destroy a partition left by a rollback; retrying later", "partition", inst.String())
			left = append(left, p)
			continue
		}
		logger.Info("Destroyed a partition left by a rollback", "partition", inst.String())
	}
	if len(left) == len(d.prepared.Orphans) {
		return
	}
	d.prepared.Orphans = left
	if err := d.store.Save(d.prepared); err != nil {
		logger.Error(err, "Saving the checkpoint without the partitions destroyed since a rollback; the next save writes it")
	}
}

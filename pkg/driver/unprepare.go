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
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
)

// unprepare unprepares one claim and returns the devices it had here
// (none if it was not prepared here). Its phases undo prepare's in
// reverse: remove the CDI spec (no container can get the devices any
// more), destroy the partitions, forget the claim in the checkpoint.
// None of that can be undone; on a failure the claim's record is made to
// say what is left on the node, so the kubelet's retry finishes the job
// and never destroys a partition twice (the tools reuse ids: the second
// time it could be another claim's).
func (d *Driver) unprepare(ctx context.Context, c kubeletplugin.NamespacedObject) ([]string, error) {
	if err := d.cdi.Delete(ctx, d.vendor, c.UID); err != nil {
		return nil, fmt.Errorf("claim %s (%s): removing CDI spec: %w", c.NamespacedName, c.UID, err)
	}
	prev, ok := d.prepared.Claims[c.UID]
	if !ok {
		klog.FromContext(ctx).V(4).Info("Unprepare of a claim that is not prepared here", "claim", c.NamespacedName, "claimUID", c.UID)
		return nil, nil
	}
	if err := failpoint.Inject(failpoint.UnprepareAfterCDI); err != nil {
		return nil, fmt.Errorf("claim %s (%s): %w", c.NamespacedName, c.UID, err)
	}
	if err := d.destroyPartitions(ctx, c.UID, prev); err != nil {
		return nil, fmt.Errorf("claim %s (%s): %w", c.NamespacedName, c.UID, err)
	}
	if err := failpoint.Inject(failpoint.UnprepareBeforeCheckpoint); err != nil {
		return nil, fmt.Errorf("claim %s (%s): %w", c.NamespacedName, c.UID, err)
	}
	restore := d.setClaim(c.UID, nil)
	if err := d.store.Save(d.prepared); err != nil {
		restore() // without its partitions, which are destroyed
		return nil, fmt.Errorf("claim %s (%s): saving checkpoint: %w", c.NamespacedName, c.UID, err)
	}
	devices := make([]string, 0, len(prev.Devices))
	for _, dev := range prev.Devices {
		devices = append(devices, dev.Device)
	}
	return devices, nil
}

// destroyPartitions destroys the partitions made for claim uid, whose
// CDI spec is gone, and makes its record in memory forget each one
// destroyed. If one cannot be destroyed, the record keeps it and those
// after it for the kubelet's retry, and is saved if it changed.
func (d *Driver) destroyPartitions(ctx context.Context, uid types.UID, prev checkpoint.Claim) error {
	left := prev
	left.Devices = slices.Clone(prev.Devices)
	destroyed := 0
	var err error
	for i, dev := range left.Devices {
		if dev.Partition == nil {
			continue
		}
		if err = d.destroyPartition(ctx, dev); err != nil {
			break
		}
		left.Devices[i].Partition = nil
		destroyed++
	}
	d.setClaim(uid, &left)
	if err != nil && destroyed > 0 {
		if serr := d.store.Save(d.prepared); serr != nil {
			klog.FromContext(ctx).Error(serr, "Saving the checkpoint without the partitions already destroyed; start-up reconciliation forgets them", "claimUID", uid)
		}
	}
	return err
}

// destroyPartition destroys the partition of a prepared device.
func (d *Driver) destroyPartition(ctx context.Context, dev checkpoint.Device) error {
	inst := fromCheckpoint(dev.Partition)
	if d.tool == nil {
		return fmt.Errorf("destroying partition %s of device %s: this node has no partition tool", inst, dev.Device)
	}
	chip, ok := d.chipByIndex(inst.Chip)
	if !ok {
		return fmt.Errorf("destroying partition %s of device %s: chip %d is not on this node any more", inst, dev.Device, inst.Chip)
	}
	if err := d.tool.Destroy(ctx, chip, inst); err != nil {
		return fmt.Errorf("destroying partition %s of device %s: %w", inst, dev.Device, err)
	}
	klog.FromContext(ctx).V(2).Info("Destroyed partition", "device", dev.Device, "partition", inst.String())
	return nil
}

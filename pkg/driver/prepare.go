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
	"path"
	"runtime/trace"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// prepare prepares one claim and returns its devices for the kubelet and
// for the claim's status. It is a small transaction in phases: check the
// results (nothing changes), create the partitions, build and write the
// claim's CDI spec, commit the claim to the checkpoint. Each phase that
// changes the node registers its undo with tx; a failure before the
// commit rolls back everything in one place (the deferred rollback), so
// a failed prepare leaves no partition, no CDI spec of a new claim and
// the checkpoint as it was. The rollback runs under its own bounded
// context (the kubelet's may have ended mid-create); a partition it
// cannot destroy is recorded in the checkpoint for the next call or
// start-up (retryOrphans). A crash between phases leaves what start-up
// cleans (loadState, reconcilePartitions); the failpoints mark the phase
// boundaries the crash tests kill the agent at.
func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, []claimstatus.Device, error) {
	phase := trace.StartRegion(ctx, RegionPrepareCheck)
	p, err := d.check(claim)
	phase.End()
	if err != nil {
		return nil, nil, err
	}
	tx := newTransaction(klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "claimUID", claim.UID))
	defer func() {
		if tx.rollback(ctx) {
			d.saveOrphans(ctx)
		}
	}()
	phase = trace.StartRegion(ctx, RegionPreparePartitions)
	err = d.createPartitions(ctx, tx, p)
	phase.End()
	if err != nil {
		return nil, nil, err
	}
	phase = trace.StartRegion(ctx, RegionPrepareCDI)
	spec, err := d.cdiClaim(p)
	if err != nil {
		phase.End()
		return nil, nil, err
	}
	if err := failpoint.Inject(failpoint.PrepareBeforeCDI); err != nil {
		phase.End()
		return nil, nil, err
	}
	ids, err := d.writeCDI(ctx, tx, p, spec)
	phase.End()
	if err != nil {
		return nil, nil, err
	}
	entry := p.checkpointClaim(ids)
	phase = trace.StartRegion(ctx, RegionPrepareCheckpoint)
	err = d.commitCheckpoint(tx, claim, entry)
	phase.End()
	if err != nil {
		return nil, nil, fmt.Errorf("saving checkpoint: %w", err)
	}
	if err := failpoint.Inject(failpoint.PrepareAfterCheckpoint); err != nil {
		return nil, nil, err
	}
	devices, status := d.answer(p, entry)
	return devices, status, nil
}

// Names of the runtime/trace regions of a prepare (go tool trace, or a
// flight recorder in the agent's process), so a slow prepare's time can
// be split into its phases: waiting for the driver's lock, and prepare's
// own phases in order. What a kubelet call spends outside
// RegionPrepare is the helper's (the claim's Get, the device metadata
// files) and gRPC's.
const (
	RegionPrepare           = "accel-dra.PrepareResourceClaims"
	RegionPrepareLock       = "accel-dra.prepare.lock"
	RegionPrepareCheck      = "accel-dra.prepare.check"
	RegionPreparePartitions = "accel-dra.prepare.partitions"
	RegionPrepareCDI        = "accel-dra.prepare.cdi"
	RegionPrepareCheckpoint = "accel-dra.prepare.checkpoint"
)

// createPartitions is the second phase: it makes the partitions the plan
// needs with the vendor tool, each destroyed again on rollback.
func (d *Driver) createPartitions(ctx context.Context, tx *transaction, p *claimPlan) error {
	logger := klog.FromContext(ctx)
	for i := range p.devices {
		pd := &p.devices[i]
		if pd.create == nil {
			continue
		}
		chip := pd.create.chip
		inst, err := d.tool.Create(ctx, chip, pd.create.template)
		if err != nil {
			// A create that timed out or was cancelled may still make the
			// partition (a wedged library call returns late, a killed tool
			// got that far): the next call lists the chip and removes what
			// no claim holds.
			d.markUnsure(chip.Index)
			if pd.entry.Share != nil {
				return fmt.Errorf("creating the partition of the share of %s (chip %d): %w", pd.entry.Device, chip.Index, err)
			}
			return fmt.Errorf("creating partition %s: %w", pd.entry.Device, err)
		}
		logger.V(2).Info("Created partition", "claim", klog.KObj(p.claim), "device", pd.entry.Device, "partition", inst.String())
		tx.onRollbackOrRecord(func(ctx context.Context) error { return d.tool.Destroy(ctx, chip, inst) },
			func() { d.prepared.Orphans = append(d.prepared.Orphans, *toCheckpoint(inst)) },
			"Destroying a partition of a claim that failed to prepare; the next call or start-up retries", "partition", inst.String())
		pd.entry.Partition = toCheckpoint(inst)
		if err := failpoint.Inject(failpoint.PartitionCreated); err != nil {
			return err
		}
	}
	return nil
}

// cdiClaim is the third phase: the claim's CDI spec, with each partition's
// own device nodes and the annotations rebuildFromCDI reads back.
func (d *Driver) cdiClaim(p *claimPlan) (cdi.Claim, error) {
	c := p.claim
	spec := cdi.Claim{UID: c.UID, Namespace: c.Namespace, Name: c.Name, Vendor: d.vendor,
		SharedDeviceNodes: d.inv.SharedDeviceNodes[d.names.Vendor]}
	allVirtual, allAdmin := len(p.devices) > 0, len(p.devices) > 0
	for i := range p.devices {
		pd := &p.devices[i]
		if pd.entry.Partition != nil {
			if err := d.partitionEdits(pd); err != nil {
				return cdi.Claim{}, fmt.Errorf("device %s: %w", pd.entry.Device, err)
			}
		}
		a, err := annotations(pd.entry)
		if err != nil {
			return cdi.Claim{}, fmt.Errorf("device %s: %w", pd.entry.Device, err)
		}
		pd.dev.Annotations = a
		spec.Devices = append(spec.Devices, pd.dev)
		allVirtual = allVirtual && pd.virtual
		allAdmin = allAdmin && pd.entry.Kind == checkpoint.KindAdmin
	}
	// A claim of only virtual partitions gets what the vendor's runtime
	// sets for them (the vendor's CDI edits); an admin claim only its flag.
	spec.Virtual = allVirtual && !allAdmin
	if allAdmin {
		spec.Env = map[string]string{cdi.EnvAdminAccess: "true"}
	}
	return spec, nil
}

// partitionEdits points a partition device's CDI device at its partition:
// a partition device's (a slot of a Partitioned chip) or a share's of a
// Shared chip whose driver carved it.
func (d *Driver) partitionEdits(pd *plannedDevice) error {
	inst := fromCheckpoint(pd.entry.Partition)
	if inst.DeviceNode == "" || !path.IsAbs(inst.DeviceNode) {
		return fmt.Errorf("%s has no absolute device node (%q)", inst, inst.DeviceNode)
	}
	if d.parts == nil {
		return fmt.Errorf("%s: vendor %q has no partitions", inst, d.names.Vendor)
	}
	edits, err := d.parts.Edits(pd.dev.Chip, inst)
	if err != nil {
		return err
	}
	pd.virtual = edits.Virtual
	pd.dev.NotVisible = edits.NotVisible
	for _, n := range edits.DeviceNodes {
		pd.dev.Nodes = append(pd.dev.Nodes, cdi.DeviceNode{Path: n.Path, HostPath: n.HostPath})
	}
	if edits.Virtual {
		pd.dev.VisibleID = ptr.To(edits.VisibleID)
	}
	if pd.entry.Share != nil {
		// The share's variables are set (planner.share), with its
		// partition's template.
		return nil
	}
	sl := d.slots[pd.entry.Device]
	pd.dev.DriverEnv = map[string]string{
		cdi.EnvSuffixPartition: sl.template.Name,
		cdi.EnvSuffixMemory:    strconv.FormatInt(sl.template.MemoryBytes, 10),
		cdi.EnvSuffixCores:     strconv.FormatInt(sl.template.Cores, 10),
	}
	return nil
}

// writeCDI writes the claim's CDI spec and returns the CDI device IDs by
// CDI device name. A new claim's spec is removed on rollback; a claim
// prepared before keeps it, as the checkpoint still lists it.
func (d *Driver) writeCDI(ctx context.Context, tx *transaction, p *claimPlan, spec cdi.Claim) (map[string][]string, error) {
	ids, err := d.cdi.Write(ctx, spec)
	if err != nil {
		// The writer's error names the claim, the spec file and why.
		return nil, err
	}
	if !p.had {
		tx.onRollback(func(ctx context.Context) error { return d.cdi.Delete(ctx, d.vendor, spec.UID) },
			"Removing CDI spec after failed checkpoint")
	}
	return ids, nil
}

// checkpointClaim is the claim's checkpoint entry, with the CDI device IDs
// the spec gave each device.
func (p *claimPlan) checkpointClaim(ids map[string][]string) checkpoint.Claim {
	c := checkpoint.Claim{Namespace: p.claim.Namespace, Name: p.claim.Name}
	for _, pd := range p.devices {
		e := pd.entry
		e.CDIDeviceIDs = ids[pd.dev.Name]
		c.Devices = append(c.Devices, e)
	}
	return c
}

// commitCheckpoint is the last phase and the transaction's commit: the
// checkpoint lists the claim before the kubelet has its IDs, so a restart
// still knows the devices are taken and which partitions are ours.
func (d *Driver) commitCheckpoint(tx *transaction, claim *resourceapi.ResourceClaim, entry checkpoint.Claim) error {
	restore := d.setClaim(claim.UID, &entry)
	tx.onRollback(func(context.Context) error { restore(); return nil }, "")
	if err := failpoint.Inject(failpoint.PrepareAfterCDI); err != nil {
		return err
	}
	if err := d.store.Save(d.prepared); err != nil {
		return err
	}
	tx.commit()
	return nil
}

// answer is what the kubelet and the claim's status get of the prepared
// claim.
func (d *Driver) answer(p *claimPlan, entry checkpoint.Claim) ([]kubeletplugin.Device, []claimstatus.Device) {
	var devices []kubeletplugin.Device
	var status []claimstatus.Device
	for i, pd := range p.devices {
		r, e := pd.result, entry.Devices[i]
		st := statusOf(r, pd.dev.Chip, e.Partition)
		dev := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: e.CDIDeviceIDs, ShareID: r.ShareID}
		if d.metadata {
			dev.Metadata = &kubeletplugin.DeviceMetadata{Attributes: st.Data.Attributes(), NetworkData: st.Data.NetworkData()}
		}
		devices = append(devices, dev)
		status = append(status, st)
	}
	return devices, status
}

// statusOf is what the claim's status.devices (and the device metadata
// file) say of a prepared device: its chip, and the partition made for it.
func statusOf(r resourceapi.DeviceRequestAllocationResult, chip inventory.Chip, p *checkpoint.Partition) claimstatus.Device {
	data := claimstatus.ChipData(chip)
	if p != nil {
		data.Template, data.InstanceID = p.Template, ptr.To(p.ID)
	}
	return claimstatus.Device{Pool: r.Pool, Device: r.Device, ShareID: r.ShareID, Data: data}
}

package driver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/failpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/webhook/opaque"
)

// PrepareResourceClaims implements kubeletplugin.DRAPlugin. Each claim
// succeeds or fails on its own: a bad config in one claim does not stop
// the others of the same call.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	start := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.countPrepared()
	if err := d.reload(); err != nil {
		refs := make([]klog.ObjectRef, 0, len(claims))
		for _, c := range claims {
			refs = append(refs, klog.KObj(c))
		}
		d.callFailed(ctx, metrics.Prepare, refs, start, err)
		return nil, err
	}
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		begin := time.Now()
		devices, status, err := d.prepare(ctx, claim)
		took := time.Since(begin)
		d.metrics.Observe(metrics.Prepare, d.name, took, err)
		if err != nil {
			err = fmt.Errorf("claim %s/%s (%s): %w", claim.Namespace, claim.Name, claim.UID, err)
			logger.Error(err, "Preparing claim failed", "claim", klog.KObj(claim), "claimUID", claim.UID, "duration", took)
		} else {
			prepared := make([]string, 0, len(devices))
			for _, dev := range devices {
				prepared = append(prepared, dev.DeviceName)
			}
			logger.V(2).Info("Prepared claim", "claim", klog.KObj(claim), "claimUID", claim.UID, "devices", prepared, "duration", took)
			// In the background, retried: a status the API refuses for a
			// while must not fail nor delay the pod's start.
			d.status.Prepared(claim.Namespace, claim.Name, claim.UID, status)
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return out, nil
}

// prepare prepares one claim and returns its devices for the kubelet and
// for the claim's status.
func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, []claimstatus.Device, error) {
	logger := klog.FromContext(ctx)
	if claim.Status.Allocation == nil {
		return nil, nil, errors.New("not allocated")
	}
	results, err := d.ourResults(claim)
	if err != nil {
		return nil, nil, err
	}
	configs, err := d.requestConfigs(claim, results)
	if err != nil {
		return nil, nil, err
	}

	prev, had := d.prepared.Claims[claim.UID]
	earlier := map[string]checkpoint.Device{}
	for _, dev := range prev.Devices {
		earlier[dev.Device] = dev
	}
	u := d.usage(claim.UID)
	spec := cdi.Claim{UID: claim.UID, Namespace: claim.Namespace, Name: claim.Name, Vendor: d.vendor,
		SharedDeviceNodes: d.inv.SharedDeviceNodes[d.vendor]}
	entry := checkpoint.Claim{Namespace: claim.Namespace, Name: claim.Name}
	// plans[i] is what results[i] becomes; partitions to create are made
	// once every result has been checked.
	type plan struct {
		dev    cdi.Device
		entry  checkpoint.Device
		create *slot
	}
	plans := make([]plan, len(results))
	seen := map[string]int{}
	allVirtual, allAdmin := len(results) > 0, len(results) > 0
	for i, r := range results {
		field := fmt.Sprintf("status.allocation.devices.results[%d]", i)
		if isAdmin(r) {
			dev, entry, err := d.planAdmin(field, r, configs[r.Request].env)
			if err != nil {
				return nil, nil, err
			}
			plans[i] = plan{dev: dev, entry: entry}
			allVirtual = false
			continue
		}
		allAdmin = false
		_, again := seen[r.Device]
		if j := seen[r.Device]; again && !d.isShared(r.Device) {
			return nil, nil, fmt.Errorf("%s: device %s is allocated twice in this claim (also results[%d])", field, r.Device, j)
		}
		if !again {
			seen[r.Device] = i
		}
		cfg := configs[r.Request]
		p := plan{dev: cdi.Device{Name: r.Device, Env: cfg.env}, entry: checkpoint.Device{Request: r.Request, Pool: r.Pool, Device: r.Device}}
		isVirtual := false
		if chip, ok := d.chips[r.Device]; ok {
			p.dev.Chip = chip
			if d.policy.ModeOf(chip) == partitions.ModeShared && r.ShareID != nil {
				memory := consumed(r, names.CapMemory, chip.MemoryBytes)
				cores := consumed(r, names.CapCores, int64(chip.Cores))
				if memory < chip.MemoryBytes && cfg.strategy == v1alpha1.SharingExclusive {
					return nil, nil, fmt.Errorf("%s: device %s is a share (%s of %s memory) of a shared chip, but the config of request %q says sharing.strategy: %s; request all of its memory or use strategy %s",
						field, r.Device, resource.NewQuantity(memory, resource.BinarySI), resource.NewQuantity(chip.MemoryBytes, resource.BinarySI),
						r.Request, v1alpha1.SharingExclusive, v1alpha1.SharingShared)
				}
				if err := d.checkShare(u, r.Device, chip, memory); err != nil {
					return nil, nil, err
				}
				p.entry.Share = &checkpoint.Share{ID: *r.ShareID, Consumed: map[string]resource.Quantity{
					string(names.CapMemory): *resource.NewQuantity(memory, resource.BinarySI),
					string(names.CapCores):  *resource.NewQuantity(cores, resource.DecimalSI),
				}}
				u.devices[r.Device] = append(u.devices[r.Device], holder{uid: claim.UID, result: i, share: p.entry.Share})
				p.dev.DriverEnv = map[string]string{
					cdi.EnvSuffixShareID: string(*r.ShareID),
					cdi.EnvSuffixMemory:  strconv.FormatInt(memory, 10),
					cdi.EnvSuffixCores:   strconv.FormatInt(cores, 10),
				}
				// Two shares of one chip in one claim get distinct CDI devices.
				if again {
					p.dev.Name = r.Device + "-" + string(*r.ShareID)
				}
			} else {
				if err := d.checkWhole(u, r.Device, chip); err != nil {
					return nil, nil, err
				}
				u.devices[r.Device] = append(u.devices[r.Device], holder{uid: claim.UID, result: i})
			}
		} else if sl, ok := d.slots[r.Device]; ok {
			if err := d.checkPartition(u, r.Device, sl); err != nil {
				return nil, nil, err
			}
			p.dev.Chip = sl.chip
			u.devices[r.Device] = append(u.devices[r.Device], holder{uid: claim.UID, result: i})
			u.partitions[sl.chip.Index] = append(u.partitions[sl.chip.Index], partitionUse{uid: claim.UID, result: i, device: r.Device, template: sl.template.Name})
			if e, ok := earlier[r.Device]; ok && e.Partition != nil && e.Partition.Template == sl.template.Name {
				// Prepared before (a kubelet retry, a restart): reuse it.
				p.entry.Partition = e.Partition
			} else {
				s := sl
				p.create = &s
			}
			isVirtual = sl.template.Type == partitions.TypeVNPU
		} else {
			return nil, nil, fmt.Errorf("%s: device %q is not a chip of %s on node %s (nor a partition of one)", field, r.Device, d.name, d.node)
		}
		allVirtual = allVirtual && isVirtual
		plans[i] = p
	}

	// An admin result may name a device another result of this claim has
	// too (an admin request beside a normal one); CDI device names must differ.
	taken := map[string]bool{}
	for _, p := range plans {
		if !p.entry.AdminAccess {
			taken[p.dev.Name] = true
		}
	}
	for i := range plans {
		p := &plans[i]
		if !p.entry.AdminAccess {
			continue
		}
		name := p.dev.Name
		for n := 1; taken[name]; n++ {
			name = fmt.Sprintf("%s-admin-%d", p.dev.Name, n)
		}
		p.dev.Name, taken[name] = name, true
	}

	// Make the partitions. Anything made here is destroyed again if the
	// claim cannot be completed, so a failed prepare leaves no partition.
	var created []partitions.Instance
	undo := func() {
		for _, inst := range created {
			c, _ := d.chipByIndex(inst.Chip)
			if err := d.tool.Destroy(ctx, c, inst); err != nil {
				logger.Error(err, "Destroying a partition of a claim that failed to prepare; start-up reconciliation will retry", "claimUID", claim.UID, "partition", inst.String())
			}
		}
	}
	for i := range plans {
		p := &plans[i]
		if p.create == nil {
			continue
		}
		inst, err := d.tool.Create(ctx, p.create.chip, p.create.template)
		if err != nil {
			undo()
			return nil, nil, fmt.Errorf("creating partition %s: %w", p.entry.Device, err)
		}
		logger.V(2).Info("Created partition", "claim", klog.KObj(claim), "device", p.entry.Device, "partition", inst.String())
		created = append(created, inst)
		p.entry.Partition = toCheckpoint(inst)
		if err := failpoint.Inject(failpoint.PartitionCreated); err != nil {
			undo()
			return nil, nil, err
		}
	}
	for i := range plans {
		p := &plans[i]
		if p.entry.Partition != nil {
			sl := d.slots[p.entry.Device]
			edits, err := partitions.EditsOf(sl.chip, fromCheckpoint(p.entry.Partition))
			if err != nil {
				undo()
				return nil, nil, fmt.Errorf("device %s: %w", p.entry.Device, err)
			}
			for _, n := range edits.DeviceNodes {
				p.dev.Nodes = append(p.dev.Nodes, cdi.DeviceNode{Path: n.Path, HostPath: n.HostPath})
			}
			if edits.Virtual {
				p.dev.VisibleID = ptr.To(edits.VisibleID)
			}
			p.dev.DriverEnv = map[string]string{
				cdi.EnvSuffixPartition: sl.template.Name,
				cdi.EnvSuffixMemory:    strconv.FormatInt(sl.template.MemoryBytes, 10),
				cdi.EnvSuffixCores:     strconv.FormatInt(sl.template.Cores, 10),
			}
		}
		a, err := annotations(p.entry)
		if err != nil {
			undo()
			return nil, nil, fmt.Errorf("device %s: %w", p.entry.Device, err)
		}
		p.dev.Annotations = a
		spec.Devices = append(spec.Devices, p.dev)
	}
	// A claim of only virtual partitions gets what the vendor's runtime
	// sets for them (the vendor's CDI edits); an admin claim only its flag.
	spec.Virtual = allVirtual && !allAdmin
	if allAdmin {
		spec.Env = map[string]string{cdi.EnvAdminAccess: "true"}
	}

	if err := failpoint.Inject(failpoint.PrepareBeforeCDI); err != nil {
		undo()
		return nil, nil, err
	}
	ids, err := d.cdi.Write(ctx, spec)
	if err != nil {
		undo()
		// The writer's error names the claim, the spec file and why.
		return nil, nil, err
	}
	var devices []kubeletplugin.Device
	var status []claimstatus.Device
	for i, r := range results {
		e := plans[i].entry
		e.CDIDeviceIDs = ids[plans[i].dev.Name]
		entry.Devices = append(entry.Devices, e)
		st := statusOf(r, plans[i].dev.Chip, e.Partition)
		dev := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: e.CDIDeviceIDs, ShareID: r.ShareID}
		if d.metadata {
			dev.Metadata = &kubeletplugin.DeviceMetadata{Attributes: st.Data.Attributes(), NetworkData: st.Data.NetworkData()}
		}
		devices = append(devices, dev)
		status = append(status, st)
	}
	// Checkpoint before answering: once kubelet has the IDs, a restart
	// must still know the devices are taken and which partitions are ours.
	d.prepared.Claims[claim.UID] = entry
	err = failpoint.Inject(failpoint.PrepareAfterCDI)
	if err == nil {
		err = d.store.Save(d.prepared)
	}
	if err != nil {
		if had {
			d.prepared.Claims[claim.UID] = prev
		} else {
			delete(d.prepared.Claims, claim.UID)
			if derr := d.cdi.Delete(ctx, d.vendor, claim.UID); derr != nil {
				logger.Error(derr, "Removing CDI spec after failed checkpoint", "claimUID", claim.UID)
			}
		}
		undo()
		return nil, nil, fmt.Errorf("saving checkpoint: %w", err)
	}
	if err := failpoint.Inject(failpoint.PrepareAfterCheckpoint); err != nil {
		return nil, nil, err
	}
	return devices, status, nil
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

// isAdmin says whether an allocation result has admin access.
func isAdmin(r resourceapi.DeviceRequestAllocationResult) bool {
	return r.AdminAccess != nil && *r.AdminAccess
}

// planAdmin is what an admin-access result becomes: the chip's device
// nodes, whatever holds the chip. The scheduler hands admin results out
// next to the devices' normal holders (monitoring, debugging), so nothing
// is checked against other claims, no partition is made (a partition
// device gives its parent chip's nodes) and no share is counted; other
// claims' checks ignore it (usage).
func (d *Driver) planAdmin(field string, r resourceapi.DeviceRequestAllocationResult, env map[string]string) (cdi.Device, checkpoint.Device, error) {
	chip, ok := d.chips[r.Device]
	if !ok {
		sl, isSlot := d.slots[r.Device]
		if !isSlot {
			return cdi.Device{}, checkpoint.Device{}, fmt.Errorf("%s: device %q is not a chip of %s on node %s (nor a partition of one)", field, r.Device, d.name, d.node)
		}
		chip = sl.chip
	}
	dev := cdi.Device{Name: r.Device, Chip: chip, Env: env, DriverEnv: map[string]string{cdi.EnvSuffixAdminAccess: "true"}}
	entry := checkpoint.Device{Request: r.Request, Pool: r.Pool, Device: r.Device, AdminAccess: true}
	return dev, entry, nil
}

// consumed is the capacity name the scheduler gave a share of, or def
// when the result records none (the request policy's default).
func consumed(r resourceapi.DeviceRequestAllocationResult, name resourceapi.QualifiedName, def int64) int64 {
	if q, ok := r.ConsumedCapacity[name]; ok {
		return q.Value()
	}
	return def
}

// isShared says whether a device is a chip published Shared.
func (d *Driver) isShared(device string) bool {
	c, ok := d.chips[device]
	return ok && d.policy.ModeOf(c) == partitions.ModeShared
}

func (d *Driver) chipByIndex(index int) (inventory.Chip, bool) {
	for _, c := range d.inv.Chips {
		if c.Index == index {
			return c, true
		}
	}
	return inventory.Chip{}, false
}

// allocationConfigs is where the plugin finds the configs of a claim.
var allocationConfigs = field.NewPath("status", "allocation", "devices", "config")

// ourResults are the allocation results this plugin must prepare. A result
// of our driver in another pool means the claim was allocated for another
// node: preparing it here would hand out the wrong chip.
func (d *Driver) ourResults(claim *resourceapi.ResourceClaim) ([]resourceapi.DeviceRequestAllocationResult, error) {
	var out []resourceapi.DeviceRequestAllocationResult
	for i, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.name {
			continue
		}
		if r.Pool != d.node {
			return nil, fmt.Errorf("status.allocation.devices.results[%d]: device %s is in pool %q, but this is node %q", i, r.Device, r.Pool, d.node)
		}
		out = append(out, r)
	}
	return out, nil
}

// requestConfig is what the opaque configs say about one request.
type requestConfig struct {
	env      map[string]string
	strategy v1alpha1.SharingStrategy
}

// requestConfigs decodes the opaque configs for our driver that apply to
// each allocated request: class configs first, then claim configs, later
// ones win (the order the allocation lists them in); env variables merge,
// the last sharing.strategy set wins. Errors name the config.
func (d *Driver) requestConfigs(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (map[string]requestConfig, error) {
	configs := claim.Status.Allocation.Devices.Config
	// Class configs first, then the claim's, keeping their order.
	order := make([]int, 0, len(configs))
	for i, c := range configs {
		if c.Source == resourceapi.AllocationConfigSourceClass {
			order = append(order, i)
		}
	}
	for i, c := range configs {
		if c.Source != resourceapi.AllocationConfigSourceClass {
			order = append(order, i)
		}
	}
	decoded := map[int]v1alpha1.DeviceConfig{}
	for _, i := range order {
		c := configs[i]
		if c.Opaque == nil || c.Opaque.Driver != d.name {
			continue
		}
		// The webhook words the same errors for kubectl apply.
		cfg, _, err := opaque.Decode(opaque.ParametersPath(allocationConfigs, i), c.Opaque.Driver, c.Opaque.Parameters.Raw)
		if err != nil {
			var oe *opaque.Error
			if errors.As(err, &oe) {
				oe.Source = "claim"
				if c.Source == resourceapi.AllocationConfigSourceClass {
					oe.Source = "DeviceClass"
				}
			}
			return nil, err
		}
		decoded[i] = cfg
	}
	out := map[string]requestConfig{}
	for _, r := range results {
		rc := requestConfig{env: map[string]string{}, strategy: v1alpha1.SharingShared}
		for _, i := range order {
			cfg, ok := decoded[i]
			if !ok || !appliesTo(configs[i].Requests, r.Request) {
				continue
			}
			for k, v := range cfg.EnvVars() {
				rc.env[k] = v
			}
			rc.strategy = cfg.SharingStrategy()
		}
		if len(rc.env) == 0 {
			rc.env = nil
		}
		out[r.Request] = rc
	}
	return out, nil
}

// appliesTo reports whether a config listing requests covers request
// (which may be "request/subrequest"): an empty list covers all.
func appliesTo(requests []string, request string) bool {
	if len(requests) == 0 {
		return true
	}
	parent, _, _ := strings.Cut(request, "/")
	for _, r := range requests {
		if r == request || r == parent {
			return true
		}
	}
	return false
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin. A claim this
// plugin does not know is not an error (kubelet may retry), but a CDI spec
// left for it is still removed.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	start := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.countPrepared()
	if err := d.reload(); err != nil {
		refs := make([]klog.ObjectRef, 0, len(claims))
		for _, c := range claims {
			refs = append(refs, klog.KRef(c.Namespace, c.Name))
		}
		d.callFailed(ctx, metrics.Unprepare, refs, start, err)
		return nil, err
	}
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		begin := time.Now()
		devices, err := d.unprepare(ctx, c)
		took := time.Since(begin)
		d.metrics.Observe(metrics.Unprepare, d.name, took, err)
		out[c.UID] = err
		if err != nil {
			logger.Error(err, "Unpreparing claim failed", "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID, "duration", took)
			continue
		}
		logger.V(2).Info("Unprepared claim", "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID, "devices", devices, "duration", took)
		// Also for a claim not prepared here: a status an earlier
		// instance wrote before it lost its state is cleared too.
		d.status.Unprepared(c.Namespace, c.Name, c.UID)
	}
	return out, nil
}

// unprepare unprepares one claim and returns the devices it had here
// (none if it was not prepared here).
func (d *Driver) unprepare(ctx context.Context, c kubeletplugin.NamespacedObject) ([]string, error) {
	if err := d.cdi.Delete(ctx, d.vendor, c.UID); err != nil {
		return nil, fmt.Errorf("claim %s (%s): removing CDI spec: %w", c.NamespacedName, c.UID, err)
	}
	prev, ok := d.prepared.Claims[c.UID]
	if !ok {
		klog.FromContext(ctx).V(4).Info("Unprepare of a claim that is not prepared here", "claim", c.NamespacedName, "claimUID", c.UID)
		return nil, nil
	}
	if err := d.destroyPartitions(ctx, prev); err != nil {
		// The claim stays in the checkpoint with its partitions, so
		// the kubelet's retry destroys them.
		return nil, fmt.Errorf("claim %s (%s): %w", c.NamespacedName, c.UID, err)
	}
	delete(d.prepared.Claims, c.UID)
	if err := d.store.Save(d.prepared); err != nil {
		d.prepared.Claims[c.UID] = withoutPartitions(prev) // they are destroyed: a retry must not destroy their reused ids
		return nil, fmt.Errorf("claim %s (%s): saving checkpoint: %w", c.NamespacedName, c.UID, err)
	}
	devices := make([]string, 0, len(prev.Devices))
	for _, dev := range prev.Devices {
		devices = append(devices, dev.Device)
	}
	return devices, nil
}

// destroyPartitions destroys the partitions made for a claim, whose CDI
// spec is gone; the caller then drops it from the checkpoint.
func (d *Driver) destroyPartitions(ctx context.Context, c checkpoint.Claim) error {
	if err := failpoint.Inject(failpoint.UnprepareAfterCDI); err != nil {
		return err
	}
	for _, dev := range c.Devices {
		if dev.Partition == nil {
			continue
		}
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
	}
	return failpoint.Inject(failpoint.UnprepareBeforeCheckpoint)
}

// PreparedClaims lists the UIDs of the prepared claims, sorted.
func (d *Driver) PreparedClaims() []types.UID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]types.UID, 0, len(d.prepared.Claims))
	for uid := range d.prepared.Claims {
		out = append(out, uid)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

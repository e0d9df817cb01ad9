package driver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// PrepareResourceClaims implements kubeletplugin.DRAPlugin. Each claim
// succeeds or fails on its own: a bad config in one claim does not stop
// the others of the same call.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return nil, err
	}
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := d.prepare(ctx, claim)
		if err != nil {
			err = fmt.Errorf("claim %s/%s (%s): %w", claim.Namespace, claim.Name, claim.UID, err)
			klog.FromContext(ctx).Error(err, "Preparing claim failed")
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return out, nil
}

func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	logger := klog.FromContext(ctx)
	if claim.Status.Allocation == nil {
		return nil, errors.New("not allocated")
	}
	results, err := d.ourResults(claim)
	if err != nil {
		return nil, err
	}
	envs, err := d.requestEnv(claim, results)
	if err != nil {
		return nil, err
	}

	held := d.holders(claim.UID)
	spec := cdi.Claim{UID: claim.UID, Namespace: claim.Namespace, Name: claim.Name, Vendor: d.vendor,
		SharedDeviceNodes: d.inv.SharedDeviceNodes[d.vendor]}
	for i, r := range results {
		chip, ok := d.chips[r.Device]
		if !ok {
			return nil, fmt.Errorf("status.allocation.devices.results[%d]: device %q is not a chip of %s on node %s", i, r.Device, d.name, d.node)
		}
		if other, ok := held[r.Device]; ok {
			if other == claim.UID {
				return nil, fmt.Errorf("status.allocation.devices.results[%d]: device %s is allocated twice in this claim", i, r.Device)
			}
			c := d.prepared.Claims[other]
			return nil, fmt.Errorf("device %s is already prepared for claim %s/%s (%s): refusing to give it to two claims", r.Device, c.Namespace, c.Name, other)
		}
		held[r.Device] = claim.UID
		spec.Devices = append(spec.Devices, cdi.Device{Name: r.Device, Chip: chip, Env: envs[r.Request]})
	}

	ids, err := d.cdi.Write(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("writing CDI spec: %w", err)
	}
	entry := checkpoint.Claim{Namespace: claim.Namespace, Name: claim.Name}
	var devices []kubeletplugin.Device
	for _, r := range results {
		entry.Devices = append(entry.Devices, checkpoint.Device{Request: r.Request, Pool: r.Pool, Device: r.Device, CDIDeviceIDs: ids[r.Device]})
		devices = append(devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: ids[r.Device]})
	}
	// Checkpoint before answering: once kubelet has the IDs, a restart
	// must still know the devices are taken.
	prev, had := d.prepared.Claims[claim.UID]
	d.prepared.Claims[claim.UID] = entry
	if err := d.store.Save(d.prepared); err != nil {
		if had {
			d.prepared.Claims[claim.UID] = prev
		} else {
			delete(d.prepared.Claims, claim.UID)
			if derr := d.cdi.Delete(ctx, d.vendor, claim.UID); derr != nil {
				logger.Error(derr, "Removing CDI spec after failed checkpoint", "claimUID", claim.UID)
			}
		}
		return nil, fmt.Errorf("saving checkpoint: %w", err)
	}
	logger.V(2).Info("Prepared claim", "claim", klog.KObj(claim), "claimUID", claim.UID, "devices", len(devices))
	return devices, nil
}

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

// requestEnv decodes the opaque configs for our driver that apply to each
// allocated request: class configs first, then claim configs, later ones
// win (the order the allocation lists them in). Errors name the config.
func (d *Driver) requestEnv(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) (map[string]map[string]string, error) {
	kind := v1alpha1.AscendConfigKind
	if d.vendor == inventory.VendorCambricon {
		kind = v1alpha1.CambriconConfigKind
	}
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
		cfg, err := v1alpha1.DecodeConfig(c.Opaque.Parameters.Raw, kind)
		if err != nil {
			from := "claim"
			if c.Source == resourceapi.AllocationConfigSourceClass {
				from = "DeviceClass"
			}
			return nil, fmt.Errorf("status.allocation.devices.config[%d].opaque.parameters (from the %s): %w", i, from, err)
		}
		decoded[i] = cfg
	}
	out := map[string]map[string]string{}
	for _, r := range results {
		env := map[string]string{}
		for _, i := range order {
			cfg, ok := decoded[i]
			if !ok || !appliesTo(configs[i].Requests, r.Request) {
				continue
			}
			for k, v := range cfg.EnvVars() {
				env[k] = v
			}
		}
		if len(env) > 0 {
			out[r.Request] = env
		}
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = nil
		if err := d.cdi.Delete(ctx, d.vendor, c.UID); err != nil {
			out[c.UID] = fmt.Errorf("claim %s (%s): removing CDI spec: %w", c.NamespacedName, c.UID, err)
			continue
		}
		prev, ok := d.prepared.Claims[c.UID]
		if !ok {
			logger.V(4).Info("Unprepare of a claim that is not prepared here", "claim", c.NamespacedName, "claimUID", c.UID)
			continue
		}
		delete(d.prepared.Claims, c.UID)
		if err := d.store.Save(d.prepared); err != nil {
			d.prepared.Claims[c.UID] = prev
			out[c.UID] = fmt.Errorf("claim %s (%s): saving checkpoint: %w", c.NamespacedName, c.UID, err)
			continue
		}
		logger.V(2).Info("Unprepared claim", "claim", c.NamespacedName, "claimUID", c.UID)
	}
	return out, nil
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

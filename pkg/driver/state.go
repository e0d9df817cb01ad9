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

// state.go is the prepared claims: the checkpoint, kept in memory in
// d.prepared and saved at every change, how it is read at start (and
// rebuilt from the CDI specs when corrupt), and what the claims hold, for
// prepare's checks.

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
)

// CheckpointFile is the checkpoint's name inside the driver's state directory.
const CheckpointFile = "checkpoint.json"

// reload re-reads the checkpoint, which another instance of the plugin
// (during a rolling update) may have changed since. A lone instance is
// the checkpoint's only writer and keeps it in memory. Callers hold d.mu.
func (d *Driver) reload() error {
	if !d.rolling {
		return nil
	}
	data, err := d.store.Load()
	if err != nil {
		return fmt.Errorf("reloading state of %s: %w", d.name, err)
	}
	d.prepared = data
	return nil
}

// loadState reads the checkpoint and removes CDI specs of claims that it
// does not list (left by a crash between writing the spec and the
// checkpoint: kubelet got no answer and will ask again). A corrupt
// checkpoint is set aside and the prepared claims are rebuilt from the CDI
// specs, so devices in use stay protected.
func (d *Driver) loadState(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	data, err := d.store.Load()
	var corrupt *checkpoint.CorruptError
	if errors.As(err, &corrupt) {
		aside, err := d.store.SetAside()
		if err != nil {
			return err
		}
		logger.Error(corrupt, "Checkpoint is corrupt; set it aside and rebuilding the prepared claims from the CDI specs", "setAside", aside)
		data, err = d.rebuildFromCDI(ctx)
		if err != nil {
			return fmt.Errorf("rebuilding state after corrupt checkpoint %s: %w", corrupt.Path, err)
		}
		// Until this succeeds the corrupt file stays (SetAside links it),
		// so a restart rebuilds again rather than forgetting the claims.
		if err := d.store.Save(data); err != nil {
			return fmt.Errorf("saving the checkpoint rebuilt from the CDI specs (the corrupt one stays for the next start): %w", err)
		}
		d.prepared = data
		return nil
	}
	if err != nil {
		return fmt.Errorf("loading state of %s: %w", d.name, err)
	}
	if data.ConvertedFrom != "" {
		logger.Info("Read a checkpoint of an older format; the next change of a claim saves it in the current one",
			"path", d.store.Path(), "format", data.ConvertedFrom, "current", checkpoint.Version)
	}
	d.prepared = data
	uids, err := d.cdi.ClaimUIDs(d.vendor)
	if err != nil {
		return fmt.Errorf("listing CDI specs of %s: %w", d.name, err)
	}
	for _, uid := range uids {
		if _, ok := data.Claims[uid]; ok {
			continue
		}
		logger.Info("Removing CDI spec of a claim the checkpoint does not list", "claimUID", uid)
		if err := d.cdi.Delete(ctx, d.vendor, uid); err != nil {
			return fmt.Errorf("removing stale CDI spec of claim %s: %w", uid, err)
		}
	}
	return nil
}

// rebuildFromCDI recovers the prepared claims from the CDI specs on disk,
// which the plugin writes before the checkpoint. Request names are not in
// the specs; they are only informational in the checkpoint.
func (d *Driver) rebuildFromCDI(ctx context.Context) (checkpoint.Data, error) {
	logger := klog.FromContext(ctx)
	data := checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{}}
	uids, err := d.cdi.ClaimUIDs(d.vendor)
	if err != nil {
		return data, err
	}
	for _, uid := range uids {
		sc, err := d.cdi.ReadClaim(d.vendor, uid)
		if err != nil {
			// Keep the file for the operator; kubelet re-prepares the claim
			// if a pod still needs it.
			logger.Error(err, "Cannot recover a claim from its CDI spec", "claimUID", uid)
			continue
		}
		c := checkpoint.Claim{Namespace: sc.Namespace, Name: sc.Name}
		devs := make([]string, 0, len(sc.Devices))
		for dev := range sc.Devices {
			devs = append(devs, dev)
		}
		sort.Strings(devs)
		for _, dev := range devs {
			entry := checkpoint.Device{Kind: checkpoint.KindChip, Pool: d.node, Device: dev, CDIDeviceIDs: sc.Devices[dev]}
			if err := decodeAnnotations(sc.Annotations[dev], &entry); err != nil {
				logger.Error(err, "Cannot recover the partition or share of a device from its CDI spec", "claimUID", uid, "device", dev)
			}
			c.Devices = append(c.Devices, entry)
		}
		data.Claims[uid] = c
		logger.Info("Recovered prepared claim from its CDI spec", "claim", klog.KRef(sc.Namespace, sc.Name), "claimUID", uid, "devices", devs)
	}
	return data, nil
}

// setClaim records claim uid as c in memory, or forgets it when c is
// nil, and returns what puts the earlier record back; d.store.Save makes
// it durable. Callers hold d.mu.
func (d *Driver) setClaim(uid types.UID, c *checkpoint.Claim) (restore func()) {
	prev, had := d.prepared.Claims[uid]
	if c == nil {
		delete(d.prepared.Claims, uid)
	} else {
		d.prepared.Claims[uid] = *c
	}
	return func() {
		if had {
			d.prepared.Claims[uid] = prev
		} else {
			delete(d.prepared.Claims, uid)
		}
	}
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
			if dev.Kind == checkpoint.KindAdmin {
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

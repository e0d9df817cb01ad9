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

// The kubelet's DRA health service (dra-health/v1, WatchHealthStatus):
// what the driver tells the kubelet about each device's health, and Update,
// through which the device monitor (pkg/devicemonitor) hands it re-read
// chips.

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
)

// healthResend is below the kubelet's default 30s health timeout, after
// which it would report the devices as unknown.
const healthResend = 20 * time.Second

// healthState is the health of every device the driver reports, as of
// the discovery or monitor poll at verified (zero: health is only what
// discovery found at start, not re-read since).
type healthState struct {
	devices  []deviceHealth
	verified time.Time
}

type deviceHealth struct {
	name    string
	healthy bool
	message string
}

// Update makes the driver serve inv's chips of its vendor from now on, as
// the device monitor (pkg/devicemonitor) re-read them at verified. It republishes the slices (the
// resourceslice controller writes nothing when they did not change), with
// the taints and healthy attribute of each chip's current health, and
// tells WatchHealthStatus streams at once when a device's health changed.
//
// A chip that is gone from inv is no longer published and cannot be
// prepared any more, but while claims prepared on it remain, the driver
// keeps it (reported Unhealthy to the kubelet) so that unpreparing them
// can still destroy their partitions. A chip that is present but
// unhealthy stays preparable: the scheduler allocated it knowing its
// taints (a claim may tolerate them), and NoExecute eviction is the
// control plane's job; refusing here would only break pods that chose to
// run on it.
func (d *Driver) Update(ctx context.Context, inv inventory.Inventory, verified time.Time) error {
	logger := klog.FromContext(ctx)
	inv = inv.Only(d.names.Vendor)
	chips := inv.Chips
	// Built before taking the lock, which a prepare waits for: building a
	// node's slices (with partitions, hundreds of devices) is most of an
	// update's work, and depends only on inv.
	resources := d.resources(inv)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return fmt.Errorf("updating the chips of %s: %w", d.name, err)
	}
	present := make(map[int]bool, len(chips))
	for _, c := range chips {
		present[c.Index] = true
	}
	var gone []inventory.Chip
	for _, c := range d.inv.Chips {
		if present[c.Index] {
			continue
		}
		if claims, _ := d.preparedOn(c); len(claims) > 0 {
			logger.Info("Chip is gone but claims are prepared on it: keeping it for unprepare, no longer publishing it",
				"device", d.names.ChipDevice(c.Index), "claims", claims)
			gone = append(gone, c)
		}
	}
	all := append(append([]inventory.Chip{}, chips...), gone...)
	sort.Slice(all, func(i, j int) bool { return all[i].Index < all[j].Index })
	d.inv = inventory.Inventory{Chips: all, SharedDeviceNodes: inv.SharedDeviceNodes}
	d.index(chips)
	d.setHealth(chips, gone, verified)
	if err := d.helper.PublishResources(ctx, resources); err != nil {
		return fmt.Errorf("publishing ResourceSlices of %s: %w", d.name, err)
	}
	return nil
}

// preparedOn lists, sorted, the prepared claims that use chip c (the
// chip, a partition or a share of it) and the devices of c they hold.
// Callers hold d.mu.
func (d *Driver) preparedOn(c inventory.Chip) (claims, devices []string) {
	held := map[string]bool{}
	for uid, claim := range d.prepared.Claims {
		uses := false
		for _, dev := range claim.Devices {
			if onChip(d.names.ChipDevice(c.Index), c, dev.Device, dev.Partition) {
				held[dev.Device], uses = true, true
			}
		}
		if uses {
			claims = append(claims, d.claimRef(uid))
		}
	}
	for name := range held {
		devices = append(devices, name)
	}
	sort.Strings(claims)
	sort.Strings(devices)
	return claims, devices
}

// onChip reports whether a prepared device is chip c, named name, or a
// partition of it.
func onChip(name string, c inventory.Chip, device string, p *checkpoint.Partition) bool {
	return device == name || strings.HasPrefix(device, name+"-") || (p != nil && p.Chip == c.Index)
}

// setHealth stores the health of the devices of chips (and their partition
// slots, which d.index made) and of gone chips, and wakes the health
// streams if any device's health changed. Callers hold d.mu.
func (d *Driver) setHealth(chips, gone []inventory.Chip, verified time.Time) {
	st := &healthState{verified: verified}
	for _, c := range chips {
		st.devices = append(st.devices, deviceHealth{name: d.names.ChipDevice(c.Index), healthy: c.Healthy, message: healthMessage(c)})
	}
	// The devices of a gone chip that pods still hold.
	for _, c := range gone {
		_, devices := d.preparedOn(c)
		for _, name := range devices {
			st.devices = append(st.devices, deviceHealth{name: name,
				message: fmt.Sprintf("ChipGone: chip %s is no longer on the node (its vendor tool does not list it)", d.names.ChipDevice(c.Index))})
		}
	}
	// A partition is as healthy as its chip.
	slots := make([]string, 0, len(d.slots))
	for name := range d.slots {
		slots = append(slots, name)
	}
	sort.Strings(slots)
	for _, name := range slots {
		c := d.slots[name].chip
		h := deviceHealth{name: name, healthy: c.Healthy}
		if !c.Healthy {
			h.message = fmt.Sprintf("chip %s: %s", d.names.ChipDevice(c.Index), healthMessage(c))
		}
		st.devices = append(st.devices, h)
	}
	old := d.health.Swap(st)
	if old != nil && reflect.DeepEqual(old.devices, st.devices) {
		return
	}
	d.healthMu.Lock()
	close(d.healthWake)
	d.healthWake = make(chan struct{})
	d.healthMu.Unlock()
}

// healthMessage says why a chip is unhealthy: its reason (the taint's
// value) and discovery's words.
func healthMessage(c inventory.Chip) string {
	switch {
	case c.Healthy:
		return ""
	case c.HealthMessage == "":
		return resourceslices.TaintValue(c) + ": discovery reported the chip unhealthy"
	}
	return resourceslices.TaintValue(c) + ": " + c.HealthMessage
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin. It sends the
// devices' health at once, again whenever Update changes it, and at
// least every healthResend (below the kubelet's timeout) in between.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	every := healthResend
	if t := d.healthTimeout; t > 0 && t*2/3 < every {
		every = t * 2 / 3
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		// Take the wake channel before the report, so a change in between
		// is sent next, not missed.
		d.healthMu.Lock()
		wake := d.healthWake
		d.healthMu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case reports <- d.healthReport():
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-wake:
		}
	}
}

// healthReport is the health of every device the driver serves. It takes
// no lock that a prepare holds, so it never waits for one (a metrics
// scrape calls it too) and is safe to call concurrently.
//
// LastUpdated is when a monitor poll last verified the devices; a device
// not verified within the health check timeout (the monitor cannot read
// the chips) is reported Unknown rather than vouched for. Without a
// monitor, the start-up state is vouched for at each report.
func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	st := d.health.Load()
	if st == nil {
		return kubeletplugin.DeviceHealthReport{}
	}
	now := time.Now()
	updated, stale := now, false
	if d.healthTimeout > 0 && !st.verified.IsZero() {
		updated, stale = st.verified, now.Sub(st.verified) > d.healthTimeout
	}
	report := kubeletplugin.DeviceHealthReport{Devices: make([]kubeletplugin.DeviceHealth, 0, len(st.devices))}
	for _, dh := range st.devices {
		h := kubeletplugin.DeviceHealth{PoolName: d.node, DeviceName: dh.name, Health: kubeletplugin.HealthStatusHealthy,
			LastUpdated: updated, HealthCheckTimeout: d.healthTimeout, Message: dh.message}
		switch {
		case stale:
			h.Health = kubeletplugin.HealthStatusUnknown
			h.Message = fmt.Sprintf("not verified since %s: the device monitor cannot re-read the chips (see the node agent's log)", st.verified.UTC().Format(time.RFC3339))
		case !dh.healthy:
			h.Health = kubeletplugin.HealthStatusUnhealthy
		}
		report.Devices = append(report.Devices, h)
	}
	return report
}

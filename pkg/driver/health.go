package driver

import (
	"context"
	"sort"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
)

// healthResend is below the kubelet's default 30s health timeout, after
// which it would report the devices as unknown.
const healthResend = 20 * time.Second

// WatchHealthStatus implements kubeletplugin.DRAPlugin. It reports the
// health discovery found and repeats it before the kubelet's timeout; a
// health monitor that re-reads the chips comes later.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	ticker := time.NewTicker(healthResend)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case reports <- d.healthReport():
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	now := time.Now()
	report := kubeletplugin.DeviceHealthReport{}
	health := func(name string, c inventory.Chip) kubeletplugin.DeviceHealth {
		h := kubeletplugin.DeviceHealth{PoolName: d.node, DeviceName: name, Health: kubeletplugin.HealthStatusHealthy, LastUpdated: now}
		if !c.Healthy {
			h.Health = kubeletplugin.HealthStatusUnhealthy
			h.Message = "discovery reported the chip unhealthy"
		}
		return h
	}
	for _, c := range d.inv.Chips {
		report.Devices = append(report.Devices, health(resourceslices.DeviceName(c), c))
	}
	// A partition is as healthy as its chip.
	slots := make([]string, 0, len(d.slots))
	for name := range d.slots {
		slots = append(slots, name)
	}
	sort.Strings(slots)
	for _, name := range slots {
		report.Devices = append(report.Devices, health(name, d.slots[name].chip))
	}
	return report
}

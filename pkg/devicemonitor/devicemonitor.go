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

// Package devicemonitor re-discovers the chips of a node while the agent
// runs, for health changes and hot plug: every interval it re-runs
// discovery per vendor, with the same options and command runners as at
// start (so npu-smi's and cnmon's health fields, the device files and the
// PCI functions are read by the same code), and hands each vendor's chips
// to its driver, which republishes its slices (taints on unhealthy chips,
// added and removed chips) and tells the kubelet.
//
// A poll that fails (the tool fails, times out or prints garbage) changes
// nothing: the last known state stays published, so one bad read does not
// taint or drop every chip; the driver reports the devices Unknown to the
// kubelet once no poll has verified them within its health check timeout.
package devicemonitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// DefaultInterval is the default of --health-interval.
const DefaultInterval = 10 * time.Second

// Target serves one vendor's chips; *driver.Driver is one.
type Target interface {
	Vendor() inventory.Vendor
	// Update serves inv's chips of the target's vendor, as read at verified.
	Update(ctx context.Context, inv inventory.Inventory, verified time.Time) error
}

// Config configures a Monitor.
type Config struct {
	// Discovery is what the agent discovered the chips with.
	Discovery source.Options
	// Interval between polls; zero or less disables the monitor.
	Interval time.Duration
	// Initial is the inventory discovered at start, what the targets serve.
	Initial inventory.Inventory
	Targets []Target
}

// Monitor polls the chips of each target's vendor.
type Monitor struct {
	cfg     Config
	vendors []vendorState
}

type vendorState struct {
	target Target
	// last is the last inventory read successfully, failures counts the
	// polls that failed since.
	last     inventory.Inventory
	failures int
}

// New returns a monitor for cfg.
func New(cfg Config) (*Monitor, error) {
	m := &Monitor{cfg: cfg}
	for _, t := range cfg.Targets {
		if _, err := source.VendorOption(cfg.Discovery.Registry, t.Vendor()); err != nil {
			return nil, fmt.Errorf("device monitor: %w", err)
		}
		m.vendors = append(m.vendors, vendorState{target: t, last: cfg.Initial.Only(t.Vendor())})
	}
	return m, nil
}

// CheckTimeout is how long a health report is good for when polling every
// interval: three polls, so that one or two failed polls do not make the
// kubelet report the devices Unknown, and never below the kubelet's
// default of 30s.
func CheckTimeout(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return max(3*interval, 30*time.Second)
}

// Run polls every interval until ctx is done. It returns at once if the
// monitor is disabled.
func (m *Monitor) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if m.cfg.Interval <= 0 {
		logger.Info("Device monitor disabled: chips and their health are what discovery found at start")
		return
	}
	logger.Info("Device monitor started: re-discovering the chips every interval", "interval", m.cfg.Interval, "vendors", len(m.vendors))
	ticker := time.NewTicker(m.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			_ = m.Poll(ctx)
		}
	}
}

// Poll re-reads every vendor's chips once and updates its target. It
// returns the errors of the vendors whose poll failed (they keep their
// last known state); the others are updated regardless.
func (m *Monitor) Poll(ctx context.Context) error {
	var errs []error
	for i := range m.vendors {
		if err := m.poll(ctx, &m.vendors[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Monitor) poll(ctx context.Context, vs *vendorState) error {
	v := vs.target.Vendor()
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "vendor", v)
	ctx = klog.NewContext(ctx, logger)
	// A tool that hangs must not stall the monitor forever; by then the
	// driver reports the devices Unknown anyway.
	timeout := CheckTimeout(m.cfg.Interval)
	if timeout == 0 {
		timeout = CheckTimeout(DefaultInterval)
	}
	pollCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := m.cfg.Discovery
	flag, _ := source.VendorOption(opts.Registry, v) // checked in New
	opts.Vendors = []string{flag}
	inv, err := source.Discover(pollCtx, opts)
	if err != nil {
		vs.failures++
		logger.Error(err, "Cannot re-read the chips: keeping their last known health and slices", "failedPolls", vs.failures)
		return fmt.Errorf("polling %s chips: %w", v, err)
	}
	if vs.failures > 0 {
		logger.Info("Chips readable again", "failedPolls", vs.failures)
		vs.failures = 0
	}
	inv = keepFacts(vs.last, inv)
	logChanges(logger, opts.Registry, vs.last, inv)
	if err := vs.target.Update(ctx, inv, time.Now()); err != nil {
		logger.Error(err, "Cannot serve the re-read chips")
		return fmt.Errorf("updating %s chips: %w", v, err)
	}
	vs.last = inv
	return nil
}

// keepFacts carries the PCI facts (NUMA node, PCIe root) of a chip whose
// PCI function disappeared over from the last poll: sysfs no longer has
// them, and the chip's attributes should not change while it is only
// tainted.
func keepFacts(last, now inventory.Inventory) inventory.Inventory {
	before := map[int]inventory.Chip{}
	for _, c := range last.Chips {
		before[c.Index] = c
	}
	out := inventory.Inventory{SharedDeviceNodes: now.SharedDeviceNodes}
	for _, c := range now.Chips {
		if old, ok := before[c.Index]; ok && c.HealthReason == inventory.ReasonPCIDeviceMissing && old.UUID == c.UUID {
			c.NUMANode, c.PCIeRoot = old.NUMANode, old.PCIeRoot
		}
		out.Chips = append(out.Chips, c)
	}
	return out
}

// logChanges logs every chip that appeared, disappeared, became unhealthy
// or recovered since the last poll: what an operator looks for first.
func logChanges(logger klog.Logger, reg vendors.Registry, last, now inventory.Inventory) {
	before := map[int]inventory.Chip{}
	for _, c := range last.Chips {
		before[c.Index] = c
	}
	for _, c := range now.Chips {
		name := reg.ChipDeviceName(c)
		old, ok := before[c.Index]
		delete(before, c.Index)
		switch {
		case !ok:
			logger.Info("Chip added", "device", name, "model", c.Model, "uuid", c.UUID, "healthy", c.Healthy)
		case old.Healthy && !c.Healthy:
			logger.Info("Chip became unhealthy", "device", name, "reason", c.HealthReason, "message", c.HealthMessage)
		case !old.Healthy && c.Healthy:
			logger.Info("Chip recovered", "device", name, "previousReason", old.HealthReason)
		case !c.Healthy && old.HealthReason != c.HealthReason:
			logger.Info("Chip still unhealthy, for another reason", "device", name, "reason", c.HealthReason, "previousReason", old.HealthReason)
		}
	}
	for _, c := range before {
		logger.Info("Chip removed", "device", reg.ChipDeviceName(c), "model", c.Model, "uuid", c.UUID)
	}
}

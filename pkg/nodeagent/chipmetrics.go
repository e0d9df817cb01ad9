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

package nodeagent

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/chipmetrics"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// startChipMetrics reads the chips' telemetry in a goroutine of its own
// into m's registry until ctx ends: through each vendor's library on a
// real node, simulated on a profile node.
func startChipMetrics(ctx context.Context, o Options, inv inventory.Inventory, drivers []*driver.Driver, m *metrics.Metrics) error {
	cfg := chipmetrics.Config{Node: o.Discovery.NodeName, Interval: o.Metrics.ChipInterval}
	for _, d := range drivers {
		v, ok := o.Discovery.Registry.Lookup(d.Vendor())
		if !ok {
			continue
		}
		cfg.Drivers = append(cfg.Drivers, chipmetrics.Driver{Name: d.Name(), Pool: o.Discovery.NodeName, Names: v.Names(),
			Telemetry: telemetry(o, v), Chips: inv.ChipsOf(v.Names().Vendor), Prepared: d.PreparedSnapshot})
	}
	if o.Metrics.PodResourcesSocket != "" {
		pr, err := chipmetrics.NewKubeletPodResources(o.Metrics.PodResourcesSocket)
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			_ = pr.Close()
		}()
		cfg.PodResources = pr
	}
	c := chipmetrics.New(cfg)
	if err := c.Register(m.Registry()); err != nil {
		return fmt.Errorf("starting the chip metrics: %w", err)
	}
	klog.FromContext(ctx).Info("Reading chip telemetry", "interval", cfg.Interval, "podResources", o.Metrics.PodResourcesSocket)
	go c.Run(ctx)
	return nil
}

// telemetry is vendor v's chip telemetry on this node.
func telemetry(o Options, v vendors.Vendor) vendors.Telemetry {
	if o.Discovery.Profile != "" {
		return vendors.SimulatedTelemetry{Node: o.Discovery.NodeName}
	}
	if o.Discovery.ToolOutput != "" {
		// Recorded tool output is a snapshot: nothing to read over time.
		return nil
	}
	return v.NewTelemetry(o.Discovery.BackendConfig(v, rootOf(o),
		discovery.ExecRunner{Tools: o.Discovery.ToolPaths(), Timeout: o.Discovery.ToolTimeout},
		o.Discovery.Libraries[v.Names().Option]))
}

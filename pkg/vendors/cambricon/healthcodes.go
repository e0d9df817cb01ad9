package cambricon

import (
	"context"
	"strings"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// The words of cnmon info's "Health State" section (info.go) for a card
// that works; any other word is a fault. Cambricon's device plugin reads
// the same state through libcndev.
const (
	// HealthGood is the Device entry of a healthy card.
	HealthGood = "Good"
	// DriverRunning is the Driver entry of a card whose driver runs.
	DriverRunning = "Running"
)

// fault is one reason a card is unhealthy.
type fault struct{ reason, message string }

// healthFaults judges the Health State cnmon printed for card c; a card
// without the section (CNMON v4) has none.
func healthFaults(ctx context.Context, c CardInfo) []fault {
	logger := klog.FromContext(ctx)
	var faults []fault
	if c.DeviceHealth != "" && !strings.EqualFold(c.DeviceHealth, HealthGood) {
		logger.Info("The cnmon tool reports an unhealthy MLU card", "card", c.Card, "health", c.DeviceHealth)
		faults = append(faults, fault{inventory.ReasonToolHealth(c.DeviceHealth), "cnmon reports device health " + c.DeviceHealth})
	}
	if c.DriverState != "" && !strings.EqualFold(c.DriverState, DriverRunning) {
		logger.Info("The cnmon tool reports the MLU driver not running for a card", "card", c.Card, "driver", c.DriverState)
		faults = append(faults, fault{inventory.ReasonDriverNotRunning, "cnmon reports the driver " + c.DriverState})
	}
	return faults
}

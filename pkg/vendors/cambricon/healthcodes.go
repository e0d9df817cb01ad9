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
	// HealthInProblem is a card whose device state is
	// CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM, "The device failure" (cndev.h).
	HealthInProblem = "In problem"
	// HealthWarning and HealthFail are the overall grades
	// CNDEV_HEALTH_RESULT_WARN ("A warning has been issued") and _FAIL
	// ("A failure has been issued") of cndevGetCardHealthStateV2 on a
	// card whose device state is good (mlu-exporter@934abae
	// pkg/cndev/include/cndev.h lines 660-665). A warning becomes
	// inventory.ReasonHealthWarning: shown, not blocking.
	HealthWarning = "Warning"
	HealthFail    = "Fail"
)

// fault is one reason a card is unhealthy.
type fault struct{ reason, message string }

// healthFaults judges the health state that who (cnmon, or
// libcndev's cndevGetCardHealthState, whose states map to the same words)
// reported for card c; a card without one (CNMON v4) has none.
func healthFaults(ctx context.Context, c CardInfo, who string) []fault {
	logger := klog.FromContext(ctx)
	var faults []fault
	if c.DeviceHealth != "" && !strings.EqualFold(c.DeviceHealth, HealthGood) {
		logger.Info("An MLU card is reported unhealthy", "by", who, "card", c.Card, "health", c.DeviceHealth)
		message := who + " reports device health " + c.DeviceHealth
		if c.HealthDetail != "" {
			message += ": " + c.HealthDetail
		}
		faults = append(faults, fault{inventory.ReasonToolHealth(c.DeviceHealth), message})
	}
	if c.DriverState != "" && !strings.EqualFold(c.DriverState, DriverRunning) {
		logger.Info("The MLU driver is reported not running for a card", "by", who, "card", c.Card, "driver", c.DriverState)
		faults = append(faults, fault{inventory.ReasonDriverNotRunning, who + " reports the driver " + c.DriverState})
	}
	return faults
}

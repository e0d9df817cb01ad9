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

package resourceslices

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
)

// TaintValueUnknown is the taint value of an unhealthy chip without a
// reason that is a valid label value.
const TaintValueUnknown = "Unhealthy"

// ParseTaintEffect reads the --unhealthy-taint-effect value: NoSchedule
// (the default, also for "") keeps new claims off an unhealthy chip;
// NoExecute also lets Kubernetes evict the pods already using it, unless
// they tolerate the taint.
func ParseTaintEffect(s string) (resourceapi.DeviceTaintEffect, error) {
	switch resourceapi.DeviceTaintEffect(s) {
	case "", resourceapi.DeviceTaintEffectNoSchedule:
		return resourceapi.DeviceTaintEffectNoSchedule, nil
	case resourceapi.DeviceTaintEffectNoExecute:
		return resourceapi.DeviceTaintEffectNoExecute, nil
	}
	return "", fmt.Errorf("unhealthy taint effect %q is not one of %s, %s", s,
		resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute)
}

// Taints are the device taints of a chip and its partition devices: none
// on a healthy chip; on an unhealthy one a taint per cause (TaintKey), in
// the order discovery found them, with the reason (inventory.Reason*,
// e.g. HealthAlarm, DeviceFileMissing) as value. The effect is None for a
// warning-level reason (inventory.Warning: shown, but claims still get
// the chip, as NVIDIA's DRA driver does for non-critical events) and the
// given effect (NoSchedule when empty) for the others. Where two reasons
// share a key, the first one's taint stays. The apiserver fills in
// TimeAdded; the resourceslice controller keeps it on later writes.
func Taints(c inventory.Chip, effect resourceapi.DeviceTaintEffect) []resourceapi.DeviceTaint {
	if c.Healthy {
		return nil
	}
	if effect == "" {
		effect = resourceapi.DeviceTaintEffectNoSchedule
	}
	var out []resourceapi.DeviceTaint
	seen := map[string]bool{}
	for _, reason := range c.Reasons() {
		key := TaintKey(reason)
		if seen[key] {
			continue
		}
		seen[key] = true
		t := resourceapi.DeviceTaint{Key: key, Value: reasonValue(reason), Effect: effect}
		if inventory.Warning(reason) {
			t.Effect = resourceapi.DeviceTaintEffectNone
		}
		out = append(out, t)
	}
	return out
}

// TaintKey is the device taint key of a health reason, one per cause
// (pkg/names): the vendor's health level (inventory.ReasonToolHealth's
// Health…), the driver not running, the device file or PCI function gone,
// a failed library call, the super pod's fabric calling the chip abnormal;
// TaintUnhealthy for any other reason.
func TaintKey(reason string) string {
	switch {
	case strings.HasPrefix(reason, "Health"):
		return names.TaintHealth
	case reason == inventory.ReasonDriverNotRunning:
		return names.TaintDriverNotRunning
	case reason == inventory.ReasonDeviceFileMissing:
		return names.TaintDeviceFileMissing
	case reason == inventory.ReasonPCIDeviceMissing:
		return names.TaintPCIDeviceMissing
	case reason == inventory.ReasonLibraryError:
		return names.TaintLibraryError
	case reason == inventory.ReasonSuperPodLinkAbnormal:
		return names.TaintSuperPodLink
	}
	return names.TaintUnhealthy
}

// TaintValue is the value of c's first taint: its health reason when that
// is a valid label value (the API requires one), else TaintValueUnknown.
func TaintValue(c inventory.Chip) string { return reasonValue(c.HealthReason) }

func reasonValue(reason string) string {
	if reason == "" || len(validation.IsValidLabelValue(reason)) > 0 {
		return TaintValueUnknown
	}
	return reason
}

// setHealth puts the chip's health on each of its devices (the chip and
// its partitions): the healthy attribute and the taints for opts.
func setHealth(devices []resourceapi.Device, c inventory.Chip, opts Options) {
	taints := Taints(c, opts.UnhealthyTaintEffect)
	for i := range devices {
		devices[i].Attributes[names.AttrHealthy] = resourceapi.DeviceAttribute{BoolValue: ptr.To(c.Healthy)}
		devices[i].Taints = taints
	}
}

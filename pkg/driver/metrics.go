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

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/metrics"
)

var _ metrics.Source = (*Driver)(nil)

// driverMetrics are where a driver records its operations, and what a
// scrape reads of its state without taking d.mu: a prepare stuck on a
// hanging vendor tool holds d.mu, and /metrics must still answer then.
type driverMetrics struct {
	*metrics.Metrics
	// preparedClaims is len(d.prepared.Claims) as of the end of the last
	// Prepare or Unprepare call (or the start).
	preparedClaims atomic.Int64
	// prepared is a copy of d.prepared.Claims as of the same moment, for
	// the chip metrics' holder labels (PreparedSnapshot).
	prepared atomic.Pointer[map[types.UID]checkpoint.Claim]
}

// trackMetrics makes the driver's state scraped from now on.
func (d *Driver) trackMetrics() {
	d.countPrepared()
	d.metrics.Track(d)
}

// countPrepared publishes the number of prepared claims to scrapes.
// Callers hold d.mu (or own d, before it serves).
func (d *Driver) countPrepared() {
	d.metrics.preparedClaims.Store(int64(len(d.prepared.Claims)))
	claims := make(map[types.UID]checkpoint.Claim, len(d.prepared.Claims))
	for uid, c := range d.prepared.Claims {
		claims[uid] = c
	}
	d.metrics.prepared.Store(&claims)
}

// PreparedSnapshot is the claims in the checkpoint as of the end of the
// last Prepare or Unprepare call (or the start), without waiting for a
// running one. The caller must not change them.
func (d *Driver) PreparedSnapshot() map[types.UID]checkpoint.Claim {
	if p := d.metrics.prepared.Load(); p != nil {
		return *p
	}
	return nil
}

// PreparedClaimCount is the number of claims in the checkpoint, as of the
// end of the last Prepare or Unprepare call; it does not wait for a
// running one.
func (d *Driver) PreparedClaimCount() int {
	return int(d.metrics.preparedClaims.Load())
}

// DevicesByHealth counts the published devices by the health the driver
// reports to the kubelet (keys metrics.HealthHealthy, …).
func (d *Driver) DevicesByHealth() map[string]int {
	out := map[string]int{}
	for _, dev := range d.healthReport().Devices {
		switch dev.Health {
		case kubeletplugin.HealthStatusHealthy:
			out[metrics.HealthHealthy]++
		case kubeletplugin.HealthStatusUnhealthy:
			out[metrics.HealthUnhealthy]++
		default:
			out[metrics.HealthUnknown]++
		}
	}
	return out
}

// Messages with which the resourceslice controller (k8s.io/
// dynamic-resource-allocation v0.37) reports through the kubeletplugin
// helper to HandleError that it could not publish the slices; the helper
// passes them on unchanged. Its other errors (stale health reports, gRPC
// servers failing) are not about publishing.
const (
	// syncPool failed on an API call; the pool is retried rate-limited.
	msgSliceSyncFailed = "processing ResourceSlice objects"
	// The desired slices did not validate.
	msgSliceValidationFailed = "pool validation failed"
	// More pools than ReconcilePoolWithName allows.
	msgSlicePoolsRejected = "processing update DriverResources"
)

// publishErrorReason says whether an error given to HandleError is a
// failure to publish ResourceSlices, and why.
func publishErrorReason(err error, msg string) (string, bool) {
	var dropped *resourceslice.DroppedFieldsError
	switch {
	case errors.As(err, &dropped):
		return metrics.PublishReasonDroppedFields, true
	case msg == msgSliceSyncFailed:
		return metrics.PublishReasonAPI, true
	case msg == msgSliceValidationFailed, msg == msgSlicePoolsRejected:
		return metrics.PublishReasonInvalid, true
	}
	return "", false
}

// countPublishError counts err if it is a failure to publish slices.
func (d *Driver) countPublishError(err error, msg string) {
	if reason, ok := publishErrorReason(err, msg); ok {
		d.metrics.PublishError(d.name, reason)
	}
}

// callFailed accounts for a Prepare or Unprepare call that failed before
// it got to its claims: each of them failed, after the call's time.
func (d *Driver) callFailed(ctx context.Context, op metrics.Operation, claims []klog.ObjectRef, start time.Time, err error) {
	took := time.Since(start)
	for range claims {
		d.metrics.Observe(op, d.name, took, err)
	}
	msg := "Preparing claims failed"
	if op == metrics.Unprepare {
		msg = "Unpreparing claims failed"
	}
	klog.FromContext(ctx).Error(err, msg, "claims", claims, "duration", took)
}

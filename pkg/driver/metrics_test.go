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
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/accel-dra/accel-dra/pkg/metrics"
)

// recoverable wraps err as the kubeletplugin helper does before it calls
// HandleError with the resourceslice controller's errors.
func recoverable(err error) error { return fmt.Errorf("%w: %w", kubeletplugin.ErrRecoverable, err) }

func TestOnlySlicePublishingErrorsAreCountedAsSuch(t *testing.T) {
	apiErr := errors.New(`create resource slice: resourceslices.resource.k8s.io is forbidden`)
	tests := []struct {
		name       string
		err        error
		msg        string
		wantReason string
	}{
		{"an API call of the slice sync failed", recoverable(apiErr), "processing ResourceSlice objects", metrics.PublishReasonAPI},
		{"the slices did not validate", recoverable(errors.New("pool node-0: slice 0: too many devices")), "pool validation failed", metrics.PublishReasonInvalid},
		{"more pools than the controller reconciles", recoverable(errors.New(`ReconcilePoolWithName="node-0", but found 2 pools`)), "processing update DriverResources", metrics.PublishReasonInvalid},
		{"the API server dropped fields of a created slice", recoverable(&resourceslice.DroppedFieldsError{PoolName: "node-0"}), "create ResourceSlice", metrics.PublishReasonDroppedFields},
		{"the API server dropped fields of an updated slice", recoverable(&resourceslice.DroppedFieldsError{PoolName: "node-0"}), "update ResourceSlice", metrics.PublishReasonDroppedFields},
		{"stale health reports are no publishing error", recoverable(errors.New("no device health report was sent for 40s")), "device health reports are stale, WatchHealthStatus must re-send within each device's HealthCheckTimeout", ""},
		{"a failing gRPC server is no publishing error", errors.New("listen unix: address in use"), "DRA gRPC server failed", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := publishErrorReason(tc.err, tc.msg)
			require.Equal(t, tc.wantReason != "", ok)
			require.Equal(t, tc.wantReason, reason)
		})
	}
}

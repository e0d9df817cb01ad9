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

package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// The webhook judges a third vendor's configs once the vendor is
// registered as a line in pkg/vendors/all registers it: its driver and
// config kind come from the registry main builds the decoder from, and
// nothing else changes. A driver that takes no config has any config
// denied at apply, with the words the node agent would fail the prepare
// with.
func TestAThirdVendorsConfigsAreJudgedByItsOwnKind(t *testing.T) {
	const invalid = `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: `
	tests := []struct {
		name    string
		vendor  vendors.Vendor
		object  string
		message string // of the denial; "": allowed
	}{
		{name: "its own kind is allowed", vendor: vendortest.Acme{},
			object: claim("resource.k8s.io/v1", cfg(vendortest.Driver, "[npus]", vendortest.ConfigKind, "env:\n  MODEL: qwen"))},
		{name: "a misspelt field of its kind is denied", vendor: vendortest.Acme{},
			object:  claim("resource.k8s.io/v1", cfg(vendortest.Driver, "", vendortest.ConfigKind, "envs: {}")),
			message: invalid + `decoding: strict decoding error: unknown field "envs" (want apiVersion accel-dra.dev/v1alpha1, kind AcmeConfig)`},
		{name: "another vendor's kind is denied", vendor: vendortest.Acme{},
			object:  claim("resource.k8s.io/v1", cfg(vendortest.Driver, "", "AscendConfig", "")),
			message: invalid + "kind AscendConfig is not for this driver: want AcmeConfig"},
		{name: "the real vendors' configs are judged as before", vendor: vendortest.Acme{},
			object: claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", envHCCL))},
		{name: "a driver without a config kind has a config denied, naming the driver and the kind", vendor: vendortest.NoConfig{},
			object:  claim("resource.k8s.io/v1", cfg(vendortest.Driver, "", vendortest.ConfigKind, "")),
			message: invalid + "driver acme.accel-dra.dev takes no opaque config, got kind AcmeConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			configs := mustConfigDecoder(vendors.MustRegistry(append(all.Vendors(), tt.vendor)...))
			resp := webhook.Review(ctx, configs, admissionRequest(t, admissionv1.Create, tt.object, ""))
			if tt.message == "" {
				require.True(t, resp.Allowed, "denied: %v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			require.Equal(t, tt.message, resp.Result.Message)
		})
	}
}

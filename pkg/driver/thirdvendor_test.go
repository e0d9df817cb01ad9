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
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// acmeDriver is a Driver of the test vendor v (vendortest.Acme or
// NoConfig) on a node of two ACME chips, registered beside the real
// vendors as a line in pkg/vendors/all would register it, its config
// decoder built from that registry as the node agent builds it. No
// kubelet, no API server: the test calls PrepareResourceClaims as the
// kubelet would. It returns the driver and its CDI spec directory.
func acmeDriver(t *testing.T, v vendors.Vendor) (*Driver, string) {
	t.Helper()
	reg := vendors.MustRegistry(append(all.Vendors(), v)...)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	for _, f := range []string{"acme0", "acme1", "acme_ctl"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "dev", f), nil, 0o644))
	}
	inv, err := v.NewBackend(vendors.BackendConfig{Root: root}).Discover(context.Background())
	require.NoError(t, err)
	require.Len(t, inv.Chips, 2)
	configs, err := reg.ConfigDecoder()
	require.NoError(t, err)
	cdiDir := filepath.Join(t.TempDir(), "cdi")
	writer, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: reg, SpecDir: cdiDir, HostRoot: root})
	require.NoError(t, err)
	names := v.Names()
	d := &Driver{name: names.Driver, vendor: v, names: names, node: "node-0", inv: inv, policy: partitions.Policy{NoPartitions: true},
		cdi: writer, configs: configs, store: checkpoint.New(t.TempDir(), CheckpointFile),
		status: claimstatus.New(fake.NewClientset(), names.Driver), prepared: checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{}}}
	d.index(inv.Chips)
	return d, cdiDir
}

// acmeClaim is a claim for chip xpu-1 of the ACME node with configs.
func acmeClaim(configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "xpus", UID: "uid-xpus"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "xpus", Driver: vendortest.Driver, Pool: "node-0", Device: "xpu-1"}},
			Config:  configs,
		}}},
	}
}

func opaqueConfig(source resourceapi.AllocationConfigSource, driver, parameters string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: source, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(parameters)}}}}
}

// TestAThirdVendorsClaimIsPreparedWithItsOwnConfigKind is the recipe of
// docs/architecture.md ("How to add a vendor") for the config: the test
// vendor, registered as pkg/vendors/all registers a vendor, has its own
// config kind decoded for its driver when a claim is prepared, with the
// errors of the real vendors' kinds; a vendor whose driver takes no config
// refuses one with an error naming the claim, the driver and the kind,
// where the agent once dereferenced a nil config.
func TestAThirdVendorsClaimIsPreparedWithItsOwnConfigKind(t *testing.T) {
	const (
		claimErr    = "claim default/xpus (uid-xpus): status.allocation.devices.config[0].opaque.parameters"
		acmeEnv     = `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AcmeConfig","env":{"MODEL":"qwen"}}`
		claimSrc    = resourceapi.AllocationConfigSourceClaim
		classSrc    = resourceapi.AllocationConfigSourceClass
		otherDriver = "gpu.example.com"
	)
	tests := []struct {
		name    string
		vendor  vendors.Vendor
		configs []resourceapi.DeviceAllocationConfiguration
		want    string // the prepare error; "" prepares
		env     string // a variable the claim's CDI spec sets
	}{
		{name: "its own kind is decoded and its env reaches the container", vendor: vendortest.Acme{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(claimSrc, vendortest.Driver, acmeEnv)}, env: "MODEL=qwen"},
		{name: "another vendor's kind is not its driver's", vendor: vendortest.Acme{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(claimSrc, vendortest.Driver, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig"}`)},
			want:    claimErr + " (from the claim): kind AscendConfig is not for this driver: want AcmeConfig"},
		{name: "its config may not set another vendor's visible devices", vendor: vendortest.Acme{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(classSrc, vendortest.Driver, `{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AcmeConfig","env":{"ASCEND_VISIBLE_DEVICES":"0"}}`)},
			want:    claimErr + " (from the DeviceClass): AcmeConfig: env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES is set by its vendor's driver to the allocated devices of a container that has any"},
		{name: "another driver's config is not looked at", vendor: vendortest.Acme{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(claimSrc, otherDriver, `not even JSON`)}},
		{name: "a driver without a config kind refuses a claim's config, naming claim, driver and kind", vendor: vendortest.NoConfig{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(claimSrc, vendortest.Driver, acmeEnv)},
			want:    claimErr + " (from the claim): driver acme.accel-dra.dev takes no opaque config, got kind AcmeConfig"},
		{name: "and a DeviceClass's, whatever its parameters", vendor: vendortest.NoConfig{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(classSrc, vendortest.Driver, `{}`)},
			want:    claimErr + " (from the DeviceClass): driver acme.accel-dra.dev takes no opaque config"},
		{name: "a driver without a config kind prepares a claim without one", vendor: vendortest.NoConfig{},
			configs: []resourceapi.DeviceAllocationConfiguration{opaqueConfig(claimSrc, otherDriver, `{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d, cdiDir := acmeDriver(t, tt.vendor)
			claim := acmeClaim(tt.configs...)
			var got map[types.UID]kubeletplugin.PrepareResult
			require.NotPanics(t, func() {
				var err error
				got, err = d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
				require.NoError(t, err)
			})
			res := got[claim.UID]
			if tt.want != "" {
				require.EqualError(t, res.Err, tt.want)
				require.Empty(t, d.prepared.Claims, "nothing is prepared")
				return
			}
			require.NoError(t, res.Err)
			require.Len(t, res.Devices, 1)
			require.Equal(t, "xpu-1", res.Devices[0].DeviceName)
			spec, err := os.ReadFile(filepath.Join(cdiDir, "accel-dra.dev-acme_"+string(claim.UID)+".json"))
			require.NoError(t, err)
			require.Contains(t, string(spec), `"`+vendortest.EnvVisibleDevices+`=1"`, "the vendor's own CDI edits")
			if tt.env != "" {
				require.Contains(t, string(spec), `"`+tt.env+`"`)
			}
		})
	}
}

// A driver is never started without a config decoder: it could not tell
// its configs from another driver's.
func TestADriverWithoutAConfigDecoderDoesNotStart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, err := Start(ctx, Config{Vendor: vendortest.Acme{}, NodeName: "node-0"})
	require.EqualError(t, err, "starting driver acme.accel-dra.dev: no config decoder")
}

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

package plugin_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// TestDuringARollingUpdateBothPodsShareTheState starts the old and the new
// pod of a DaemonSet update side by side on the same directories: what one
// prepared, the other sees, so neither hands out a chip twice, and the new
// one can unprepare what the old one prepared.
func TestDuringARollingUpdateBothPodsShareTheState(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor})
	n.stop() // the harness's own instance is not a rolling-update one

	start := func(podUID types.UID) (*driver.Driver, drapb.DRAPluginClient) {
		_, ctx := ktesting.NewTestContext(t)
		writer, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: n.cdiDir, HostRoot: n.root})
		require.NoError(t, err)
		d, err := driver.Start(ctx, driver.Config{
			Vendor: vendorOf(t, n.vendor), NodeName: nodeName, Inventory: n.inv, CDI: writer, StateDir: n.stateDir, KubeClient: n.client,
			RegistrarDir: n.regDir, PluginDataDir: filepath.Join(n.pluginDir, n.driverName), PodUID: podUID,
		})
		require.NoError(t, err)
		t.Cleanup(d.Stop)
		n.ctx = ctx
		reg := n.dial(filepath.Join(n.regDir, kubeletplugin.RollingUpdateRegistrarSocketFile(n.regDir, n.driverName, podUID)))
		info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{})
		require.NoError(t, err)
		return d, drapb.NewDRAPluginClient(n.dial(info.Endpoint))
	}
	oldDriver, oldPod := start("pod-old")
	_, newPod := start("pod-new")

	x := n.claim("x", []string{"npu-0"})
	n.kubelet = oldPod
	n.mustPrepare(x)

	n.kubelet = newPod
	y := n.claim("y", []string{"npu-0"})
	require.Contains(t, n.prepare(y)[string(y.UID)].Error, "device npu-0 is already prepared for claim default/x",
		"the new pod knows what the old one prepared")
	n.unprepare(x)
	n.mustPrepare(y)

	n.kubelet = oldPod
	z := n.claim("z", []string{"npu-0"})
	require.Contains(t, n.prepare(z)[string(z.UID)].Error, "already prepared for claim default/y", "and the old pod what the new one did")
	require.Equal(t, []types.UID{y.UID}, oldDriver.PreparedClaims())
}

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
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// TestTheNodeAgentExportsChipTelemetryOnItsOwnMetricsPort runs the node
// agent on a simulated 8 × 910B node with the chip metrics on and
// /metrics on a port of its own: every chip has its series there, the
// probe port no longer serves /metrics, and a prepared claim's chip
// carries the claim's labels (no kubelet here, so no pod labels) until it
// is unprepared.
func TestTheNodeAgentExportsChipTelemetryOnItsOwnMetricsPort(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, client := simulatedAgent(t, "atlas-800t-a2")
	o.Metrics.Chips, o.Metrics.ChipInterval = true, 20*time.Millisecond
	o.Metrics.Addr = "127.0.0.1:0"
	metricsAddr := make(chan net.Addr, 1)
	o.Metrics.OnServing = func(a net.Addr) { metricsAddr <- a }
	healthAddr, done := runWithProbes(ctx, t, o)
	addr := <-metricsAddr

	get := func(a net.Addr) (int, string) {
		resp, err := http.Get("http://" + a.String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, _ := get(healthAddr)
	require.Equal(t, http.StatusNotFound, code, "/metrics moved to --metrics-addr")
	chipSeries := func(name string) []string {
		_, body := get(addr)
		var out []string
		for s := range samples(t, body) {
			if strings.HasPrefix(s, name+"{") {
				out = append(out, s)
			}
		}
		return out
	}
	for _, name := range []string{"accel_dra_chip_utilization_ratio", "accel_dra_chip_memory_used_bytes", "accel_dra_chip_memory_total_bytes",
		"accel_dra_chip_temperature_celsius", "accel_dra_chip_power_watts", "accel_dra_chip_healthy"} {
		require.Eventually(t, func() bool { return len(chipSeries(name)) == 8 }, 30*time.Second, 20*time.Millisecond, "%s of 8 chips", name)
	}

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train", UID: "uid-train"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "npu", Driver: ascend.Driver, Pool: nodeName, Device: "npu-3"}},
		}}},
	}
	_, err := client.ResourceV1().ResourceClaims("team-a").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	dra := dialAgent(ctx, t, o.Plugin.RegistrarDir, ascend.Driver)
	resp, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	require.Empty(t, resp.Claims[string(claim.UID)].Error)
	held := `access="workload",claim="train",container="",device="npu-3",driver="ascend.accel-dra.dev"`
	require.Eventually(t, func() bool {
		for _, s := range chipSeries("accel_dra_chip_utilization_ratio") {
			if strings.Contains(s, held) && strings.Contains(s, `namespace="team-a"`) {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "npu-3 carries its claim")
	require.Len(t, chipSeries("accel_dra_chip_allocated_idle_seconds"), 1, "only the held chip has an idle time")

	_, err = dra.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: pbClaims(claim)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(chipSeries("accel_dra_chip_allocated_idle_seconds")) == 0 },
		30*time.Second, 20*time.Millisecond, "the claim's labels go with it")

	cancel()
	require.NoError(t, <-done)
}

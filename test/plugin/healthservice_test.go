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
	"testing"

	"github.com/stretchr/testify/require"
	healthpb "k8s.io/kubelet/pkg/apis/dra-health/v1"

	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func TestTheKubeletIsToldTheHealthDiscoveryFound(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "testdata/mlu270-one-unhealthy.yaml", Vendor: cambricon.Vendor})
	stream, err := healthpb.NewDRAResourceHealthClient(n.draConn).NodeWatchResources(n.ctx, &healthpb.NodeWatchResourcesRequest{})
	require.NoError(t, err)
	resp, err := stream.Recv()
	require.NoError(t, err)
	got := map[string]healthpb.HealthStatus{}
	for _, d := range resp.GetDevices() {
		require.Equal(t, nodeName, d.GetDevice().GetPoolName())
		require.NotZero(t, d.GetLastUpdatedTime())
		got[d.GetDevice().GetDeviceName()] = d.GetHealth()
	}
	require.Equal(t, map[string]healthpb.HealthStatus{
		"mlu-0": healthpb.HealthStatus_HEALTHY,
		"mlu-1": healthpb.HealthStatus_HEALTHY,
		"mlu-2": healthpb.HealthStatus_UNHEALTHY,
		"mlu-3": healthpb.HealthStatus_HEALTHY,
	}, got)
}

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

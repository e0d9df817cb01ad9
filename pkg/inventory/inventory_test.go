package inventory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

func TestReasonToolHealthIsAValidCamelCaseReason(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"Alarm", "HealthAlarm"},
		{"UNKNOWN", "HealthUnknown"},
		{"critical", "HealthCritical"},
		{" (warning) ", "HealthWarning"},
		{"Not Ready", "HealthNotready"},
		{"", "Health"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			require.Equal(t, tc.want, inventory.ReasonToolHealth(tc.value))
		})
	}
}

func TestMarkUnhealthyKeepsTheFirstReason(t *testing.T) {
	c := inventory.Chip{Healthy: true}
	c.MarkUnhealthy(inventory.ReasonPCIDeviceMissing, "PCI function gone")
	c.MarkUnhealthy("HealthAlarm", "npu-smi reports health Alarm")
	require.False(t, c.Healthy)
	require.Equal(t, inventory.ReasonPCIDeviceMissing, c.HealthReason)
	require.Equal(t, "PCI function gone", c.HealthMessage)
}

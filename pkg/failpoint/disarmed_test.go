//go:build !failpoint

package failpoint_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/failpoint"
)

// TestWithoutTheTagNothingArmsAPoint: the environment variable that arms
// a point in a test build is ignored; were it read, kill would end this
// test process.
func TestWithoutTheTagNothingArmsAPoint(t *testing.T) {
	require.False(t, failpoint.Enabled)
	t.Setenv(failpoint.EnvVar, failpoint.PrepareAfterCDI+"=kill,"+failpoint.PrepareBeforeCDI+"=error")
	require.NoError(t, failpoint.Inject(failpoint.PrepareBeforeCDI))
	require.NoError(t, failpoint.Inject(failpoint.PrepareAfterCDI))
}

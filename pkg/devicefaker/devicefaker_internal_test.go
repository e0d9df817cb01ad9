package devicefaker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestAMknodPermissionErrorSaysRootIsNeeded(t *testing.T) {
	err := mknodError("/tmp/x/dev/davinci0", unix.EPERM)
	require.ErrorIs(t, err, unix.EPERM)
	require.EqualError(t, err, "creating fake device node /tmp/x/dev/davinci0: operation not permitted: "+
		"making character devices needs root (CAP_MKNOD); run as root or in a container with CAP_MKNOD")
}

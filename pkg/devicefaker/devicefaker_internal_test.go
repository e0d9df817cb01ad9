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

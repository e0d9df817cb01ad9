//go:build !failpoint

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

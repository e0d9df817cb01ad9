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

package discovery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSemverFromVendorNormalizesVendorVersions(t *testing.T) {
	for in, want := range map[string]string{
		"23.0.3":        "23.0.3",
		"23.0.rc3":      "23.0.0-rc3",
		"24.1.RC2.b030": "24.1.0-rc2+b030",
		"23.0.3.1":      "23.0.3+1",
		"v4.20.18":      "4.20.18",
		" 5.10.22 \n":   "5.10.22",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := SemverFromVendor(in)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestSemverFromVendorRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "unknown", "23.x", "1.2"} {
		_, err := SemverFromVendor(in)
		require.Error(t, err, in)
		require.Contains(t, err.Error(), "is not a version accel-dra understands")
	}
}

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

// Fuzz target of the driver version normalization. Run it for a while with
//
//	go test -run x -fuzz FuzzSemverFromVendor -fuzztime 60s -parallel 1 ./pkg/discovery

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
)

func FuzzSemverFromVendor(f *testing.F) {
	// The versions the recorded fixtures print, and edge cases.
	for _, s := range []string{
		"23.0.3", "23.0.rc3", "24.1.RC2.b030", "23.0.3.1", "v4.20.18", "V5.10.22", "6.2.29",
		"", "v", "1.2", "1.2.3-", "1.2.rc1.", "01.2.3", "1.2.3+build.1", "99999999999999999999.0.0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := SemverFromVendor(in)
		if err != nil {
			require.ErrorContains(t, err, "driver version")
			return
		}
		_, err = version.ParseSemantic(out)
		require.NoError(t, err, "result %q is semver", out)
		again, err := SemverFromVendor(out)
		require.NoError(t, err)
		require.Equal(t, out, again, "normalizing %q twice", in)
	})
}

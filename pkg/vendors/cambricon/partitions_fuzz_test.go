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

package cambricon

// Fuzz targets of the parsers of the partition tools' output (cnmon smlu
// -l/-p/-C). The seed corpus
// is the recorded output under testdata plus edge cases; testdata/fuzz/<target>
// keeps the inputs fuzzing once broke a parser with. Run one for a while
// with
//
//	go test -run x -fuzz FuzzParseSMLUList -fuzztime 60s -parallel 1 ./pkg/vendors/cambricon

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func FuzzParseSMLUList(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/smlu/smlu_list_*.txt", "", "/dev/cambricon-caps/cap_dev0_mi1 50p.1mb", "/dev/cambricon-caps/cap_dev0_mi1")
	f.Fuzz(func(t *testing.T, data []byte) {
		smlus, err := ParseSMLUList("cnmon smlu -c 0 -l", data)
		if err != nil {
			discoverytest.RequireParseErrorOf(t, err, "cnmon smlu -c 0 -l", data)
			return
		}
		seen := map[int]bool{}
		for _, s := range smlus {
			require.GreaterOrEqual(t, s.InstanceID, 0)
			require.GreaterOrEqual(t, s.Card, 0)
			require.NotEmpty(t, s.ProfileName)
			require.True(t, strings.HasPrefix(s.DeviceNode, "/dev/cambricon-caps/"))
			require.False(t, seen[s.InstanceID], "instance %d twice", s.InstanceID)
			seen[s.InstanceID] = true
		}
	})
}

func FuzzParseSMLUCreateAndDestroy(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/smlu/smlu_*_ok.txt", "", "Successfully created smlu instance ID 0 on card 0, using profile ID 0")
	f.Fuzz(func(t *testing.T, data []byte) {
		made, err := parseSMLUCreate("cnmon smlu -c 0 -C 1", data)
		if err != nil {
			discoverytest.RequireParseErrorOf(t, err, "cnmon smlu -c 0 -C 1", data)
			return
		}
		require.GreaterOrEqual(t, made.instance, 0)
		require.GreaterOrEqual(t, made.card, 0)
		require.GreaterOrEqual(t, made.profile, 0)
	})
}

func FuzzParseSMLUProfiles(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/smlu/smlu_profiles.txt", "", "0 100p.1mb\n0 50p.1mb\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		profiles, err := ParseSMLUProfiles("cnmon smlu -c 0 -p", data)
		if err != nil {
			discoverytest.RequireParseErrorOf(t, err, "cnmon smlu -c 0 -p", data)
			return
		}
		seen := map[int]bool{}
		for _, p := range profiles {
			require.GreaterOrEqual(t, p.ID, 0)
			require.False(t, seen[p.ID])
			seen[p.ID] = true
		}
	})
}

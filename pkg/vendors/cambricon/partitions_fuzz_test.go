package cambricon

// Fuzz targets of the parsers of the partition tools' output (cnmon smlu
// --list/--create/--destroy). The seed corpus
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
	discoverytest.AddFileSeeds(f, "testdata/smlu/smlu_list_*.txt", "", "Total sMLU instances: 0", "Total sMLU instances: -1")
	discoverytest.FuzzParser(f, "cnmon smlu -c 0 --list", ParseSMLUList, func(t *testing.T, _ []byte, smlus []SMLU) {
		seen := map[int]bool{}
		for _, s := range smlus {
			require.GreaterOrEqual(t, s.InstanceID, 0)
			require.GreaterOrEqual(t, s.ProfileID, 0)
			require.True(t, strings.HasPrefix(s.DeviceNode, "/dev/"))
			require.False(t, seen[s.InstanceID], "instance %d twice", s.InstanceID)
			seen[s.InstanceID] = true
		}
	})
}

func FuzzParseSMLUCreateAndDestroy(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/smlu/smlu_*_ok.txt", "", "destroy smlu instance 0 success")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range []struct {
			source string
			parse  func(string, []byte) (int, error)
		}{
			{"cnmon smlu -c 0 --create --profile 1", parseSMLUCreate},
			{"cnmon smlu -c 0 --destroy --instance 1", parseSMLUDestroy},
		} {
			id, err := p.parse(p.source, data)
			if err != nil {
				discoverytest.RequireParseErrorOf(t, err, p.source, data)
				continue
			}
			require.GreaterOrEqual(t, id, 0)
		}
	})
}

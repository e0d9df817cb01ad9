package partitions

// Fuzz targets of the parsers of the partition tools' output (npu-smi
// info-vnpu and set, cnmon smlu --list/--create/--destroy). The seed corpus
// is the recorded output under testdata plus edge cases; testdata/fuzz/<target>
// keeps the inputs fuzzing once broke a parser with. Run one for a while
// with
//
//	go test -run x -fuzz FuzzParseVNPUInfo -fuzztime 60s -parallel 1 ./pkg/partitions

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func FuzzParseVNPUInfo(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/ascend/info-vnpu_*.txt", "", "Total number of vnpu: 0", "Total number of vnpu: x")
	discoverytest.FuzzParser(f, "npu-smi info -t info-vnpu -i 0 -c 0", ParseVNPUInfo, func(t *testing.T, _ []byte, vnpus []VNPU) {
		seen := map[int]bool{}
		for _, v := range vnpus {
			require.GreaterOrEqual(t, v.ID, 0)
			require.GreaterOrEqual(t, v.VGroup, -1)
			require.GreaterOrEqual(t, v.Status, 0)
			require.NotEmpty(t, v.Template)
			require.False(t, seen[v.ID], "vNPU %d twice", v.ID)
			seen[v.ID] = true
		}
	})
}

func FuzzParseSetResult(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/ascend/*vnpu*_ok.txt", "", "Status : Failed\nMessage : busy\n", "Status:ok")
	f.Fuzz(func(t *testing.T, data []byte) {
		const source = "npu-smi set -t create-vnpu -i 0 -c 0 -f vir02"
		if _, err := parseSetResult(source, data); err != nil {
			// A failed status is the tool's answer, not a parse error,
			// but it still names the command.
			require.ErrorContains(t, err, source)
		}
	})
}

func FuzzParseSMLUList(f *testing.F) {
	discoverytest.AddFileSeeds(f, "testdata/cambricon/smlu_list_*.txt", "", "Total sMLU instances: 0", "Total sMLU instances: -1")
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
	discoverytest.AddFileSeeds(f, "testdata/cambricon/smlu_*_ok.txt", "", "destroy smlu instance 0 success")
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

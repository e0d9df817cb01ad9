package checkpoint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
)

var sample = checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{
	"uid-1": {Namespace: "default", Name: "train", Devices: []checkpoint.Device{
		{Request: "npus", Pool: "node-a", Device: "npu-0", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-1-npu-0"}},
	}},
	"uid-2": {Namespace: "default", Name: "serve", Devices: []checkpoint.Device{
		{Request: "vnpu", Pool: "node-a", Device: "npu-1-vir04-0", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-2-npu-1-vir04-0"},
			Partition: &checkpoint.Partition{Type: "vnpu", Chip: 1, Template: "vir04", ID: 116, DeviceNode: "/dev/vdavinci116"}},
		{Request: "share", Pool: "node-a", Device: "npu-2", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-2-npu-2"},
			Share: &checkpoint.Share{ID: "share-1", Consumed: map[string]resource.Quantity{"accel-dra.dev/memory": resource.MustParse("8Gi")}}},
	}},
}}

// v1BeforePartitions is a checkpoint as the plugin wrote it before devices
// had partitions and shares; CHECKSUM is filled in by the test.
const v1BeforePartitions = `{
  "version": "accel-dra.dev/checkpoint/v1",
  "checksum": "CHECKSUM",
  "data": {"claims":{"uid-1":{"namespace":"default","name":"train","devices":[{"request":"npus","pool":"node-a","device":"npu-0","cdiDeviceIDs":["accel-dra.dev/ascend=uid-1-npu-0"]}]}}}
}`

func TestACheckpointWrittenBeforePartitionsStillLoads(t *testing.T) {
	dir := t.TempDir()
	s := checkpoint.New(dir, "checkpoint.json")
	// The checksum is of the compact data, as Save computes it.
	data := `{"claims":{"uid-1":{"namespace":"default","name":"train","devices":[{"request":"npus","pool":"node-a","device":"npu-0","cdiDeviceIDs":["accel-dra.dev/ascend=uid-1-npu-0"]}]}}}`
	sum := sha256.Sum256([]byte(data))
	raw := strings.Replace(v1BeforePartitions, "CHECKSUM", "sha256:"+hex.EncodeToString(sum[:]), 1)
	require.NoError(t, os.WriteFile(s.Path(), []byte(raw), 0o600))
	d, err := s.Load()
	require.NoError(t, err)
	want := checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{"uid-1": sample.Claims["uid-1"]}}
	require.Equal(t, want, d)
	require.Nil(t, d.Claims["uid-1"].Devices[0].Partition, "an old device is a whole chip")
	require.Nil(t, d.Claims["uid-1"].Devices[0].Share)
}

func TestAMissingCheckpointIsEmpty(t *testing.T) {
	d, err := checkpoint.New(t.TempDir(), "checkpoint.json").Load()
	require.NoError(t, err)
	require.Empty(t, d.Claims)
	require.NotNil(t, d.Claims)
}

func TestSaveThenLoadRoundTripsAndLeavesNoTemporaryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := checkpoint.New(dir, "checkpoint.json")
	require.NoError(t, s.Save(sample))
	require.NoError(t, s.Save(sample))
	d, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, sample, d)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

func TestACorruptCheckpointIsDetectedAndCanBeSetAside(t *testing.T) {
	tests := []struct {
		name   string
		mangle func(string) string
		want   string
	}{
		{"truncated to half", func(s string) string { return s[:len(s)/2] }, "truncated?): unexpected end of JSON input"},
		{"truncated to one byte", func(s string) string { return s[:1] }, "not JSON (1 bytes, truncated?): unexpected end of JSON input"},
		{"empty", func(string) string { return "" }, "the file is empty (0 bytes)"},
		{"only a newline", func(string) string { return "\n" }, "the file is empty (1 bytes)"},
		{"edited content", func(s string) string { return strings.Replace(s, "npu-0", "npu-1", 1) }, "does not match the content"},
		{"bad checksum", func(s string) string { return strings.Replace(s, `"sha256:`, `"sha256:00`, 1) }, "checksum sha256:00"},
		{"no version", func(s string) string { return strings.Replace(s, `"version"`, `"format"`, 1) }, "no version: not a checkpoint of this plugin"},
		{"not JSON", func(string) string { return "\x00\x01garbage" }, "invalid character"},
		{"JSON of another shape", func(string) string { return `["claims"]` }, "cannot unmarshal array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := checkpoint.New(dir, "checkpoint.json")
			require.NoError(t, s.Save(sample))
			raw, err := os.ReadFile(s.Path())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(s.Path(), []byte(tt.mangle(string(raw))), 0o600))

			_, err = s.Load()
			var corrupt *checkpoint.CorruptError
			require.ErrorAs(t, err, &corrupt)
			require.ErrorContains(t, err, "checkpoint "+s.Path()+" is corrupt: ")
			require.ErrorContains(t, err, tt.want)

			aside, err := s.SetAside()
			require.NoError(t, err)
			require.Equal(t, s.Path()+".corrupt", aside)
			_, err = s.Load()
			require.ErrorContains(t, err, tt.want, "until the rebuilt checkpoint is saved, a restart finds the corrupt one, not none")
			again, err := s.SetAside()
			require.NoError(t, err, "a restart sets it aside again")
			require.Equal(t, aside, again)

			require.NoError(t, s.Save(sample))
			d, err := s.Load()
			require.NoError(t, err)
			require.Equal(t, sample, d)
			kept, err := os.ReadFile(aside)
			require.NoError(t, err)
			require.Equal(t, tt.mangle(string(raw)), string(kept), "the corrupt file is kept for the operator")
		})
	}
}

// TestACheckpointOfANewerFormatIsRefusedNotSetAside: a downgraded plugin
// must not treat the claims a newer one prepared as garbage.
func TestACheckpointOfANewerFormatIsRefusedNotSetAside(t *testing.T) {
	s := checkpoint.New(t.TempDir(), "checkpoint.json")
	require.NoError(t, s.Save(sample))
	raw, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	newer := strings.Replace(string(raw), checkpoint.Version, "accel-dra.dev/checkpoint/v2", 1)
	require.NoError(t, os.WriteFile(s.Path(), []byte(newer), 0o600))

	_, err = s.Load()
	var verr *checkpoint.VersionError
	require.ErrorAs(t, err, &verr)
	var corrupt *checkpoint.CorruptError
	require.False(t, errors.As(err, &corrupt), "not corrupt: nothing may set it aside")
	require.Equal(t, "accel-dra.dev/checkpoint/v2", verr.Version)
	require.EqualError(t, err, "checkpoint "+s.Path()+` has format version "accel-dra.dev/checkpoint/v2", this plugin reads only "accel-dra.dev/checkpoint/v1": `+
		"refusing to start rather than forget the claims it lists; run the plugin version that wrote it, or unprepare those claims and remove the file")
	after, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	require.Equal(t, newer, string(after), "Load leaves the file as it is")
}

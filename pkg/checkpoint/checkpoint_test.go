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

package checkpoint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
		{Kind: checkpoint.KindChip, Request: "npus", Pool: "node-a", Device: "npu-0", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-1-npu-0"}},
	}},
	"uid-2": {Namespace: "default", Name: "serve", Devices: []checkpoint.Device{
		{Kind: checkpoint.KindPartition, Request: "vnpu", Pool: "node-a", Device: "npu-1-vir04-0", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-2-npu-1-vir04-0"},
			Partition: &checkpoint.Partition{Type: "vnpu", Chip: 1, Template: "vir04", ID: 116, DeviceNode: "/dev/vdavinci116"}},
		{Kind: checkpoint.KindShare, Request: "share", Pool: "node-a", Device: "npu-2", CDIDeviceIDs: []string{"accel-dra.dev/ascend=uid-2-npu-2"},
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
	want := checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{"uid-1": sample.Claims["uid-1"]}, ConvertedFrom: checkpoint.VersionV1}
	require.Equal(t, want, d, "an old device is a whole chip")
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
		{"a device of no kind", func(s string) string { return reseal(t, s, `"kind":"chip",`, "") },
			`format accel-dra.dev/checkpoint/v4: claim uid-1 device 0 (npu-0) of kind "" is not a kind of this format`},
		{"a share without its share", func(s string) string {
			return reseal(t, s, `"kind":"partition"`, `"kind":"share"`)
		}, `claim uid-2 device 0 (npu-1-vir04-0) of kind "share" needs a share`},
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
	newer := strings.Replace(string(raw), checkpoint.Version, "accel-dra.dev/checkpoint/v5", 1)
	require.NoError(t, os.WriteFile(s.Path(), []byte(newer), 0o600))

	_, err = s.Load()
	var verr *checkpoint.VersionError
	require.ErrorAs(t, err, &verr)
	var corrupt *checkpoint.CorruptError
	require.False(t, errors.As(err, &corrupt), "not corrupt: nothing may set it aside")
	require.Equal(t, "accel-dra.dev/checkpoint/v5", verr.Version)
	require.EqualError(t, err, "checkpoint "+s.Path()+` has format version "accel-dra.dev/checkpoint/v5", this plugin reads only "accel-dra.dev/checkpoint/v4" and older: `+
		"refusing to start rather than forget the claims it lists; run the plugin version that wrote it, or unprepare those claims and remove the file")
	after, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	require.Equal(t, newer, string(after), "Load leaves the file as it is")
}

// reseal replaces old by new once in a saved checkpoint's compacted data
// and gives it the checksum of its new content, as if the plugin had
// written it.
func reseal(t *testing.T, raw, old, new string) string {
	t.Helper()
	var f struct {
		Version  string          `json:"version"`
		Checksum string          `json:"checksum"`
		Data     json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &f))
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, f.Data))
	require.Contains(t, compact.String(), old)
	data := strings.Replace(compact.String(), old, new, 1)
	sum := sha256.Sum256([]byte(data))
	f.Data, f.Checksum = json.RawMessage(data), "sha256:"+hex.EncodeToString(sum[:])
	out, err := json.Marshal(f)
	require.NoError(t, err)
	return string(out)
}

// TestACheckpointOfTodaysV1AgentConverts: testdata/v1.json is what the
// agent wrote before v2 (a whole chip, two vNPUs, a share, an admin
// claim): it loads, each device gets its kind, nothing else changes, and
// saving it writes v2 that loads the same.
func TestACheckpointOfTodaysV1AgentConverts(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "v1.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	s := checkpoint.New(dir, "checkpoint.json")
	require.NoError(t, os.WriteFile(s.Path(), raw, 0o600))

	d, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, checkpoint.VersionV1, d.ConvertedFrom)
	kinds := map[string][]checkpoint.DeviceKind{}
	for uid, c := range d.Claims {
		for _, dev := range c.Devices {
			kinds[string(uid)] = append(kinds[string(uid)], dev.Kind)
		}
	}
	require.Equal(t, map[string][]checkpoint.DeviceKind{
		"uid-train-1":   {checkpoint.KindChip},
		"uid-infer-2":   {checkpoint.KindPartition, checkpoint.KindPartition},
		"uid-serve-3":   {checkpoint.KindShare},
		"uid-monitor-4": {checkpoint.KindAdmin, checkpoint.KindAdmin},
	}, kinds)
	infer := d.Claims["uid-infer-2"]
	require.Equal(t, "infer", infer.Name)
	require.Equal(t, &checkpoint.Partition{Type: "vnpu", Chip: 1, Template: "vir10_3c_32g", ID: 117, DeviceNode: "/dev/vdavinci117"}, infer.Devices[1].Partition)
	require.Equal(t, []string{"accel-dra.dev/ascend=uid-infer-2-npu-1-vir10-3c-32g-0"}, infer.Devices[1].CDIDeviceIDs)
	serve := d.Claims["uid-serve-3"].Devices[0]
	require.Equal(t, types.UID("share-a"), serve.Share.ID)
	mem := serve.Share.Consumed["accel-dra.dev/memory"]
	require.Equal(t, "8Gi", mem.String())

	require.NoError(t, s.Save(d))
	saved, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	require.Contains(t, string(saved), `"version": "`+checkpoint.Version+`"`)
	again, err := s.Load()
	require.NoError(t, err)
	require.Empty(t, again.ConvertedFrom)
	d.ConvertedFrom = ""
	require.Equal(t, d, again)
}

// TestACheckpointOfTheV2AgentConverts: testdata/v2.json is what the agent
// wrote before the boot id (v1.json saved by it): it loads with the same
// claims and no boot id; saved again it is v4 and keeps a boot id.
func TestACheckpointOfTheV2AgentConverts(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("testdata", "v2.json"))
	require.NoError(t, err)
	v2 := checkpoint.New(dir, "v2.json")
	require.NoError(t, os.WriteFile(v2.Path(), raw, 0o600))
	raw, err = os.ReadFile(filepath.Join("testdata", "v1.json"))
	require.NoError(t, err)
	v1 := checkpoint.New(dir, "v1.json")
	require.NoError(t, os.WriteFile(v1.Path(), raw, 0o600))

	d, err := v2.Load()
	require.NoError(t, err)
	require.Equal(t, checkpoint.VersionV2, d.ConvertedFrom)
	require.Empty(t, d.BootID, "v2 has no boot id")
	fromV1, err := v1.Load()
	require.NoError(t, err)
	require.Equal(t, fromV1.Claims, d.Claims)

	d.BootID = "5d2c4b1e-0000-4000-8000-000000000001"
	require.NoError(t, v2.Save(d))
	saved, err := os.ReadFile(v2.Path())
	require.NoError(t, err)
	require.Contains(t, string(saved), `"version": "accel-dra.dev/checkpoint/v4"`)
	again, err := v2.Load()
	require.NoError(t, err)
	require.Empty(t, again.ConvertedFrom)
	require.Equal(t, d.BootID, again.BootID)
	require.Equal(t, d.Claims, again.Claims)
}

// A share may carry the partition made for it from v4 on: it round-trips,
// and a v3 file, whose writer knew no such share, still loads (converted)
// unless it has one, which v3 did not allow.
func TestAShareWithItsPartitionNeedsV4(t *testing.T) {
	share := checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{"uid-s": {Namespace: "ns", Name: "s", Devices: []checkpoint.Device{{
		Kind: checkpoint.KindShare, Request: "mlu", Pool: "node", Device: "mlu-5", CDIDeviceIDs: []string{"accel-dra.dev/cambricon=x"},
		Share:     &checkpoint.Share{ID: "5e1d0c4b-8f3a-4c2e-9b7d-6a5f4e3d2c1b"},
		Partition: &checkpoint.Partition{Type: "smlu", Chip: 5, Template: "25p.5825mb", ID: 1, DeviceNode: "/dev/cambricon-caps/cap_dev5_mi1"},
	}}}}}
	s := checkpoint.New(t.TempDir(), "checkpoint.json")
	require.NoError(t, s.Save(share))
	d, err := s.Load()
	require.NoError(t, err)
	require.Equal(t, share, d)

	raw, err := os.ReadFile(s.Path())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Path(), []byte(strings.Replace(string(raw), checkpoint.Version, checkpoint.VersionV3, 1)), 0o600))
	_, err = s.Load()
	require.ErrorContains(t, err, `format accel-dra.dev/checkpoint/v3: claim uid-s device 0 (mlu-5) of kind "share" has a partition`)

	require.NoError(t, s.Save(sample))
	raw, err = os.ReadFile(s.Path())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Path(), []byte(strings.Replace(string(raw), checkpoint.Version, checkpoint.VersionV3, 1)), 0o600))
	d, err = s.Load()
	require.NoError(t, err)
	require.Equal(t, checkpoint.VersionV3, d.ConvertedFrom)
	d.ConvertedFrom = ""
	require.Equal(t, sample, d)
}

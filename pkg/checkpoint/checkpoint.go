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

// Package checkpoint persists which claims a kubelet plugin has prepared,
// so Unprepare works after a restart (kubelet does not resend the claim)
// and a device is never handed to two claims. The file is written
// atomically (temporary file, fsync, rename, fsync of the directory) and
// carries a checksum, so a torn or edited file is detected instead of
// silently forgetting prepared claims.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Version is the checkpoint format Save writes. Load reads it and the
// formats before it (VersionV2, VersionV1), converting them; any other is
// refused with a *VersionError.
//
// v4 lets a share (KindShare) carry the partition the driver made for it
// (Device.Partition): on a Shared chip whose vendor's driver carves the
// shares, each share is a partition of its size. A v3 reader refuses such
// a share rather than forget its partition.
//
// v3 adds the node's boot id (Data.BootID), so a start after a reboot
// knows that the CDI specs (on tmpfs) and the partitions the claims
// need may be gone, and the partitions left to destroy (Data.Orphans).
//
// v2 says what each device is (Device.Kind). In v1 a reader had to infer
// it from optional fields, which were added to v1 without a version
// change: a plugin that predates them read a newer file as whole chips
// and forgot its partitions. A new kind or field now changes the version,
// so an older plugin refuses the file instead of misreading it.
const Version = "accel-dra.dev/checkpoint/v4"

// VersionV3 is the format before v4: the same, without partitions of
// shares.
const VersionV3 = "accel-dra.dev/checkpoint/v3"

// VersionV2 is the format before v3: the same, without the boot id.
const VersionV2 = "accel-dra.dev/checkpoint/v2"

// DeviceKind is what a prepared device is.
type DeviceKind string

const (
	// KindChip is a whole chip.
	KindChip DeviceKind = "chip"
	// KindPartition is a partition device: the plugin made the partition
	// (Device.Partition) for the claim.
	KindPartition DeviceKind = "partition"
	// KindShare is a share of a Shared chip (Device.Share), with the
	// partition made for it where the vendor's driver carves shares.
	KindShare DeviceKind = "share"
	// KindAdmin is a chip or partition device allocated with admin access
	// (a monitoring or debugging claim): it holds nothing, so other
	// claims' checks ignore it, and it has no Partition or Share.
	KindAdmin DeviceKind = "admin"
)

// Device is one prepared device of a claim.
type Device struct {
	Kind DeviceKind `json:"kind"`
	// Request is the request (or request/subrequest) the device was allocated for.
	Request      string   `json:"request"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
	// Partition is the partition the plugin made on the chip for a
	// KindPartition device (a vNPU, an sMLU instance). It is recorded
	// before the plugin answers the kubelet, so a restart knows the
	// partition is in use and Unprepare can destroy it. Nil once the
	// partition is destroyed (an unprepare that did not finish).
	Partition *Partition `json:"partition,omitempty"`
	// Share is the claim's share of a KindShare device.
	Share *Share `json:"share,omitempty"`
}

// Partition is a partition that exists on a chip (vendors.Instance).
type Partition struct {
	// Type is the accel-dra.dev/type of the partition: vnpu or smlu.
	Type string `json:"type"`
	// Chip is the index of the parent chip.
	Chip int `json:"chip"`
	// Template is the vendor's template or profile name.
	Template string `json:"template"`
	// ID is the vNPU id or sMLU instance id.
	ID int `json:"id"`
	// DeviceNode is the partition's device file on the host.
	DeviceNode string `json:"deviceNode"`
	// UUID is the instance UUID where the vendor tool reports one.
	UUID string `json:"uuid,omitempty"`
}

// Share is one allocation of a device with allowMultipleAllocations.
type Share struct {
	// ID is the allocation result's shareID.
	ID types.UID `json:"id"`
	// Consumed is the capacity the scheduler gave this share
	// (status.allocation.devices.results[].consumedCapacity).
	Consumed map[string]resource.Quantity `json:"consumed,omitempty"`
}

// Claim is a prepared claim.
type Claim struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Devices   []Device `json:"devices"`
}

// Data is the checkpoint content: prepared claims by UID.
type Data struct {
	// BootID is the node's boot id (/proc/sys/kernel/random/boot_id)
	// when the checkpoint was saved; "" when unknown (an older format).
	BootID string              `json:"bootID,omitempty"`
	Claims map[types.UID]Claim `json:"claims"`
	// Orphans are partitions a failed prepare made and could not destroy
	// again: the next call or start-up destroys them.
	Orphans []Partition `json:"orphans,omitempty"`
	// ConvertedFrom is the format Load converted the file from, "" when
	// it was in Version; Save always writes Version.
	ConvertedFrom string `json:"-"`
}

// validate checks what the format says of each device's kind.
func (d Data) validate() error {
	for uid, c := range d.Claims {
		for i, dev := range c.Devices {
			var err error
			switch dev.Kind {
			case KindChip, KindAdmin:
				if dev.Partition != nil || dev.Share != nil {
					err = errors.New("has a partition or share")
				}
			case KindPartition:
				if dev.Share != nil {
					err = errors.New("has a share")
				}
			case KindShare:
				if dev.Share == nil {
					err = errors.New("needs a share")
				}
			default:
				err = errors.New("is not a kind of this format")
			}
			if err != nil {
				return fmt.Errorf("claim %s device %d (%s) of kind %q %w", uid, i, dev.Device, dev.Kind, err)
			}
		}
	}
	return nil
}

// file is the on-disk envelope.
type file struct {
	Version  string          `json:"version"`
	Checksum string          `json:"checksum"`
	Data     json.RawMessage `json:"data"`
}

// CorruptError says the checkpoint exists but cannot be trusted.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint %s is corrupt: %s", e.Path, e.Reason)
}

// VersionError says the checkpoint is in a format this plugin does not
// read, e.g. written by a newer plugin before a downgrade. It is not
// corrupt: setting it aside would forget claims that are in use, so the
// plugin refuses to start instead.
type VersionError struct {
	Path    string
	Version string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("checkpoint %s has format version %q, this plugin reads only %q and older: refusing to start rather than forget the claims it lists; run the plugin version that wrote it, or unprepare those claims and remove the file",
		e.Path, e.Version, Version)
}

// Store reads and writes one checkpoint file.
type Store struct {
	path string
}

// New returns the store of the checkpoint file name in dir.
func New(dir, name string) *Store {
	return &Store{path: filepath.Join(dir, name)}
}

// Path is the checkpoint file.
func (s *Store) Path() string { return s.path }

// Load reads the checkpoint. A missing file is an empty checkpoint; a file
// that is empty, does not parse, has no version or a wrong checksum is a
// *CorruptError; one with another version is a *VersionError.
func (s *Store) Load() (Data, error) {
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return Data{Claims: map[types.UID]Claim{}}, nil
	}
	if err != nil {
		return Data{}, fmt.Errorf("reading checkpoint: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return Data{}, &CorruptError{Path: s.path, Reason: fmt.Sprintf("the file is empty (%d bytes)", len(raw))}
	}
	var f file
	if err := json.Unmarshal(raw, &f); err != nil {
		return Data{}, &CorruptError{Path: s.path, Reason: fmt.Sprintf("not JSON (%d bytes, truncated?): %v", len(raw), err)}
	}
	var decode func(json.RawMessage) (Data, error)
	switch f.Version {
	case Version:
		decode = decodeV4
	case VersionV3:
		decode = decodeV3
	case VersionV2:
		decode = decodeV2
	case VersionV1:
		decode = decodeV1
	case "":
		return Data{}, &CorruptError{Path: s.path, Reason: "no version: not a checkpoint of this plugin"}
	default:
		// Checked before the checksum: another format may sum differently.
		return Data{}, &VersionError{Path: s.path, Version: f.Version}
	}
	// The file is indented for people to read; the checksum is of the
	// compact form (in every version so far).
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.Data); err != nil {
		return Data{}, &CorruptError{Path: s.path, Reason: err.Error()}
	}
	if sum := checksum(compact.Bytes()); sum != f.Checksum {
		return Data{}, &CorruptError{Path: s.path, Reason: fmt.Sprintf("checksum %s does not match the content (%s)", f.Checksum, sum)}
	}
	d, err := decode(f.Data)
	if err != nil {
		return Data{}, &CorruptError{Path: s.path, Reason: fmt.Sprintf("format %s: %v", f.Version, err)}
	}
	if d.Claims == nil {
		d.Claims = map[types.UID]Claim{}
	}
	return d, nil
}

func decodeV4(raw json.RawMessage) (Data, error) {
	var d Data
	if err := json.Unmarshal(raw, &d); err != nil {
		return Data{}, err
	}
	return d, d.validate()
}

// decodeV3 reads v3 data: v4's, with no share that has a partition.
func decodeV3(raw json.RawMessage) (Data, error) {
	d, err := decodeV4(raw)
	if err != nil {
		return Data{}, err
	}
	for uid, c := range d.Claims {
		for i, dev := range c.Devices {
			if dev.Kind == KindShare && dev.Partition != nil {
				return Data{}, fmt.Errorf("claim %s device %d (%s) of kind %q has a partition", uid, i, dev.Device, dev.Kind)
			}
		}
	}
	d.ConvertedFrom = VersionV3
	return d, nil
}

// decodeV2 reads v2 data: v3's claims, with no boot id.
func decodeV2(raw json.RawMessage) (Data, error) {
	var v2 struct {
		Claims map[types.UID]Claim `json:"claims"`
	}
	if err := json.Unmarshal(raw, &v2); err != nil {
		return Data{}, err
	}
	d := Data{Claims: v2.Claims, ConvertedFrom: VersionV2}
	return d, d.validate()
}

// Save replaces the checkpoint atomically: a crash leaves either the old
// or the new file, never a mix.
func (s *Store) Save(d Data) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding checkpoint: %w", err)
	}
	raw, err := json.MarshalIndent(file{Version: Version, Checksum: checksum(data), Data: data}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding checkpoint: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating checkpoint directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("writing checkpoint %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing checkpoint %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing checkpoint %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("replacing checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		// Make the rename durable; not all filesystems support it.
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// SetAside keeps a corrupt checkpoint as <name>.corrupt, replacing an
// earlier one, so an operator can inspect it, and returns that path. It
// is a hard link, not a rename: the checkpoint stays in place until Save
// replaces it with the rebuilt one, so a crash or a failed Save in between
// finds it corrupt again at the next start instead of missing, which
// would read as "nothing prepared" and lose every prepared claim. A link
// also needs no room on a full disk.
func (s *Store) SetAside() (string, error) {
	to := s.path + ".corrupt"
	if err := os.Remove(to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("setting aside corrupt checkpoint: %w", err)
	}
	if err := os.Link(s.path, to); err != nil {
		return "", fmt.Errorf("setting aside corrupt checkpoint: %w", err)
	}
	return to, nil
}

func checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

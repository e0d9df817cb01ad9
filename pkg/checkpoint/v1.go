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

package checkpoint

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
)

// VersionV1 is the format of the plugins before Version: the same
// envelope and claims, but a device's kind is implied by optional fields
// (Partition, Share, adminAccess), none of which a file from before
// partitions has.
const VersionV1 = "accel-dra.dev/checkpoint/v1"

// The v1 types, frozen as v1 files were written: change them never.
type (
	dataV1 struct {
		Claims map[types.UID]claimV1 `json:"claims"`
	}
	claimV1 struct {
		Namespace string     `json:"namespace"`
		Name      string     `json:"name"`
		Devices   []deviceV1 `json:"devices"`
	}
	deviceV1 struct {
		Request      string     `json:"request"`
		Pool         string     `json:"pool"`
		Device       string     `json:"device"`
		CDIDeviceIDs []string   `json:"cdiDeviceIDs"`
		Partition    *Partition `json:"partition,omitempty"`
		Share        *Share     `json:"share,omitempty"`
		AdminAccess  bool       `json:"adminAccess,omitempty"`
	}
)

// decodeV1 reads v1 data and converts it. A v1 partition device whose
// partition an interrupted unprepare already destroyed has no partition
// left and reads as a chip: nothing is left to destroy for it, and it is
// held the same way.
func decodeV1(raw json.RawMessage) (Data, error) {
	var old dataV1
	if err := json.Unmarshal(raw, &old); err != nil {
		return Data{}, err
	}
	d := Data{Claims: make(map[types.UID]Claim, len(old.Claims)), ConvertedFrom: VersionV1}
	for uid, c := range old.Claims {
		nc := Claim{Namespace: c.Namespace, Name: c.Name, Devices: make([]Device, 0, len(c.Devices))}
		for _, dev := range c.Devices {
			nd := Device{Kind: KindChip, Request: dev.Request, Pool: dev.Pool, Device: dev.Device, CDIDeviceIDs: dev.CDIDeviceIDs,
				Partition: dev.Partition, Share: dev.Share}
			switch {
			case dev.AdminAccess:
				nd.Kind = KindAdmin
			case dev.Partition != nil:
				nd.Kind = KindPartition
			case dev.Share != nil:
				nd.Kind = KindShare
			}
			nc.Devices = append(nc.Devices, nd)
		}
		d.Claims[uid] = nc
	}
	return d, d.validate()
}

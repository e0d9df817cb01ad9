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

package ascend

// The super pod a chip is in: A3 (910_93) and 950 chips answer DCMI's
// SPOD_INFO query (dcmi_get_device_info(card, device,
// DCMI_MAIN_CMD_CHIP_INF, DCMI_CHIP_INF_SUB_CMD_SPOD_INFO), struct
// dcmi_spod_info, dcmi_interface_api.h:598-615 of the driver source, as
// npucli/src/npu_chip_info_ext.c:355-393 asks it for `npu-smi info -t
// spod-info` and mind-cluster's DcGetSuperPodInfo, devmanager/dcmi/dcmi.go
// at 22bb3d98); other chips answer "not supported" and have none.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// DCMI_MAIN_CMD_CHIP_INF and DCMI_CHIP_INF_SUB_CMD_SPOD_INFO
// (dcmi_interface_api.h:364-377, 600-605; mind-cluster dcmi/constants.go
// MainCmdChipInf 12, CinfSubCmdGetSPodInfo 1).
const (
	dcmiMainCmdChipInf     = 12
	dcmiSubCmdChipSpodInfo = 1
	// dcmiSubCmdChipSpodNodeStatus is DCMI_CHIP_INF_SUB_CMD_SPOD_NODE_STATUS
	// (the next in the same enum), what dcmi_get_spod_node_status asks.
	dcmiSubCmdChipSpodNodeStatus = 2
)

// dcmiSpodNodeAbnormal is the SPOD_NODE_STATUS of an NPU the super pod's
// fabric calls abnormal: its peers release what they share with it by
// force (0 is normal: they negotiate; dcmi_get_spod_node_status in the
// 910_93 DCMI reference).
const dcmiSpodNodeAbnormal = 1

// dcmiSpodInvalid is the "invalid" value of a field: mind-cluster's
// InvalidSuperPodID and InvalidSuperPodSize ("all f -> not super pod",
// ascend-device-plugin pkg/common/constants_v2.go), -1 as a signed int.
const dcmiSpodInvalid = 0xFFFFFFFF

// dcmiSpodInfo is struct dcmi_spod_info (48 bytes).
type dcmiSpodInfo struct {
	SDID         uint32
	SuperPodSize uint32
	SuperPodID   uint32
	ServerIndex  uint32
	ChassisID    uint32
	SuperPodType uint32
	Reserve      [6]uint32
}

// sdidServerIndex is the server index an SDID carries: bits 22-31 ("22~31
// 比特表示server_index，取值范围0~47", the 910_93 DCMI reference,
// dcmi_get_device_info, DCMI_MAIN_CMD_CHIP_INF constraints).
func sdidServerIndex(sdid uint32) uint32 { return sdid >> 22 }

// maxServerIndex is the largest server index the reference allows.
const maxServerIndex = 47

// spodInfo asks DCMI for the chip's super-pod identity.
func (l *dcmiLib) spodInfo(c dcmiChip) (dcmiSpodInfo, error) {
	if l.v2 != nil {
		return l.v2SpodInfo(c)
	}
	var info dcmiSpodInfo
	err := l.chipInf(c, dcmiSubCmdChipSpodInfo, unsafe.Pointer(&info), uint32(unsafe.Sizeof(info)))
	return info, err
}

// chipInf asks DCMI's dcmi_get_device_info for a DCMI_MAIN_CMD_CHIP_INF
// sub-command of chip c into buf of size bytes.
func (l *dcmiLib) chipInf(c dcmiChip, sub uint32, buf unsafe.Pointer, size uint32) error {
	if l.getDeviceInfo == nil {
		return &DCMIError{Func: "dcmi_get_device_info", Code: dcmiErrFuncNotPresent}
	}
	return l.call("dcmi_get_device_info", func() int32 {
		return l.getDeviceInfo(int32(c.Card), int32(c.Device), dcmiMainCmdChipInf, sub, buf, &size)
	})
}

// spodNodeStatus asks DCMI what the super pod's fabric records of the NPU
// sdid, as dcmi_get_spod_node_status does: one 4-byte union, the SDID in
// and the status out (dcmi_get_spod_node_status in the driver source's
// DCMI, src/custom/dev_prod/user/dcmi).
func (l *dcmiLib) spodNodeStatus(c dcmiChip, sdid uint32) (uint32, error) {
	para := sdid
	err := l.chipInf(c, dcmiSubCmdChipSpodNodeStatus, unsafe.Pointer(&para), uint32(unsafe.Sizeof(para)))
	return para, err
}

// spodReader reads one chip's super-pod identity.
type spodReader func(ctx context.Context, c found) (dcmiSpodInfo, error)

// superPodOf reads every chip's identity and checks that they describe one
// super pod: every field valid, the server index the SDID's, and every
// chip the same super pod and server. It returns the identity by logic
// id, or nil where the node is in no super pod it can vouch for, with the
// reason logged once (a chip that answers "not supported" is simply none).
func (b *Backend) superPodOf(ctx context.Context, read spodReader, chips []found) (map[int]dcmiSpodInfo, error) {
	out := map[int]dcmiSpodInfo{}
	var first *dcmiSpodInfo
	for _, c := range chips {
		info, err := read(ctx, c)
		switch {
		case errors.Is(err, vendors.ErrLibraryWedged) || (err != nil && ctx.Err() != nil):
			return nil, fmt.Errorf("reading the super pod of NPU %d chip %d: %w", c.info.NPU, c.info.Chip, err)
		case notSupported(err):
			return nil, nil
		case err != nil:
			b.logOnce(ctx, "spod:"+err.Error(), "Cannot read the super pod of an Ascend chip, publishing none for the node", "npu", c.info.NPU, "chip", c.info.Chip, "err", err)
			return nil, nil
		}
		if field, bad := info.invalid(); bad {
			b.logOnce(ctx, "spod-invalid:"+field, "The super-pod identity of an Ascend chip is invalid, publishing none for the node",
				"npu", c.info.NPU, "chip", c.info.Chip, "field", field, "sdid", info.SDID, "superPodID", info.SuperPodID, "serverIndex", info.ServerIndex)
			return nil, nil
		}
		if first == nil {
			first = &info
		} else if field, differ := first.disagrees(info); differ {
			b.logOnce(ctx, "spod-disagree:"+field, "The node's Ascend chips disagree on their super pod, publishing none for the node",
				"npu", c.info.NPU, "chip", c.info.Chip, "field", field, "first", first.field(field), "this", info.field(field))
			return nil, nil
		}
		out[c.mapping.LogicID] = info
	}
	return out, nil
}

// dcmiSpodReader reads through DCMI.
func (b *Backend) dcmiSpodReader(_ context.Context, c found) (dcmiSpodInfo, error) {
	if c.dcmi == nil {
		return dcmiSpodInfo{}, fmt.Errorf("DCMI did not read NPU %d chip %d", c.info.NPU, c.info.Chip)
	}
	return b.lib.spodInfo(*c.dcmi)
}

// toolSpodReader reads `npu-smi info -t spod-info -i <NPU> -c <chip>`,
// which npu-smi serves for 910_93 and 950 chips only
// (npucli/src/npu_chip_info_ext.c:362-365).
func (b *Backend) toolSpodReader(ctx context.Context, c found) (dcmiSpodInfo, error) {
	return discovery.Query(ctx, b.runner, fmt.Sprintf("reading the super pod of NPU %d chip %d", c.info.NPU, c.info.Chip),
		parseSpodInfo, b.npuSmi, spodArgs(c.info)...)
}

func spodArgs(info ChipInfo) []string {
	return []string{"info", "-t", "spod-info", "-i", strconv.Itoa(info.NPU), "-c", strconv.Itoa(info.Chip)}
}

// parseSpodInfo reads `npu-smi info -t spod-info` of a 910_93 chip: "SDID",
// "Super Pod Size", "Super Pod ID", "Server Index", each "\t%-30s : %u"
// (npucli/src/npu_chip_info_ext.c:332-353, print_npu_spod_info).
func parseSpodInfo(source string, data []byte) (dcmiSpodInfo, error) {
	var info dcmiSpodInfo
	fields := map[string]*uint32{"sdid": &info.SDID, "super pod size": &info.SuperPodSize, "super pod id": &info.SuperPodID,
		"server index": &info.ServerIndex}
	seen := map[string]bool{}
	for l := range keyValueLines(data, ":") {
		p, ok := fields[strings.ToLower(l.Key)]
		if !l.HasSep || !ok {
			continue
		}
		v, err := strconv.ParseUint(l.Value, 10, 32)
		if err != nil {
			return info, &discovery.ParseError{Source: source, Line: l.No, Text: l.Text, Msg: l.Key + " is not an unsigned 32-bit number"}
		}
		*p, seen[strings.ToLower(l.Key)] = uint32(v), true
	}
	for _, k := range []string{"sdid", "super pod size", "super pod id", "server index"} {
		if !seen[k] {
			return info, &discovery.ParseError{Source: source, Msg: fmt.Sprintf("no %q line in the output", k)}
		}
	}
	return info, nil
}

// invalid names the first field that holds the "invalid" value, or whose
// server index is not the SDID's or out of range.
func (i dcmiSpodInfo) invalid() (string, bool) {
	switch {
	case i.SDID == dcmiSpodInvalid:
		return "sdid", true
	case i.SuperPodID == dcmiSpodInvalid:
		return "super_pod_id", true
	case i.SuperPodSize == dcmiSpodInvalid || i.SuperPodSize == 0:
		return "super_pod_size", true
	case i.ServerIndex == dcmiSpodInvalid || i.ServerIndex > maxServerIndex:
		return "server_index", true
	case sdidServerIndex(i.SDID) != i.ServerIndex:
		return "server_index (not bits 22-31 of sdid)", true
	}
	return "", false
}

// disagrees names a node-wide field in which o differs from i.
func (i dcmiSpodInfo) disagrees(o dcmiSpodInfo) (string, bool) {
	for _, f := range []string{"super_pod_id", "super_pod_size", "server_index"} {
		if i.field(f) != o.field(f) {
			return f, true
		}
	}
	return "", false
}

func (i dcmiSpodInfo) field(name string) uint32 {
	switch name {
	case "super_pod_id":
		return i.SuperPodID
	case "super_pod_size":
		return i.SuperPodSize
	case "server_index":
		return i.ServerIndex
	}
	return i.SDID
}

// setSuperPod publishes the super-pod identity on the node's chips (in the
// order of found) where the chips vouch for one: through DCMI where it read
// them, else through npu-smi where every chip is a 910_93 die (other chips
// have no super pod, and npu-smi refuses the query for them).
func (b *Backend) setSuperPod(ctx context.Context, found []found, chips []inventory.Chip) error {
	if len(found) == 0 {
		return nil
	}
	read, source := spodReader(b.dcmiSpodReader), ""
	if b.lib != nil {
		source = b.libName() + " " + b.lib.fn("dcmi_get_device_info") + " (CHIP_INF, SPOD_INFO)"
	} else {
		for _, c := range found {
			if c.info.Name != die91093Name {
				return nil
			}
		}
		read, source = b.toolSpodReader, ""
	}
	ids, err := b.superPodOf(ctx, read, found)
	if err != nil || ids == nil {
		return err
	}
	for i, c := range found {
		info := ids[c.mapping.LogicID]
		// The chip's own fields: pkg/resourceslices publishes them as the
		// fabric attributes, and the claim status and device-metadata file,
		// which rank tables are made from, read the same.
		sdid, server := int64(info.SDID), int64(info.ServerIndex)
		chips[i].SuperPod, chips[i].SuperDeviceID, chips[i].ServerIndex = strconv.FormatUint(uint64(info.SuperPodID), 10), &sdid, &server
		chips[i].Sources[SourceSuperPod] = source
		if source == "" {
			chips[i].Sources[SourceSuperPod] = b.command(spodArgs(c.info)...)
		}
	}
	// The 950's DCMI v2 documents no SPOD_NODE_STATUS (its reference and
	// dcmiv2 sources have no such call), so only v1 boards are asked.
	if b.lib != nil && b.lib.v2 == nil {
		b.markSuperPodLinks(ctx, found, chips, ids)
	}
	// Once per super pod and server: discovery runs at every health read.
	first := ids[found[0].mapping.LogicID]
	b.logOnce(ctx, fmt.Sprintf("spod-found:%d/%d", first.SuperPodID, first.ServerIndex), "The node's Ascend chips are in a super pod",
		"superPod", first.SuperPodID, "serverIndex", first.ServerIndex)
	return nil
}

// markSuperPodLinks marks a chip unhealthy, under its own taint
// (accel-dra.dev/superpod-link), where the super pod's fabric records its
// SDID as abnormal. A chip whose status cannot be read keeps its health:
// the status adds a fault, it never hides the chip. The node's super pod
// label does not change (pkg/fabric reads it once, at start).
func (b *Backend) markSuperPodLinks(ctx context.Context, found []found, chips []inventory.Chip, ids map[int]dcmiSpodInfo) {
	for i, c := range found {
		if c.dcmi == nil {
			continue
		}
		sdid := ids[c.mapping.LogicID].SDID
		status, err := b.lib.spodNodeStatus(*c.dcmi, sdid)
		if err != nil {
			b.logOnce(ctx, "spod-node-status:"+err.Error(), "Cannot read the super pod's status of an Ascend chip, leaving its health as it is",
				"npu", c.info.NPU, "chip", c.info.Chip, "sdid", sdid, "err", err)
			continue
		}
		if status == dcmiSpodNodeAbnormal {
			chips[i].MarkUnhealthy(inventory.ReasonSuperPodLinkAbnormal,
				fmt.Sprintf("the super pod's fabric reports NPU %d chip %d (SDID %d) abnormal (dcmi_get_spod_node_status %d)", c.info.NPU, c.info.Chip, sdid, status))
		}
	}
}

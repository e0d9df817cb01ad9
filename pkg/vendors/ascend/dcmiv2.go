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

// DCMI v2: how the Ascend 950 (A5) is read. Its library (the DCMI_VERSION_2
// build of libdcmi.so) refuses dcmi_init on a 950 board with "not
// supported" and initialises through dcmiv2_init, whose calls name a chip
// by its logic id alone (CANN driver source, verylucky01/driver e29d066,
// src/custom/dev_prod/user/dcmi/dcmi_init/src/dcmi_init_basic.c:1446-1452,
// 1490-1502; the prototypes of src/custom/include/dcmi_interface_api.h
// 2408-3083; docs/en/Ascend_950_DCMI_API). Huawei's own tools pick the API
// the same way: mind-cluster tries dcmi_init, then dcmiv2_init
// (ascend-common/devmanager/devmanager_common.go DetectDcmiApiVersion at
// 22bb3d98), and read a 950 by logic id (devmanager/dcmi/dcmi_v2.go). The
// mock library implements both (testdata/dcmi/mock_dcmiv2.c).

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// dcmiBoardInfo is struct dcmi_board_info (dcmi_interface_api.h:119-124).
type dcmiBoardInfo struct {
	BoardID uint32
	PCBID   uint32
	BOMID   uint32
	SlotID  uint32
}

// dcmiV2 are the v2 calls of a library that read the node's chips.
type dcmiV2 struct {
	init           func() int32
	getDeviceList  func(list *int32, n *int32, size int32) int32
	getPhyID       func(dev int32, phy *uint32) int32
	getChipInfo    func(dev int32, info *dcmiChipInfoV2) int32
	getHBMInfo     func(dev int32, info *dcmiHBMInfo) int32
	getPCIeInfo    func(dev int32, info *dcmiPCIeInfoAll) int32
	getHealth      func(dev int32, health *uint32) int32
	getErrorCodes  func(dev int32, count *int32, list *uint32, n uint32) int32
	getTopo        func(dev1, dev2 int32, topo *int32) int32
	getDeviceInfo  func(dev int32, mainCmd int32, subCmd uint32, buf unsafe.Pointer, size *uint32) int32
	getDriverVer   func(ver *byte, n uint32) int32
	getBoardInfo   func(dev int32, info *dcmiBoardInfo) int32
	getMainboardID func(dev int32, id *uint32) int32
	// The telemetry calls (Telemetry.Read).
	getUtilization func(dev, inputType int32, rate *uint32) int32
	getTemperature func(dev int32, celsius *int32) int32
	getPower       func(dev int32, deciWatts *int32) int32
}

// dcmiV2Names are the v2 calls by the v1 call each replaces, for Sources
// and messages.
var dcmiV2Names = map[string]string{
	"dcmi_get_card_list, dcmi_get_device_num_in_card": "dcmiv2_get_device_list",
	"dcmi_get_device_logic_id":                        "dcmiv2_get_device_list",
	"dcmi_get_device_chip_info_v2":                    "dcmiv2_get_device_chip_info",
	"dcmi_get_device_hbm_info":                        "dcmiv2_get_device_hbm_info",
	"dcmi_get_device_pcie_info_v2":                    "dcmiv2_get_device_pcie_info",
	"dcmi_get_device_health":                          "dcmiv2_get_device_health",
	"dcmi_get_device_errorcode_v2":                    "dcmiv2_get_device_error_code_list",
	"dcmi_get_topo_info_by_device_id":                 "dcmiv2_get_topo_info_by_device_id",
	"dcmi_get_device_info":                            "dcmiv2_get_device_info",
}

// fn names the call this library makes for the v1 call v1.
func (l *dcmiLib) fn(v1 string) string {
	if v2, ok := dcmiV2Names[v1]; ok && l.v2 != nil {
		return v2
	}
	return v1
}

// initV2 is what loadDCMI does when dcmi_init answers initErr: on a
// library with the v2 calls and a "not supported" from dcmi_init (a 950
// board), it binds them and calls dcmiv2_init; otherwise it returns
// initErr.
func (l *dcmiLib) initV2(h uintptr, initErr error) error {
	var d *DCMIError
	if !errors.As(initErr, &d) || d.Code != dcmiErrNotSupported {
		return initErr
	}
	v2 := &dcmiV2{}
	for _, f := range []struct {
		name     string
		fn       any
		optional bool
	}{
		{"dcmiv2_init", &v2.init, false},
		{"dcmiv2_get_device_list", &v2.getDeviceList, false},
		{"dcmiv2_get_chip_phy_id_by_dev_id", &v2.getPhyID, false},
		{"dcmiv2_get_device_chip_info", &v2.getChipInfo, false},
		{"dcmiv2_get_device_hbm_info", &v2.getHBMInfo, false},
		{"dcmiv2_get_device_pcie_info", &v2.getPCIeInfo, false},
		{"dcmiv2_get_device_health", &v2.getHealth, false},
		{"dcmiv2_get_device_error_code_list", &v2.getErrorCodes, false},
		{"dcmiv2_get_topo_info_by_device_id", &v2.getTopo, false},
		{"dcmiv2_get_device_info", &v2.getDeviceInfo, false},
		{"dcmiv2_get_driver_version", &v2.getDriverVer, true},
		{"dcmiv2_get_device_board_info", &v2.getBoardInfo, true},
		{"dcmiv2_get_mainboard_id", &v2.getMainboardID, true},
		{"dcmiv2_get_device_utilization_rate", &v2.getUtilization, true},
		{"dcmiv2_get_device_temperature", &v2.getTemperature, true},
		{"dcmiv2_get_device_power_info", &v2.getPower, true},
	} {
		if _, err := purego.Dlsym(h, f.name); err != nil {
			if f.optional {
				continue
			}
			// A v1-only library: dcmi_init's answer stands.
			return fmt.Errorf("%w (and the library has no DCMI v2 call %s)", initErr, f.name)
		}
		purego.RegisterLibFunc(f.fn, h, f.name)
	}
	if err := l.call("dcmiv2_init", v2.init); err != nil {
		return fmt.Errorf("%w; %w", initErr, err)
	}
	l.v2 = v2
	return nil
}

// v2Chips lists the chips by logic id. A chip's Card is its logic id and
// its Device 0, as npu-smi numbers a 950 (its NPU ID is the logic id:
// docs/en/Ascend_950_npu-smi, querying-the-device-mapping-information).
func (l *dcmiLib) v2Chips() ([]dcmiChip, []dcmiSkipped, error) {
	var n int32
	ids := make([]int32, dcmiMaxCards)
	if err := l.call("dcmiv2_get_device_list", func() int32 { return l.v2.getDeviceList(&ids[0], &n, int32(len(ids))) }); err != nil {
		return nil, nil, err
	}
	count, err := vendors.CheckCount("dcmiv2_get_device_list", "devices", int64(n), len(ids))
	if err != nil {
		return nil, nil, err
	}
	var (
		out     []dcmiChip
		skipped []dcmiSkipped
	)
	for _, id := range ids[:count] {
		c, err := l.v2Chip(id)
		switch {
		case errors.Is(err, vendors.ErrLibraryWedged):
			return nil, nil, fmt.Errorf("logic id %d: %w", id, err)
		case err != nil:
			skipped = append(skipped, dcmiSkipped{Card: int(id), Device: 0, Err: err})
		default:
			out = append(out, c)
		}
	}
	return out, skipped, nil
}

// v2Chip reads one chip: its physical id and name identify it, the rest
// marks it (Failed) rather than the node.
func (l *dcmiLib) v2Chip(id int32) (dcmiChip, error) {
	c := dcmiChip{Card: int(id), Logic: int(id)}
	var phy uint32
	if err := l.call("dcmiv2_get_chip_phy_id_by_dev_id", func() int32 { return l.v2.getPhyID(id, &phy) }); err != nil {
		return c, err
	}
	c.Phy = int(phy)
	var info dcmiChipInfoV2
	if err := l.call("dcmiv2_get_device_chip_info", func() int32 { return l.v2.getChipInfo(id, &info) }); err != nil {
		return c, err
	}
	c.Name, c.NPUName, c.AICores = cString(info.ChipName[:]), cString(info.NPUName[:]), int(info.AICoreCnt)
	c.Failed = l.v2ChipFacts(&c, id)
	if errors.Is(c.Failed, vendors.ErrLibraryWedged) {
		return c, c.Failed
	}
	return c, nil
}

// v2ChipFacts reads memory, PCI address and health. A 950 has HBM only
// (there is no v2 DDR call); its PCI address is "not supported" on the
// unified-bus boards (dcmiv2_basic_info_intf.c:257-259), which leaves it
// unknown.
func (l *dcmiLib) v2ChipFacts(c *dcmiChip, id int32) error {
	var hbm dcmiHBMInfo
	if err := l.call("dcmiv2_get_device_hbm_info", func() int32 { return l.v2.getHBMInfo(id, &hbm) }); err != nil {
		return err
	}
	c.MemoryMB, c.HBM = int64(hbm.MemorySize), true
	var pcie dcmiPCIeInfoAll
	if err := l.call("dcmiv2_get_device_pcie_info", func() int32 { return l.v2.getPCIeInfo(id, &pcie) }); err != nil {
		if !notSupported(err) {
			return err
		}
	} else {
		c.BusID = fmt.Sprintf("%04x:%02x:%02x.%x", uint32(pcie.Domain), pcie.BDFBusID, pcie.BDFDeviceID, pcie.BDFFuncID)
	}
	if err := l.call("dcmiv2_get_device_health", func() int32 { return l.v2.getHealth(id, &c.Health) }); err != nil {
		var d *DCMIError
		if errors.As(err, &d) && d.Code == dcmiErrNotReady {
			return fmt.Errorf("%w: %s", err, dcmiNotReady)
		}
		return err
	}
	return nil
}

// v2Topo returns the link between two chips. The v2 header is the current
// one, so its codes are dcmiCurrentTopo's (UB 8).
func (l *dcmiLib) v2Topo(a, b dcmiChip) (string, error) {
	var t int32
	if err := l.call("dcmiv2_get_topo_info_by_device_id", func() int32 {
		return l.v2.getTopo(int32(a.Logic), int32(b.Logic), &t)
	}); err != nil {
		return "", err
	}
	if t >= 0 && int(t) < len(dcmiStableTopoCodes) {
		return dcmiStableTopoCodes[t], nil
	}
	if name, ok := dcmiCurrentTopo[t]; ok {
		return name, nil
	}
	return "NA", nil
}

// v2SpodInfo asks for a chip's super-pod identity, as mind-cluster's
// DcV2Manager.DcGetSuperPodInfo does.
func (l *dcmiLib) v2SpodInfo(c dcmiChip) (dcmiSpodInfo, error) {
	var info dcmiSpodInfo
	size := uint32(unsafe.Sizeof(info))
	err := l.call("dcmiv2_get_device_info", func() int32 {
		return l.v2.getDeviceInfo(int32(c.Logic), dcmiMainCmdChipInf, dcmiSubCmdChipSpodInfo, unsafe.Pointer(&info), &size)
	})
	return info, err
}

// v2Board returns the board id and mainboard id of a chip's board.
func (l *dcmiLib) v2Board(c dcmiChip) (board, mainboard uint32, err error) {
	if l.v2.getBoardInfo == nil || l.v2.getMainboardID == nil {
		return 0, 0, &DCMIError{Func: "dcmiv2_get_device_board_info", Code: dcmiErrFuncNotPresent}
	}
	var info dcmiBoardInfo
	if err := l.call("dcmiv2_get_device_board_info", func() int32 { return l.v2.getBoardInfo(int32(c.Logic), &info) }); err != nil {
		return 0, 0, err
	}
	if err := l.call("dcmiv2_get_mainboard_id", func() int32 { return l.v2.getMainboardID(int32(c.Logic), &mainboard) }); err != nil {
		return 0, 0, err
	}
	return info.BoardID, mainboard, nil
}

// v2Telemetry reads one chip's figures as Telemetry.readChip reads them
// through v1, with the v2 calls by logic id (the 950 DCMI reference:
// dcmiv2_get_device_utilization_rate, _hbm_info, _temperature,
// _power_info, _health; mind-cluster DcV2Manager at 22bb3d98). A 950 has
// no vNPUs and no card MCU reading.
func (l *dcmiLib) v2Telemetry(logic int32, s *vendors.ChipSample) {
	if l.v2.getUtilization != nil {
		var rate uint32
		err := l.call("dcmiv2_get_device_utilization_rate", func() int32 { return l.v2.getUtilization(logic, dcmiUtilizationAICore, &rate) })
		setUtilization(s, "dcmiv2_get_device_utilization_rate", rate, err)
	}
	var hbm dcmiHBMInfo
	if err := l.call("dcmiv2_get_device_hbm_info", func() int32 { return l.v2.getHBMInfo(logic, &hbm) }); err != nil {
		s.Fail("dcmiv2_get_device_hbm_info", err)
	} else if hbm.MemorySize > 0 {
		s.MemoryTotalBytes = vendors.Value(float64(hbm.MemorySize) * dcmiMiB)
		s.MemoryUsedBytes = vendors.Value(float64(hbm.MemoryUsage) * dcmiMiB)
	}
	if l.v2.getTemperature != nil {
		var c int32
		err := l.call("dcmiv2_get_device_temperature", func() int32 { return l.v2.getTemperature(logic, &c) })
		setTemperature(s, "dcmiv2_get_device_temperature", c, err)
	}
	if l.v2.getPower != nil {
		var p int32
		switch err := l.call("dcmiv2_get_device_power_info", func() int32 { return l.v2.getPower(logic, &p) }); {
		case notSupported(err):
		case err != nil:
			s.Fail("dcmiv2_get_device_power_info", err)
		case p >= 0:
			s.PowerWatts = vendors.Value(float64(p) / 10)
		}
	}
	var health uint32
	if err := l.call("dcmiv2_get_device_health", func() int32 { return l.v2.getHealth(logic, &health) }); err != nil {
		s.Fail("dcmiv2_get_device_health", err)
	} else {
		ok := health == 0
		s.Healthy = &ok
	}
}

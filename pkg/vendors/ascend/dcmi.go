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

// The native backend: Huawei's DCMI library (libdcmi.so) loaded at run
// time, as Huawei's own device plugin, NPU exporter and DRA driver read
// the chips (docs/hardware.md#loading-dcmi). accel-dra loads it with
// purego instead of cgo, so the binaries stay CGO_ENABLED=0 and
// cross-build for arm64; the library itself needs the C runtime the image
// already carries (glibc, for npu-smi). docs/hardware.md says what is read
// from where.
//
// The Go structs mirror testdata/dcmi/dcmi.h, our declarations of the
// public header's structs; TestDCMILayoutMatchesTheCHeader compiles a C
// program against that header and compares every size and offset.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// die91093Name is the chip name DCMI and npu-smi give a 910_93 (A3) die.
const die91093Name = "Ascend910"

// DefaultDCMILibraries are where a node's libdcmi.so is looked for, under
// the host root, in order: /usr/local/dcmi is where the Ascend driver
// package puts it and what ascend-docker-runtime mounts into containers
// (its base.list); the driver's lib64/driver and lib64 are the driver
// library directories every Ascend container recipe puts on
// LD_LIBRARY_PATH (cdi.go LibraryDirs), where older driver packages
// keep their libraries.
var DefaultDCMILibraries = []string{
	"/usr/local/dcmi/libdcmi.so",
	"/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
	"/usr/local/Ascend/driver/lib64/libdcmi.so",
}

// LibraryFlagHelp describes --dcmi-library (node agent and discover).
const LibraryFlagHelp = `path of Huawei's DCMI library libdcmi.so, read through instead of npu-smi where it loads; default: the first of /usr/local/dcmi/libdcmi.so, /usr/local/Ascend/driver/lib64/driver/libdcmi.so, /usr/local/Ascend/driver/lib64/libdcmi.so under --root; "none" reads Ascend chips with npu-smi only`

// DCMI constants of dcmi.h.
const (
	dcmiMaxChipNameLen     = 32
	dcmiTemplateNameLen    = 32
	dcmiVDevResNameLen     = 16
	dcmiVDevForReserve     = 32
	dcmiVDevSize           = 20
	dcmiSocSplitMax        = 32
	dcmiMainCmdVDevMng     = 52
	dcmiSubCmdVDevRes      = 0
	dcmiSubCmdTotalRes     = 1
	dcmiSubCmdVDevActivity = 5 // DCMI_VMNG_SUB_CMD_GET_VDEV_ACTIVITY, dcmi_interface_api.h:824
	dcmiRoCEPort           = 1
	dcmiMaxErrorCodes      = 128   // mind-cluster MaxErrorCodeCount
	dcmiMaxCards           = 64    // mind-cluster HiAIMaxCardNum
	dcmiMaxDevicesInCard   = 4     // mind-cluster HiAIMaxDeviceNum (IsValidDeviceID: device id < 4)
	dcmiErrNotPermitted    = -8002 // DCMI_ERR_CODE_OPER_NOT_PERMITTED
	dcmiErrNotReady        = -8012 // DCMI_ERR_CODE_NOT_REDAY
	dcmiErrFileOperate     = -8014 // DCMI_ERR_CODE_FILE_OPERATE_FAIL
	dcmiErrOccupied        = -8020 // DCMI_ERR_CODE_RESOURCE_OCCUPIED
	dcmiErrNotSupported    = -8255
	dcmiErrFuncNotPresent  = -99998 // mind-cluster FuncNotFoundErrorCode
	// dcmiVFGIDAny as dcmi_create_vdevice's vfg_id lets the library pick
	// the vGroup: npu-smi passes it when create-vnpu has no -g (the CANN
	// driver source, npucli/src/npu_smi.c:83 vfg_id = NPU_INVALID_VALUE,
	// npu_chip_set.c:1397), as Huawei's device plugin does (mind-cluster
	// AscendTools.CreateVirtualDevice: VfgID common.DefaultIDForCreateVNPU).
	// 0 would pin every 310P vNPU to vGroup 0.
	dcmiVFGIDAny = 0xFFFFFFFF
)

// DCMI topology types (dcmi_get_topo_info_by_device_id), as npu-smi
// spells them. Only 0-5 mean the same in every driver generation; the
// values after them, and BUTT ("unknown"), which the library returns with
// rc 0 when its pair lookup fails (CANN driver source,
// dcmi/dcmi_interface/src/dcmi_npu_link_intf.c:431-436), moved:
//
//	910B API reference       6 BUTT
//	910_93 API reference     6 SIO, 7 HCCS_SW, 8 BUTT
//	current header           6 SIO, 7 HCCS_SW, 8 UB, 9 BUTT
//
// (docs/zh/Ascend_910B_DCMI_API/…/dcmi_get_topo_info_by_device_id.md,
// docs/zh/Ascend_910_93_DCMI_API/…/dcmi_get_topo_info_by_device_id.md and
// src/custom/include/dcmi_interface_api.h:1487-1496 of that source, whose
// driver packages are 25.3.rc1: scripts/package/custom/driver/ascend910B/
// scripts/version_cap.map). So the codes after 5 are read by the library's
// version: the current header's from 25.3.rc1 on; before it, or when the
// version is unknown, the 910_93 reference's on 910_93 dies and none
// elsewhere (a 910B's 6 is BUTT there). A code not in the table is "NA",
// which never joins chips into an HCCS group.
var (
	dcmiStableTopoCodes = []string{"X", "SYS", "PHB", "HCCS", "PXB", "PIX"}
	dcmiCurrentTopo     = map[int32]string{6: "SIO", 7: "HCCS_SW", 8: "UB"}
	dcmi91093Topo       = map[int32]string{6: "SIO", 7: "HCCS_SW"}
	// dcmiCurrentTopoSince is the first driver version with the current
	// header's codes.
	dcmiCurrentTopoSince = version.MustParseSemantic("25.3.0-rc1")
)

// dcmiMaxVersionLen is the driver version buffer (MAX_VER_LEN, 255, plus
// the NUL: dcmi_interface_api.h:29).
const dcmiMaxVersionLen = 256

type dcmiChipInfo struct {
	ChipType  [dcmiMaxChipNameLen]byte
	ChipName  [dcmiMaxChipNameLen]byte
	ChipVer   [dcmiMaxChipNameLen]byte
	AICoreCnt uint32
}

// dcmiChipInfoV2 is struct dcmi_chip_info_v2: dcmi_chip_info and the
// name of the NPU on the module (npu_name), which on a 910_93 die is what
// follows "910_" in the driver's own name of the chip ("9392" of
// "910_9392"), the chip name being "Ascend910"
// (dcmi/dcmi_inner/src/dcmi_inner_info_get.c:1257-1302, 1405-1415 of the
// driver source; dcmi_get_device_chip_info is this struct cut short,
// dcmi_basic_info_intf.c:1901-1931).
type dcmiChipInfoV2 struct {
	ChipType  [dcmiMaxChipNameLen]byte
	ChipName  [dcmiMaxChipNameLen]byte
	ChipVer   [dcmiMaxChipNameLen]byte
	AICoreCnt uint32
	NPUName   [dcmiMaxChipNameLen]byte
}

type dcmiPCIeInfoAll struct {
	VenderID    uint32
	SubVenderID uint32
	DeviceID    uint32
	SubDeviceID uint32
	Domain      int32
	BDFBusID    uint32
	BDFDeviceID uint32
	BDFFuncID   uint32
	Reserve     [32]byte
}

type dcmiHBMInfo struct {
	MemorySize       uint64
	Freq             uint32
	MemoryUsage      uint64
	Temp             int32
	BandwithUtilRate uint32
}

type dcmiMemoryInfo struct {
	MemorySize      uint64
	MemoryAvailable uint64
	Freq            uint32
	HugepageSize    uint64 // unsigned long (LP64)
	HugepagesTotal  uint64
	HugepagesFree   uint64
	Utiliza         uint32
	Reserve         [60]byte
}

type dcmiIPAddr struct {
	Addr   [16]byte // union { ip6[16]; ip4[4]; }
	IPType int32
}

type dcmiBaseResource struct {
	Token       uint64
	TokenMax    uint64
	TaskTimeout uint64
	VFGID       uint32
	VIPMode     uint8
	Reserved    [dcmiVDevForReserve - 1]byte
}

type dcmiComputingResource struct {
	AIC                   float32
	AIV                   float32
	DSA                   uint16
	RTSQ                  uint16
	ACSQ                  uint16
	CDQM                  uint16
	CCore                 uint16
	FFTS                  uint16
	SDMA                  uint16
	PCIeDMA               uint16
	MemorySize            uint64
	EventID               uint32
	NotifyID              uint32
	StreamID              uint32
	ModelID               uint32
	TopicScheduleAICPU    uint16
	HostCtrlCPU           uint16
	HostAICPU             uint16
	DeviceAICPU           uint16
	TopicCtrlCPUSlot      uint16
	VDevAICoreUtilization uint32
	VDevMemoryTotal       uint64
	VDevMemoryFree        uint64
	Reserved              [dcmiVDevForReserve - dcmiVDevSize]byte
}

type dcmiMediaResource struct {
	JPEGD    float32
	JPEGE    float32
	VPC      float32
	VDEC     float32
	PNGD     float32
	VENC     float32
	Reserved [dcmiVDevForReserve]byte
}

type dcmiCreateVDevOut struct {
	VDevID     uint32
	PCIeBus    uint32
	PCIeDevice uint32
	PCIeFunc   uint32
	VFGID      uint32
	Reserved   [dcmiVDevForReserve]byte
}

type dcmiCreateVDevResStru struct {
	VDevID       uint32
	VFGID        uint32
	TemplateName [dcmiTemplateNameLen]byte
	Reserved     [64]byte
}

type dcmiVDevQueryInfo struct {
	Name            [dcmiVDevResNameLen]byte
	Status          uint32
	IsContainerUsed uint32
	VFID            uint32
	VFGID           uint32
	ContainerID     uint64
	Base            dcmiBaseResource
	Computing       dcmiComputingResource
	Media           dcmiMediaResource
}

type dcmiVDevQueryStru struct {
	VDevID    uint32
	QueryInfo dcmiVDevQueryInfo
}

type dcmiSocTotalResource struct {
	VDevNum   uint32
	VDevID    [dcmiSocSplitMax]uint32
	VFGNum    uint32
	VFGBitmap uint32
	Base      dcmiBaseResource
	Computing dcmiComputingResource
	Media     dcmiMediaResource
}

// DCMIError is a DCMI call that returned non-zero.
type DCMIError struct {
	Func string
	Code int32
}

func (e *DCMIError) Error() string {
	switch e.Code {
	case dcmiErrNotSupported:
		return fmt.Sprintf("%s: not supported by this chip or driver (%d)", e.Func, e.Code)
	case dcmiErrFuncNotPresent:
		return fmt.Sprintf("%s: the library has no such function", e.Func)
	}
	return fmt.Sprintf("%s returned %d", e.Func, e.Code)
}

// notSupported tells whether err says the chip, driver or library cannot
// answer the call at all (rather than failing it).
func notSupported(err error) bool {
	var d *DCMIError
	return errors.As(err, &d) && (d.Code == dcmiErrNotSupported || d.Code == dcmiErrFuncNotPresent)
}

// dcmiLib is a loaded libdcmi.so. DCMI is not documented as thread-safe:
// calls runs its calls one at a time, each with a deadline (a hung call
// wedges the library, and the calls after it fail at once).
type dcmiLib struct {
	path  string
	calls vendors.LibraryCalls

	init                func() int32
	getCardList         func(num *int32, list *int32, n int32) int32
	getDeviceNumInCard  func(card int32, num *int32) int32
	getDeviceLogicID    func(logic *int32, card, dev int32) int32
	getPhyIDFromLogicID func(logic uint32, phy *uint32) int32
	getChipInfo         func(card, dev int32, info *dcmiChipInfo) int32
	getChipInfoV2       func(card, dev int32, info *dcmiChipInfoV2) int32
	getHBMInfo          func(card, dev int32, info *dcmiHBMInfo) int32
	getMemoryInfoV3     func(card, dev int32, info *dcmiMemoryInfo) int32
	getPCIeInfoV2       func(card, dev int32, info *dcmiPCIeInfoAll) int32
	getHealth           func(card, dev int32, health *uint32) int32
	getErrorCodeV2      func(card, dev int32, count *int32, list *uint32, n uint32) int32
	// Optional: older libraries lack them.
	getTopo        func(card1, dev1, card2, dev2 int32, topo *int32) int32
	getDeviceIP    func(card, dev int32, port int32, portID int32, ip, mask *dcmiIPAddr) int32
	getDeviceInfo  func(card, dev int32, mainCmd int32, subCmd uint32, buf unsafe.Pointer, size *uint32) int32
	createVDevice  func(card, dev int32, vdev *dcmiCreateVDevResStru, out *dcmiCreateVDevOut) int32
	destroyVDevice func(card, dev int32, id uint32) int32
	getVDevMode    func(mode *int32) int32
	getDriverVer   func(ver *byte, n uint32) int32

	// version is the driver version the library reports, semantic; nil
	// when it cannot tell.
	version *version.Version
	// v2 are the DCMI v2 calls where dcmi_init refused the board and
	// dcmiv2_init took it (an Ascend 950, dcmiv2.go); nil otherwise.
	v2 *dcmiV2
}

// dlopen is purego.Dlopen, a variable for the tests of the fallback.
var dlopen = purego.Dlopen

// loadDCMI opens the library at path and binds its functions; it fails
// when the file is not a loadable library or lacks a function discovery
// needs.
func loadDCMI(path string, timeout time.Duration) (*dcmiLib, error) {
	if timeout <= 0 {
		timeout = vendors.DefaultLibraryCallTimeout
	}
	h, err := dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	l := &dcmiLib{path: path, calls: vendors.LibraryCalls{Library: path, Timeout: timeout}}
	for _, f := range []struct {
		name     string
		fn       any
		optional bool
	}{
		{"dcmi_init", &l.init, false},
		{"dcmi_get_card_list", &l.getCardList, false},
		{"dcmi_get_device_num_in_card", &l.getDeviceNumInCard, false},
		{"dcmi_get_device_logic_id", &l.getDeviceLogicID, false},
		{"dcmi_get_device_phyid_from_logicid", &l.getPhyIDFromLogicID, false},
		{"dcmi_get_device_chip_info", &l.getChipInfo, false},
		{"dcmi_get_device_hbm_info", &l.getHBMInfo, false},
		{"dcmi_get_device_memory_info_v3", &l.getMemoryInfoV3, false},
		{"dcmi_get_device_pcie_info_v2", &l.getPCIeInfoV2, false},
		{"dcmi_get_device_health", &l.getHealth, false},
		{"dcmi_get_device_errorcode_v2", &l.getErrorCodeV2, false},
		{"dcmi_get_device_chip_info_v2", &l.getChipInfoV2, true},
		{"dcmi_get_topo_info_by_device_id", &l.getTopo, true},
		{"dcmi_get_device_ip", &l.getDeviceIP, true},
		{"dcmi_get_device_info", &l.getDeviceInfo, true},
		{"dcmi_create_vdevice", &l.createVDevice, true},
		{"dcmi_set_destroy_vdevice", &l.destroyVDevice, true},
		{"dcmi_get_vdevice_mode", &l.getVDevMode, true},
		{"dcmi_get_driver_version", &l.getDriverVer, true},
	} {
		if _, err := purego.Dlsym(h, f.name); err != nil {
			if f.optional {
				continue
			}
			return nil, fmt.Errorf("loading %s: no function %s: %w", path, f.name, err)
		}
		purego.RegisterLibFunc(f.fn, h, f.name)
	}
	if err := l.call("dcmi_init", l.init); err != nil {
		if err := l.initV2(h, err); err != nil {
			return nil, fmt.Errorf("loading %s: %w", path, err)
		}
	}
	l.version = l.driverVersion()
	return l, nil
}

// driverVersion asks the library for the driver's version; nil when it
// has no such call or cannot tell.
func (l *dcmiLib) driverVersion() *version.Version {
	name, get := "dcmi_get_driver_version", l.getDriverVer
	if l.v2 != nil {
		name, get = "dcmiv2_get_driver_version", l.v2.getDriverVer
	}
	if get == nil {
		return nil
	}
	buf := make([]byte, dcmiMaxVersionLen)
	if err := l.call(name, func() int32 { return get(&buf[0], uint32(len(buf))) }); err != nil {
		return nil
	}
	s, err := discovery.SemverFromVendor(cString(buf))
	if err != nil {
		return nil
	}
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil
	}
	return v
}

// topoCode names a topology type of this library's generation (see
// dcmiStableTopoCodes); "NA" for a code it does not know.
func (l *dcmiLib) topoCode(t int32, die91093 bool) string {
	if t >= 0 && int(t) < len(dcmiStableTopoCodes) {
		return dcmiStableTopoCodes[t]
	}
	table := map[int32]string(nil)
	switch {
	case l.version != nil && l.version.AtLeast(dcmiCurrentTopoSince):
		table = dcmiCurrentTopo
	case die91093:
		table = dcmi91093Topo
	}
	if name, ok := table[t]; ok {
		return name
	}
	return "NA"
}

// findDCMI returns the library to load: the configured path, or the
// first default path that exists under root; "" when there is none.
func findDCMI(root, configured string) string {
	if configured != "" {
		return configured
	}
	for _, p := range DefaultDCMILibraries {
		full := filepath.Join(root, p)
		if st, err := os.Stat(full); err == nil && st.Mode().IsRegular() {
			return full
		}
	}
	return ""
}

// call makes one DCMI call: an error for a non-zero return code, or when
// the call did not return in time (vendors.ErrLibraryWedged).
func (l *dcmiLib) call(name string, f func() int32) error {
	rc, err := l.calls.Do(name, f)
	if err != nil {
		return err
	}
	if rc != 0 {
		return &DCMIError{Func: name, Code: rc}
	}
	return nil
}

// dcmiChip is one chip as DCMI reports it.
type dcmiChip struct {
	Card, Device, Logic, Phy int
	Name                     string
	// NPUName is dcmi_chip_info_v2's npu_name: the 910_93 die's variant
	// ("9392"); "" where the library has no such call.
	NPUName  string
	AICores  int
	MemoryMB int64
	HBM      bool
	BusID    string
	Health   uint32
	// Failed is a call that failed for this chip after the calls that
	// identify it (logic and physical id, name) answered: the chip is
	// published unhealthy (inventory.ReasonLibraryError), the node's
	// other chips as they are.
	Failed error
}

// dcmiSkipped is a chip, or a card, whose identifying calls failed: it is
// left out, with a log line naming the call and its code.
type dcmiSkipped struct {
	Card, Device int // Device -1: the whole card
	Err          error
}

// dcmiNotReady says what -8012 (DCMI_ERR_CODE_NOT_REDAY) from a chip's
// health means: Huawei's device plugin takes it as the chip dropping off
// the card (mind-cluster devmanager: a health query answering "device not
// ready" marks the chip unhealthy), the driver source returns it for a
// device whose state is not ready (dcmi_interface_api.h:1985,
// dcmi/dcmi_interface/src/dcmi_basic_info_intf.c:61).
const dcmiNotReady = "the chip dropped off the card (device not ready)"

// chips lists the NPU chips of every card. One card's or chip's failing
// call never hides the others: the chip is returned with Failed set, or
// left out in the second list; only a failing card list is an error.
func (l *dcmiLib) chips() ([]dcmiChip, []dcmiSkipped, error) {
	if l.v2 != nil {
		return l.v2Chips()
	}
	var n int32
	cards := make([]int32, dcmiMaxCards)
	if err := l.call("dcmi_get_card_list", func() int32 { return l.getCardList(&n, &cards[0], int32(len(cards))) }); err != nil {
		return nil, nil, err
	}
	ncards, err := vendors.CheckCount("dcmi_get_card_list", "cards", int64(n), len(cards))
	if err != nil {
		return nil, nil, err
	}
	var (
		out     []dcmiChip
		skipped []dcmiSkipped
	)
	for _, card := range cards[:ncards] {
		var n int32
		if err := l.call("dcmi_get_device_num_in_card", func() int32 { return l.getDeviceNumInCard(card, &n) }); err != nil {
			if errors.Is(err, vendors.ErrLibraryWedged) {
				return nil, nil, fmt.Errorf("card %d: %w", card, err)
			}
			skipped = append(skipped, dcmiSkipped{Card: int(card), Device: -1, Err: err})
			continue
		}
		devs, err := vendors.CheckCount("dcmi_get_device_num_in_card", "devices", int64(n), dcmiMaxDevicesInCard)
		if err != nil {
			return nil, nil, fmt.Errorf("card %d: %w", card, err)
		}
		for dev := range int32(devs) {
			c, err := l.chip(card, dev)
			switch {
			case errors.Is(err, vendors.ErrLibraryWedged):
				return nil, nil, fmt.Errorf("card %d device %d: %w", card, dev, err)
			case err != nil:
				skipped = append(skipped, dcmiSkipped{Card: int(card), Device: int(dev), Err: err})
			default:
				out = append(out, c)
			}
		}
	}
	return out, skipped, nil
}

func (l *dcmiLib) chip(card, dev int32) (dcmiChip, error) {
	c := dcmiChip{Card: int(card), Device: int(dev)}
	var logic int32
	if err := l.call("dcmi_get_device_logic_id", func() int32 { return l.getDeviceLogicID(&logic, card, dev) }); err != nil {
		return c, err
	}
	var phy uint32
	if err := l.call("dcmi_get_device_phyid_from_logicid", func() int32 { return l.getPhyIDFromLogicID(uint32(logic), &phy) }); err != nil {
		return c, err
	}
	c.Logic, c.Phy = int(logic), int(phy)
	info, err := l.chipInfo(card, dev)
	if err != nil {
		return c, err
	}
	c.Name, c.NPUName, c.AICores = cString(info.ChipName[:]), cString(info.NPUName[:]), int(info.AICoreCnt)
	// The chip is known from here on: a failing call marks it, not the node.
	c.Failed = l.chipFacts(&c, card, dev)
	if errors.Is(c.Failed, vendors.ErrLibraryWedged) {
		// A hung call wedges the library for every chip: the node's
		// problem, not this chip's.
		return c, c.Failed
	}
	return c, nil
}

// chipInfo is the chip's dcmi_chip_info_v2, as mind-cluster's
// DcGetChipInfo asks for it (devmanager/dcmi/dcmi.go at 22bb3d98: v2
// first, then dcmi_get_device_chip_info), without npu_name where the
// library lacks the v2 call or refuses it.
func (l *dcmiLib) chipInfo(card, dev int32) (dcmiChipInfoV2, error) {
	var info dcmiChipInfoV2
	if l.getChipInfoV2 != nil {
		err := l.call("dcmi_get_device_chip_info_v2", func() int32 { return l.getChipInfoV2(card, dev, &info) })
		if err == nil || errors.Is(err, vendors.ErrLibraryWedged) {
			return info, err
		}
	}
	var v1 dcmiChipInfo
	err := l.call("dcmi_get_device_chip_info", func() int32 { return l.getChipInfo(card, dev, &v1) })
	return dcmiChipInfoV2{ChipType: v1.ChipType, ChipName: v1.ChipName, ChipVer: v1.ChipVer, AICoreCnt: v1.AICoreCnt}, err
}

// chipInfoCall names the call chipInfo reads a chip's name with.
func (l *dcmiLib) chipInfoCall() string {
	if l.v2 != nil {
		return "dcmiv2_get_device_chip_info"
	}
	if l.getChipInfoV2 != nil {
		return "dcmi_get_device_chip_info_v2"
	}
	return "dcmi_get_device_chip_info"
}

// chipFacts reads what DCMI says of an identified chip: memory, PCI
// address, health. It returns the first call that failed.
func (l *dcmiLib) chipFacts(c *dcmiChip, card, dev int32) error {
	var hbm dcmiHBMInfo
	err := l.call("dcmi_get_device_hbm_info", func() int32 { return l.getHBMInfo(card, dev, &hbm) })
	switch {
	case err == nil && hbm.MemorySize > 0:
		c.MemoryMB, c.HBM = int64(hbm.MemorySize), true
	case err == nil || notSupported(err):
		// No HBM (310P): the chip's DDR is its device memory.
		var mem dcmiMemoryInfo
		if err := l.call("dcmi_get_device_memory_info_v3", func() int32 { return l.getMemoryInfoV3(card, dev, &mem) }); err != nil {
			return err
		}
		c.MemoryMB = int64(mem.MemorySize)
	default:
		return err
	}
	var pcie dcmiPCIeInfoAll
	if err := l.call("dcmi_get_device_pcie_info_v2", func() int32 { return l.getPCIeInfoV2(card, dev, &pcie) }); err != nil {
		if !notSupported(err) {
			return err
		}
	} else {
		c.BusID = fmt.Sprintf("%04x:%02x:%02x.%x", uint32(pcie.Domain), pcie.BDFBusID, pcie.BDFDeviceID, pcie.BDFFuncID)
	}
	if err := l.call("dcmi_get_device_health", func() int32 { return l.getHealth(card, dev, &c.Health) }); err != nil {
		var d *DCMIError
		if errors.As(err, &d) && d.Code == dcmiErrNotReady {
			return fmt.Errorf("%w: %s", err, dcmiNotReady)
		}
		return err
	}
	return nil
}

// errorCodes returns a chip's current error codes.
func (l *dcmiLib) errorCodes(card, dev int) ([]uint32, error) {
	name, get := "dcmi_get_device_errorcode_v2", func(n *int32, list *uint32, size uint32) int32 {
		return l.getErrorCodeV2(int32(card), int32(dev), n, list, size)
	}
	if l.v2 != nil {
		// A v2 chip's Card is its logic id.
		name, get = "dcmiv2_get_device_error_code_list", func(n *int32, list *uint32, size uint32) int32 {
			return l.v2.getErrorCodes(int32(card), n, list, size)
		}
	}
	var n int32
	codes := make([]uint32, dcmiMaxErrorCodes)
	if err := l.call(name, func() int32 { return get(&n, &codes[0], uint32(len(codes))) }); err != nil {
		return nil, err
	}
	if n < 0 || int(n) > len(codes) {
		return nil, fmt.Errorf("%s counts %d codes", name, n)
	}
	return codes[:n], nil
}

// topo returns the connection code between two chips, as npu-smi spells
// it.
func (l *dcmiLib) topo(a, b dcmiChip) (string, error) {
	if l.v2 != nil {
		return l.v2Topo(a, b)
	}
	if l.getTopo == nil {
		return "", &DCMIError{Func: "dcmi_get_topo_info_by_device_id", Code: dcmiErrFuncNotPresent}
	}
	var t int32
	if err := l.call("dcmi_get_topo_info_by_device_id", func() int32 {
		return l.getTopo(int32(a.Card), int32(a.Device), int32(b.Card), int32(b.Device), &t)
	}); err != nil {
		return "", err
	}
	return l.topoCode(t, a.Name == die91093Name), nil
}

// deviceIP returns the address of the chip's RoCE port 0 in CIDR form, ""
// where it has none.
func (l *dcmiLib) deviceIP(c dcmiChip) (string, error) {
	// DCMI v2 has no such call (mind-cluster DcV2Manager.DcGetDeviceIPAddress:
	// "dcmiv2_get_device_ip is no longer supported").
	if l.getDeviceIP == nil || l.v2 != nil {
		return "", nil
	}
	var ip, mask dcmiIPAddr
	err := l.call("dcmi_get_device_ip", func() int32 {
		return l.getDeviceIP(int32(c.Card), int32(c.Device), dcmiRoCEPort, 0, &ip, &mask)
	})
	if notSupported(err) {
		return "", nil
	}
	if err != nil || ip.IPType != 0 {
		return "", err
	}
	ones := 0
	for _, b := range mask.Addr[:4] {
		for ; b != 0; b <<= 1 {
			ones++
		}
	}
	if ip.Addr == [16]byte{} {
		return "", nil
	}
	return fmt.Sprintf("%d.%d.%d.%d/%d", ip.Addr[0], ip.Addr[1], ip.Addr[2], ip.Addr[3], ones), nil
}

// vnpus lists the vNPUs of a chip: id → template name.
func (l *dcmiLib) vnpus(card, dev int) (map[int]string, error) {
	if l.getDeviceInfo == nil {
		return nil, &DCMIError{Func: "dcmi_get_device_info", Code: dcmiErrFuncNotPresent}
	}
	var total dcmiSocTotalResource
	size := uint32(unsafe.Sizeof(total))
	if err := l.call("dcmi_get_device_info(VDEV_MNG, GET_TOTAL_RESOURCE)", func() int32 {
		return l.getDeviceInfo(int32(card), int32(dev), dcmiMainCmdVDevMng, dcmiSubCmdTotalRes, unsafe.Pointer(&total), &size)
	}); err != nil {
		return nil, err
	}
	if total.VDevNum > dcmiSocSplitMax {
		return nil, fmt.Errorf("dcmi_get_device_info counts %d vNPUs, at most %d fit", total.VDevNum, dcmiSocSplitMax)
	}
	out := map[int]string{}
	for _, id := range total.VDevID[:total.VDevNum] {
		q := dcmiVDevQueryStru{VDevID: id}
		size := uint32(unsafe.Sizeof(q))
		if err := l.call("dcmi_get_device_info(VDEV_MNG, GET_VDEV_RESOURCE)", func() int32 {
			return l.getDeviceInfo(int32(card), int32(dev), dcmiMainCmdVDevMng, dcmiSubCmdVDevRes, unsafe.Pointer(&q), &size)
		}); err != nil {
			return nil, fmt.Errorf("vNPU %d: %w", id, err)
		}
		out[int(id)] = cString(q.QueryInfo.Name[:])
	}
	return out, nil
}

// createVNPU creates vNPU id from template on a chip.
func (l *dcmiLib) createVNPU(card, dev, id int, template string) (int, error) {
	if l.createVDevice == nil {
		return 0, &DCMIError{Func: "dcmi_create_vdevice", Code: dcmiErrFuncNotPresent}
	}
	if len(template) >= dcmiTemplateNameLen {
		return 0, fmt.Errorf("template name %q is longer than DCMI's %d bytes", template, dcmiTemplateNameLen-1)
	}
	in := dcmiCreateVDevResStru{VDevID: uint32(id), VFGID: dcmiVFGIDAny}
	copy(in.TemplateName[:], template)
	var out dcmiCreateVDevOut
	if err := l.call("dcmi_create_vdevice", func() int32 { return l.createVDevice(int32(card), int32(dev), &in, &out) }); err != nil {
		return 0, err
	}
	return int(out.VDevID), nil
}

// vdeviceMode returns the node's vNPU mode as npu-smi names it (docker,
// vm). The library refuses the query (-8002) in a container, except for
// 910B in a privileged one (the CANN driver source,
// dcmi/dcmi_interface/src/dcmi_virtual_intf.c:1055-1085).
func (l *dcmiLib) vdeviceMode() (string, error) {
	if l.getVDevMode == nil {
		return "", &DCMIError{Func: "dcmi_get_vdevice_mode", Code: dcmiErrFuncNotPresent}
	}
	var mode int32
	if err := l.call("dcmi_get_vdevice_mode", func() int32 { return l.getVDevMode(&mode) }); err != nil {
		return "", err
	}
	switch mode {
	case 0:
		return VNPUModeDocker, nil
	case 1:
		return "vm", nil
	}
	return fmt.Sprintf("mode %d", mode), nil
}

// destroyVNPU destroys vNPU id of a chip.
func (l *dcmiLib) destroyVNPU(card, dev, id int) error {
	if l.destroyVDevice == nil {
		return &DCMIError{Func: "dcmi_set_destroy_vdevice", Code: dcmiErrFuncNotPresent}
	}
	return l.call("dcmi_set_destroy_vdevice", func() int32 { return l.destroyVDevice(int32(card), int32(dev), uint32(id)) })
}

// cString is a NUL-terminated C string in a fixed-size field.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

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

// Telemetry: each chip's AI core utilization, memory, temperature, power
// and health through DCMI, with the calls and units of Huawei's own NPU
// exporter (Ascend/mind-cluster@22bb3d98,
// component/ascend-common/devmanager/dcmi/dcmi.go: DcGetDevicePowerInfo
// line 1409, DcGetDeviceUtilizationRate line 1594, DcGetDeviceTemperature
// line 1670; prototypes in dcmi_interface_api.h lines 604, 611, 621-627).
// Without libdcmi.so the same quantities come from the `npu-smi info`
// table (AICore(%), HBM- or Memory-Usage(MB), Temp(C), Power(W)).

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// dcmiUtilizationAICore is dcmi_get_device_utilization_rate's input_type
// of the AI cores (mind-cluster devmanager/common/constants.go: AICore =
// DeviceType{Code: 2}), what npu-smi's AICore(%) column shows.
const dcmiUtilizationAICore = 2

// minTemperatureCelsius is mind-cluster's DefaultTemperatureWhenQueryFailed
// (devmanager/common/constants.go:146): a reading below it is no reading.
const minTemperatureCelsius = -275

// dcmiMiB is one MiB: DCMI reports memory in MB (MiB).
const dcmiMiB = 1 << 20

// NewTelemetry implements vendors.Vendor.
func (Ascend) NewTelemetry(cfg vendors.BackendConfig) vendors.Telemetry {
	return &Telemetry{b: New(Config{Root: cfg.Root, Runner: cfg.Runner, Library: cfg.Library, Opened: cfg.Opened})}
}

// Telemetry reads Ascend chips through DCMI (vendors.Telemetry).
type Telemetry struct {
	b *Backend

	bindOnce sync.Once
	// The telemetry calls, nil where the library lacks one.
	utilization func(card, dev, inputType int32, rate *uint32) int32
	temperature func(card, dev int32, celsius *int32) int32
	power       func(card, dev int32, deciWatts *int32) int32
	mcuPower    func(card int32, deciWatts *int32) int32

	mu sync.Mutex
	// where maps a logic id to the chip's card and device id (DCMI),
	// toolIDs to its NPU and chip id (npu-smi).
	where   map[int][2]int32
	toolIDs map[int][2]int
}

var _ vendors.Telemetry = (*Telemetry)(nil)

// Read implements vendors.Telemetry.
func (t *Telemetry) Read(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	lib := t.b.library(ctx)
	if lib == nil {
		return t.readNpuSmi(ctx, chips)
	}
	if lib.v2 != nil {
		// A 950: by logic id through DCMI v2 (dcmiv2.go).
		return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
			lib.v2Telemetry(int32(logicIDOf(c)), s)
		}), nil
	}
	t.bindOnce.Do(func() { t.bind(ctx, lib) })
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		logic := logicIDOf(c)
		addr, err := t.address(lib, logic)
		if err != nil {
			s.Fail("dcmi_get_device_logic_id", err)
			return
		}
		t.readChip(lib, addr[0], addr[1], s)
	}), nil
}

// setUtilization records the AI core utilization call read, or why not.
func setUtilization(s *vendors.ChipSample, call string, rate uint32, err error) {
	switch {
	case err != nil:
		s.Fail(call, err)
	case rate > 100:
		// mind-cluster's IsValidUtilizationRate refuses these too.
		s.Fail(call, fmt.Errorf("utilization %d%% is out of range", rate))
	default:
		s.UtilizationRatio = vendors.Value(float64(rate) / 100)
	}
}

// setTemperature records the temperature call read, or why not.
func setTemperature(s *vendors.ChipSample, call string, c int32, err error) {
	switch {
	case err != nil:
		s.Fail(call, err)
	case c < minTemperatureCelsius:
		// mind-cluster's DcGetDeviceTemperature refuses these too
		// (devmanager/dcmi/dcmi.go:1680-1684 at 22bb3d98).
		s.Fail(call, fmt.Errorf("temperature %d °C is below %d °C", c, minTemperatureCelsius))
	default:
		s.TemperatureCelsius = vendors.Value(float64(c))
	}
}

// logicIDOf is a chip's logic id: its logicId attribute, else its index.
func logicIDOf(c inventory.Chip) int {
	if v, ok := c.Extra[ExtraLogicID]; ok && v.Int != nil {
		return int(*v.Int)
	}
	return c.Index
}

// bind looks up the telemetry calls in the loaded library; older
// libraries may lack one, whose quantity is then absent.
func (t *Telemetry) bind(ctx context.Context, lib *dcmiLib) {
	h, err := dlopen(lib.path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot bind DCMI's telemetry calls, Ascend chips report no utilization, temperature or power", "path", lib.path, "err", err)
		return
	}
	for _, f := range []struct {
		name string
		fn   any
	}{
		{"dcmi_get_device_utilization_rate", &t.utilization},
		{"dcmi_get_device_temperature", &t.temperature},
		{"dcmi_get_device_power_info", &t.power},
		{"dcmi_mcu_get_power_info", &t.mcuPower},
	} {
		if _, err := purego.Dlsym(h, f.name); err == nil {
			purego.RegisterLibFunc(f.fn, h, f.name)
		}
	}
}

// address returns the card and device id of the chip with logic id,
// listing the cards again when it is not known yet (a chip added since).
func (t *Telemetry) address(lib *dcmiLib, logic int) ([2]int32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.where[logic]; ok {
		return a, nil
	}
	var n int32
	cards := make([]int32, dcmiMaxCards)
	if err := lib.call("dcmi_get_card_list", func() int32 { return lib.getCardList(&n, &cards[0], int32(len(cards))) }); err != nil {
		return [2]int32{}, err
	}
	if n < 0 || int(n) > len(cards) {
		return [2]int32{}, fmt.Errorf("dcmi_get_card_list counts %d cards", n)
	}
	t.where = map[int][2]int32{}
	for _, card := range cards[:n] {
		var devs int32
		if err := lib.call("dcmi_get_device_num_in_card", func() int32 { return lib.getDeviceNumInCard(card, &devs) }); err != nil {
			return [2]int32{}, fmt.Errorf("card %d: %w", card, err)
		}
		for dev := int32(0); dev < devs; dev++ {
			var l int32
			if err := lib.call("dcmi_get_device_logic_id", func() int32 { return lib.getDeviceLogicID(&l, card, dev) }); err != nil {
				return [2]int32{}, fmt.Errorf("card %d device %d: %w", card, dev, err)
			}
			t.where[int(l)] = [2]int32{card, dev}
		}
	}
	if a, ok := t.where[logic]; ok {
		return a, nil
	}
	return [2]int32{}, fmt.Errorf("no chip with logic id %d on the node", logic)
}

// readChip fills s with what DCMI says of the chip at card, dev; a failing
// call leaves its quantity unset and is recorded in s.Errors.
func (t *Telemetry) readChip(lib *dcmiLib, card, dev int32, s *vendors.ChipSample) {
	if t.utilization != nil {
		var rate uint32
		err := lib.call("dcmi_get_device_utilization_rate", func() int32 {
			return t.utilization(card, dev, dcmiUtilizationAICore, &rate)
		})
		setUtilization(s, "dcmi_get_device_utilization_rate", rate, err)
	}
	var hbm dcmiHBMInfo
	err := lib.call("dcmi_get_device_hbm_info", func() int32 { return lib.getHBMInfo(card, dev, &hbm) })
	switch {
	case err == nil && hbm.MemorySize > 0:
		s.MemoryTotalBytes = vendors.Value(float64(hbm.MemorySize) * dcmiMiB)
		s.MemoryUsedBytes = vendors.Value(float64(hbm.MemoryUsage) * dcmiMiB)
	case err == nil || notSupported(err):
		// No HBM (310P): its DDR is the device memory, as in discovery.
		var mem dcmiMemoryInfo
		if err := lib.call("dcmi_get_device_memory_info_v3", func() int32 { return lib.getMemoryInfoV3(card, dev, &mem) }); err != nil {
			s.Fail("dcmi_get_device_memory_info_v3", err)
		} else if mem.MemoryAvailable <= mem.MemorySize {
			s.MemoryTotalBytes = vendors.Value(float64(mem.MemorySize) * dcmiMiB)
			s.MemoryUsedBytes = vendors.Value(float64(mem.MemorySize-mem.MemoryAvailable) * dcmiMiB)
		}
	default:
		s.Fail("dcmi_get_device_hbm_info", err)
	}
	if t.temperature != nil {
		var c int32
		err := lib.call("dcmi_get_device_temperature", func() int32 { return t.temperature(card, dev, &c) })
		setTemperature(s, "dcmi_get_device_temperature", c, err)
	}
	t.readPower(lib, card, dev, s)
	var health uint32
	if err := lib.call("dcmi_get_device_health", func() int32 { return lib.getHealth(card, dev, &health) }); err != nil {
		s.Fail("dcmi_get_device_health", err)
	} else {
		ok := health == 0
		s.Healthy = &ok
	}
	t.readVNPUs(lib, card, dev, s)
}

// readPower reads the chip's power, or where the chip has none of its own
// the card's. A 310P chip has no figure (the driver answers "not
// supported", npu-smi prints NA, npu_info_print.c:245-251): its card's
// MCU has one, which mind-cluster's A310PManager reads instead
// (devmanager/a310pmgr.go DcGetDevicePowerInfo → dcmi_mcu_get_power_info,
// 0.1 W, a negative figure refused: devmanager/dcmi/dcmi.go:1841-1853 at
// 22bb3d98) and npu-exporter publishes as the chip's (collector_for_npu.go
// collectPower). Here it is the card's (CardPowerWatts), so two chips of a
// card are not summed twice. An MCU that answers "not supported" (servers,
// 910B, 910_93, 950: dcmi_mcu_intf.c:1946-1972) leaves both absent, without
// an error on every read.
func (t *Telemetry) readPower(lib *dcmiLib, card, dev int32, s *vendors.ChipSample) {
	if t.power == nil {
		return
	}
	var p int32
	err := lib.call("dcmi_get_device_power_info", func() int32 { return t.power(card, dev, &p) })
	switch {
	case err == nil && p >= 0:
		s.PowerWatts = vendors.Value(float64(p) / 10)
		return
	case err == nil:
		return
	case !notSupported(err):
		s.Fail("dcmi_get_device_power_info", err)
		return
	case t.mcuPower == nil:
		return
	}
	err = lib.call("dcmi_mcu_get_power_info", func() int32 { return t.mcuPower(card, &p) })
	switch {
	case notSupported(err):
	case err != nil:
		s.Fail("dcmi_mcu_get_power_info", fmt.Errorf("card %d: %w", card, err))
	case p < 0:
		s.Fail("dcmi_mcu_get_power_info", fmt.Errorf("card %d: power %d (0.1 W) is negative", card, p))
	default:
		s.CardPowerWatts = vendors.Value(float64(p) / 10)
	}
}

// readVNPUs adds the chip's vNPUs with their AI core utilization and
// memory. Only sub-command GET_VDEV_ACTIVITY (5) fills them, as
// mind-cluster's DcGetVDevActivityInfo reads them (devmanager/dcmi/dcmi.go
// at 22bb3d98, lines 1244-1270); GET_VDEV_RESOURCE (0) leaves them at the
// HAL's 0xFF fill (devdrv_vdev.c:478-480 of the driver source), which is
// why a filled-in value is checked, not trusted. DCMI reads a vNPU's
// memory only on 310P and fails the whole query elsewhere with -8255
// (dcmi_inner_info_get_ext.c:867-870, 977-984): such a vNPU is listed
// without figures and without an error on every read.
func (t *Telemetry) readVNPUs(lib *dcmiLib, card, dev int32, s *vendors.ChipSample) {
	if lib.getDeviceInfo == nil {
		return
	}
	var total dcmiSocTotalResource
	size := uint32(unsafe.Sizeof(total))
	err := lib.call("dcmi_get_device_info", func() int32 {
		return lib.getDeviceInfo(card, dev, dcmiMainCmdVDevMng, dcmiSubCmdTotalRes, unsafe.Pointer(&total), &size)
	})
	if err != nil || total.VDevNum == 0 {
		// Most chips have no vNPUs, and 910 chips in VM mode cannot answer.
		return
	}
	if total.VDevNum > dcmiSocSplitMax {
		s.Fail("dcmi_get_device_info", fmt.Errorf("counts %d vNPUs, at most %d fit", total.VDevNum, dcmiSocSplitMax))
		return
	}
	for _, id := range total.VDevID[:total.VDevNum] {
		q := dcmiVDevQueryStru{VDevID: id}
		size := uint32(unsafe.Sizeof(q))
		in := vendors.InstanceSample{ID: int(id)}
		err := lib.call("dcmi_get_device_info", func() int32 {
			return lib.getDeviceInfo(card, dev, dcmiMainCmdVDevMng, dcmiSubCmdVDevActivity, unsafe.Pointer(&q), &size)
		})
		switch {
		case notSupported(err):
		case err != nil:
			s.Fail("dcmi_get_device_info", fmt.Errorf("vNPU %d activity: %w", id, err))
		default:
			in.UtilizationRatio, in.MemoryTotalBytes, in.MemoryUsedBytes = vnpuActivity(q.QueryInfo.Computing)
		}
		s.Instances = append(s.Instances, in)
	}
}

// vnpuActivity is a vNPU's AI core utilization and memory from
// GET_VDEV_ACTIVITY, nil where a field holds the 0xFF fill or is out of
// range. The memory is in KB: npu-exporter publishes it unchanged as
// vnpu_pod_total_memory and vnpu_pod_used_memory, "unit is 'KB'"
// (mind-cluster npu-exporter collector/metrics/collector_for_vnpu.go:60-63).
func vnpuActivity(c dcmiComputingResource) (util, total, used *float64) {
	if c.VDevAICoreUtilization <= 100 {
		util = vendors.Value(float64(c.VDevAICoreUtilization) / 100)
	}
	if c.VDevMemoryTotal > 0 && c.VDevMemoryTotal <= maxVNPUMemoryKB && c.VDevMemoryFree <= c.VDevMemoryTotal {
		total = vendors.Value(float64(c.VDevMemoryTotal) * dcmiKiB)
		used = vendors.Value(float64(c.VDevMemoryTotal-c.VDevMemoryFree) * dcmiKiB)
	}
	return util, total, used
}

// dcmiKiB is one KB as DCMI counts a vNPU's memory.
const dcmiKiB = 1 << 10

// maxVNPUMemoryKB bounds a vNPU's memory: 1 PiB in KB, far above any chip,
// far below the 0xFF fill.
const maxVNPUMemoryKB = 1 << 40

// ChipUsage is what the `npu-smi info` table says a chip uses now; a nil
// field is one npu-smi prints as NA, or not at all.
type ChipUsage struct {
	// PowerW and TempC are the NPU row's Power(W) and Temp(C).
	PowerW, TempC *float64
	// AICorePercent is the chip row's AICore(%).
	AICorePercent *float64
	// MemoryUsedMB, MemoryTotalMB are HBM-Usage(MB) where the table has it
	// and its total is not zero, else Memory-Usage(MB).
	MemoryUsedMB, MemoryTotalMB *float64
	// NoPower says the NPU row prints no power by design ("NA" on 310P,
	// "-" on the A3's second die).
	NoPower bool
	// Healthy is the NPU row's Health: OK or not.
	Healthy bool
	// NoNPURow marks a chip row printed without its NPU row
	// (ChipInfo.NoNPURow): unhealthy, with no usage; keyed by NPU -1 where
	// the table does not say its card.
	NoNPURow bool
}

// ParseInfoUsage parses `npu-smi info` (as ParseInfo, which it runs) and
// returns each chip's usage by NPU and chip id. A usage cell it cannot
// read leaves that value nil rather than failing the table.
func ParseInfoUsage(source string, data []byte) (map[[2]int]ChipUsage, error) {
	out := map[[2]int]ChipUsage{}
	chips, err := parseInfo(source, data, func(c ChipInfo, l infoLayout, npuCells, chipCells []string) {
		u := ChipUsage{Healthy: c.Healthy()}
		// "101.8  43  0 / 0": Power(W) Temp(C) Hugepages-Usage(page).
		if f := strings.Fields(npuCells[2]); len(f) >= 2 {
			u.PowerW, u.TempC = number(f[0]), number(f[1])
			u.NoPower = f[0] == "-" || strings.EqualFold(f[0], "NA")
		}
		// "0  0 / 0  3318 / 65536": AICore(%) Memory-Usage(MB) [HBM-Usage(MB)].
		if f := strings.Fields(chipCells[2]); len(f) > 0 {
			u.AICorePercent = number(f[0])
			pairs := usagePair.FindAllStringSubmatch(chipCells[2][len(f[0]):], -1)
			pick := 0
			if l.hasHBM && len(pairs) == 2 {
				if total := number(pairs[1][2]); total != nil && *total > 0 {
					pick = 1
				}
			}
			if pick < len(pairs) {
				u.MemoryUsedMB, u.MemoryTotalMB = number(pairs[pick][1]), number(pairs[pick][2])
			}
		}
		out[[2]int{c.NPU, c.Chip}] = u
	})
	for _, c := range chips {
		if c.NoNPURow {
			out[[2]int{c.NPU, c.Chip}] = ChipUsage{NoNPURow: true}
		}
	}
	return out, err
}

// number is a non-negative decimal, nil for NA and anything else.
func number(s string) *float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// readNpuSmi reads the chips with `npu-smi info` (and, once, their logic
// ids with `npu-smi info -m`) where DCMI cannot be loaded: utilization,
// memory, temperature and power as the table prints them; no vNPUs.
func (t *Telemetry) readNpuSmi(ctx context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	t.mu.Lock()
	if t.toolIDs == nil {
		maps, err := t.b.mapping(ctx)
		if err != nil {
			t.mu.Unlock()
			return nil, fmt.Errorf("without libdcmi.so: %w", err)
		}
		t.toolIDs = map[int][2]int{}
		for _, m := range maps {
			t.toolIDs[m.LogicID] = [2]int{m.NPU, m.Chip}
		}
	}
	ids := t.toolIDs
	t.mu.Unlock()
	usage, err := discovery.Query(ctx, t.b.runner, "reading Ascend chip usage", ParseInfoUsage, t.b.npuSmi, "info")
	if err != nil {
		return nil, fmt.Errorf("without libdcmi.so: %w", err)
	}
	const call = "npu-smi info"
	return vendors.ReadEach(ctx, chips, func(c inventory.Chip, s *vendors.ChipSample) {
		logic := c.Index
		if v, ok := c.Extra[ExtraLogicID]; ok && v.Int != nil {
			logic = int(*v.Int)
		}
		id, ok := ids[logic]
		u, listed := usage[id]
		if ok && !listed {
			// A chip printed without its NPU row, on a card the table
			// does not say: as discovery, unhealthy.
			u, listed = usage[[2]int{-1, id[1]}]
		}
		if ok && listed && u.NoNPURow {
			s.Healthy = &u.Healthy
			s.Fail(call, fmt.Errorf("NPU %d chip %d: npu-smi prints no NPU row for it, as for a chip DCMI says does not exist", id[0], id[1]))
			return
		}
		if !ok || !listed {
			s.Fail(call, fmt.Errorf("npu-smi lists no chip with logic id %d", logic))
			return
		}
		scale := func(v *float64, by float64) *float64 {
			if v == nil {
				return nil
			}
			return vendors.Value(*v * by)
		}
		if u.AICorePercent != nil && *u.AICorePercent <= 100 {
			s.UtilizationRatio = scale(u.AICorePercent, 0.01)
		}
		s.MemoryUsedBytes, s.MemoryTotalBytes = scale(u.MemoryUsedMB, dcmiMiB), scale(u.MemoryTotalMB, dcmiMiB)
		s.TemperatureCelsius, s.PowerWatts = u.TempC, u.PowerW
		s.Healthy = &u.Healthy
		// Power is no error where npu-smi prints none by design: NA on
		// 310P (npu_info_print.c:245-251) and "-" on the A3's second die
		// (416-425).
		if (u.PowerW == nil && !u.NoPower) || u.TempC == nil || u.AICorePercent == nil || u.MemoryUsedMB == nil {
			s.Fail(call, fmt.Errorf("NPU %d chip %d: some values are NA", id[0], id[1]))
		}
	}), nil
}

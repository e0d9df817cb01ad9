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

package cambricon

// CNDev (libcndev.so), Cambricon's management library, loaded at run time
// with purego: the agent binaries stay CGO_ENABLED=0 and cross-build for
// arm64, and a node without the library still starts (discovery falls back
// to cnmon and says so once). Cambricon's own device plugin and
// mlu-exporter read the chips the same way (docs/hardware.md#cambricon).
//
// The structs below mirror, field for field, our declarations in
// testdata/cndev/cndev.h, which follow the public cndev.h (cited there);
// TestCNDevStructLayoutMatchesTheHeader compares every size and offset.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ebitengine/purego"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// CNDevLibrary is libcndev's file name.
const CNDevLibrary = "libcndev.so"

// DefaultCNDevPaths are where libcndev is looked for when no path is
// configured, under the host root: the Neuware install prefix (the
// mlu-exporter and device-plugin images set LD_LIBRARY_PATH to
// /usr/local/neuware/lib64) and the distribution paths Cambricon's device
// plugin checks (device-plugin/pkg/cndev/bindings.go EnsureCndevLib).
var DefaultCNDevPaths = []string{
	"/usr/local/neuware/lib64/libcndev.so",
	"/usr/lib/x86_64-linux-gnu/libcndev.so",
	"/usr/lib/aarch64-linux-gnu/libcndev.so",
	"/usr/lib64/libcndev.so",
}

const (
	cndevVersion6          = 6
	cndevSuccess           = 0
	cndevInsufficientSpace = 9
	cndevNotSupported      = 10
	cndevFeatureEnabled    = 1
	cndevDeviceGood        = 1
	cndevDriverRunning     = 4
	cndevMACStateDown      = 0
	cndevSMLUMax           = 0
	// cndevMaxCards and cndevMaxLinkPorts bound the counts the library
	// reports before they size a loop: no node has more MLU cards than
	// PCIe slots (DCMI's limit is 64 cards too), nor a card more MLU-Link
	// ports (an MLU370-X8 has 6); more is a broken library.
	cndevMaxCards     = 64
	cndevMaxLinkPorts = 64
	cndevUUIDSize     = 37
	// cndevGetCardHealthStateV2's overall grades and its incident list.
	cndevHealthWarn   = 10
	cndevHealthFail   = 20
	cndevErrMsgLength = 512
	cndevMaxIncidents = 64
)

// Go mirrors of the CNDev structs (names as in cndev.h).
type (
	cndevCardInfo struct {
		Version int32
		Number  uint32
	}
	cndevUUID struct {
		Version   int32
		UUID      [cndevUUIDSize]byte
		NcsUUID64 uint64
	}
	cndevMemoryInfoV2 struct {
		PhysicalMemoryTotal int64 // MiB
		PhysicalMemoryUsed  int64
		ReservedMemory      int64
		VirtualMemoryTotal  int64
		VirtualMemoryUsed   int64
		GlobalMemory        uint64
		Reserved            [16]uint64
	}
	cndevVersionInfo struct {
		Version            int32
		McuMajorVersion    uint32
		McuMinorVersion    uint32
		McuBuildVersion    uint32
		DriverMajorVersion uint32
		DriverMinorVersion uint32
		DriverBuildVersion uint32
	}
	cndevCardCoreCount struct {
		Version int32
		Count   int32
	}
	cndevCardHealthState struct {
		Version     int32
		Health      int32
		DeviceState int32
		DriverState int32
	}
	cndevDiagErrorDetail struct {
		Msg      [cndevErrMsgLength]byte
		DeviceID uint32
		BDF      uint32
		Code     int32
		Category uint32
		Severity uint32
	}
	cndevIncidentInfo struct {
		System int32
		Health int32
		Error  cndevDiagErrorDetail
	}
	cndevCardHealthStateV2 struct {
		Health        int32
		DeviceState   int32
		DriverState   int32
		OverallHealth int32
		IncidentCount uint32
		Incidents     [cndevMaxIncidents]cndevIncidentInfo
		Reserved      [8]uint32
	}
	cndevPCIeInfoV2 struct {
		SubsystemID     uint32
		DeviceID        uint32
		Vendor          uint16
		SubsystemVendor uint16
		Domain          uint32
		Bus             uint32
		Device          uint32
		Function        uint32
		ModuleID        uint16
		SlotID          uint16
		Reserved        [8]uint32
	}
	cndevMLULinkStatusV2 struct {
		MacState       int32
		SerdesState    int32
		PresenceState  int32
		SerdesProgress uint32
		Reserved       [7]uint32
	}
	cndevMLULinkRemoteInfo struct {
		Version      int32
		McSn         uint64
		BaSn         uint64
		SlotID       uint32
		PortID       uint32
		DevIP        [16]byte
		UUID         [cndevUUIDSize]byte
		DevIPVersion uint32
		IsIPValid    uint32
		ConnectType  int32
		NcsUUID64    uint64
		MacAddr      [6]byte
		PortName     [256]byte
	}
	cndevSMLUMode struct {
		Version  int32
		SmluMode int32
	}
	cndevSMluInfo struct {
		Version      int32
		ProfileID    int32
		InstanceID   int32
		UUID         [cndevUUIDSize]byte
		Domain       int32
		Bus          int32
		Device       int32
		Function     int32
		ProfileName  [100]byte
		InstanceName [100]byte
		DevNodeName  [100]byte
		MluQuota     [2]uint32
		MemorySize   [2]uint64
		Reserved     [128]uint32
	}
	cndevSMluProfileIDInfo struct {
		Version   int32
		Count     int32
		ProfileID [128]int32
	}
	cndevSMluProfileInfo struct {
		Version        int32
		ProfileID      int32
		Name           [100]byte
		TotalCapacity  uint32
		RemainCapacity uint32
		MluQuota       [2]uint32
		MemorySize     [2]uint64
	}
	cndevSMluSet struct {
		Version    int32
		MluQuota   uint32 // percent
		MemorySize uint64 // bytes
	}
)

// CNDev is a loaded libcndev. The optional functions are nil where the
// library lacks them (older Neuware): their facts then come from elsewhere.
type CNDev struct {
	// Path is the file loaded.
	Path string
	// calls runs the library's calls one at a time with a deadline.
	calls vendors.LibraryCalls

	errorString   func(int32) string
	deviceCount   func(*cndevCardInfo) int32
	handleByIndex func(int32, *int32) int32
	uuid          func(*cndevUUID, int32) int32
	cardName      func(int32) string
	memory        func(*cndevMemoryInfoV2, int32) int32
	version       func(*cndevVersionInfo, int32) int32
	health        func(*cndevCardHealthState, int32) int32
	pcie          func(*cndevPCIeInfoV2, int32) int32

	// healthV2 is cndevGetCardHealthStateV2, where the library has it:
	// the health with its warning level.
	healthV2 func(*cndevCardHealthStateV2, int32) int32

	coreCount   func(*cndevCardCoreCount, int32) int32
	linkPorts   func(int32) int32
	linkStatus  func(*cndevMLULinkStatusV2, int32, int32) int32
	linkRemote  func(*cndevMLULinkRemoteInfo, int32, int32) int32
	smluMode    func(*cndevSMLUMode, int32) int32
	profileIDs  func(*cndevSMluProfileIDInfo, int32) int32
	profileInfo func(*cndevSMluProfileInfo, int32, int32) int32
	create      func(*int32, uint32, int32, *byte) int32
	instances   func(*int32, *cndevSMluInfo, int32) int32
	destroy     func(int32, *byte) int32

	// newProfile and dropProfile are cndevCreateSMluProfileInfo and
	// cndevDestroySMluProfileInfo, where the library has them: the
	// dynamic sMLU profiles a Shared chip's shares are made of.
	newProfile  func(*cndevSMluSet, *int32, int32) int32
	dropProfile func(int32, int32) int32
}

var (
	cndevMu     sync.Mutex
	cndevLoaded = map[string]*CNDev{}
)

// OpenCNDev loads libcndev from path, or when path is "" from the first of
// DefaultCNDevPaths that exists under root, and initializes it. A library
// is loaded once per process and path.
func OpenCNDev(root, path string) (*CNDev, error) {
	return openCNDev(root, path, 0)
}

// findCNDev returns the library to load: path, or the first of
// DefaultCNDevPaths that exists under root; "" when there is none.
func findCNDev(root, path string) string {
	if path != "" {
		return path
	}
	for _, p := range DefaultCNDevPaths {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.Join(root, p)
		}
	}
	return ""
}

// openCNDev is OpenCNDev with a deadline for each call (zero:
// vendors.DefaultLibraryCallTimeout), set by the first load of the path.
func openCNDev(root, path string, timeout time.Duration) (*CNDev, error) {
	if path = findCNDev(root, path); path == "" {
		return nil, fmt.Errorf("looking for %s: none of %s exists under %s", CNDevLibrary, strings.Join(DefaultCNDevPaths, ", "), root)
	}
	if timeout <= 0 {
		timeout = vendors.DefaultLibraryCallTimeout
	}
	cndevMu.Lock()
	defer cndevMu.Unlock()
	if l, ok := cndevLoaded[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	l := &CNDev{Path: path, calls: vendors.LibraryCalls{Library: path, Timeout: timeout}}
	var init func(int32) int32
	var missing []string
	need := func(fn any, name string) {
		if !register(h, fn, name) {
			missing = append(missing, name)
		}
	}
	need(&init, "cndevInit")
	need(&l.errorString, "cndevGetErrorString")
	need(&l.deviceCount, "cndevGetDeviceCount")
	need(&l.handleByIndex, "cndevGetDeviceHandleByIndex")
	need(&l.uuid, "cndevGetUUID")
	need(&l.cardName, "cndevGetCardNameStringByDevId")
	need(&l.memory, "cndevGetMemoryUsageV2")
	need(&l.version, "cndevGetVersionInfo")
	need(&l.health, "cndevGetCardHealthState")
	need(&l.pcie, "cndevGetPCIeInfoV2")
	if len(missing) > 0 {
		return nil, fmt.Errorf("loading %s: it lacks %s", path, strings.Join(missing, ", "))
	}
	register(h, &l.coreCount, "cndevGetCoreCount")
	register(h, &l.healthV2, "cndevGetCardHealthStateV2")
	if register(h, &l.linkPorts, "cndevGetMLULinkPortNumber") {
		if !register(h, &l.linkStatus, "cndevGetMLULinkStatusV2") || !register(h, &l.linkRemote, "cndevGetMLULinkRemoteInfo") {
			l.linkPorts = nil
		}
	}
	register(h, &l.smluMode, "cndevGetSMLUMode")
	ok := register(h, &l.profileIDs, "cndevGetSMluProfileIdInfo")
	ok = register(h, &l.profileInfo, "cndevGetSMluProfileInfo") && ok
	ok = register(h, &l.create, "cndevCreateSMluInstanceByProfileId") && ok
	ok = register(h, &l.instances, "cndevGetAllSMluInstanceInfo") && ok
	ok = register(h, &l.destroy, "cndevDestroySMluInstanceByInstanceName") && ok
	if !ok {
		l.profileIDs, l.profileInfo, l.create, l.instances, l.destroy = nil, nil, nil, nil, nil
	}
	if !ok || !register(h, &l.newProfile, "cndevCreateSMluProfileInfo") || !register(h, &l.dropProfile, "cndevDestroySMluProfileInfo") {
		l.newProfile, l.dropProfile = nil, nil
	}
	if err := l.call("initializing "+path, "cndevInit", func() int32 { return init(0) }); err != nil {
		return nil, err
	}
	cndevLoaded[path] = l
	return l, nil
}

// register binds fn to the library's symbol name, if it has one.
func register(h uintptr, fn any, name string) bool {
	if _, err := purego.Dlsym(h, name); err != nil {
		return false
	}
	purego.RegisterLibFunc(fn, h, name)
	return true
}

// CNDevError is a non-success cndevRet_t.
type CNDevError struct {
	Code int32
	Text string
}

func (e *CNDevError) Error() string { return fmt.Sprintf("cndev error %d (%s)", e.Code, e.Text) }

func (l *CNDev) err(r int32) error {
	if r == cndevSuccess {
		return nil
	}
	var text string
	if _, err := l.calls.Do("cndevGetErrorString", func() int32 { text = l.errorString(r); return cndevSuccess }); err != nil {
		return &CNDevError{Code: r, Text: err.Error()}
	}
	return &CNDevError{Code: r, Text: text}
}

// notSupported says whether err is CNDEV_ERROR_NOT_SUPPORTED.
func notSupported(err error) bool {
	var e *CNDevError
	return errors.As(err, &e) && e.Code == cndevNotSupported
}

// cstring returns the NUL-terminated string at the start of b.
func cstring(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// call runs one CNDev function under its deadline (l.calls) and wraps a
// failure with its name and what it was for.
func (l *CNDev) call(what, fn string, f func() int32) error {
	r, err := l.calls.Do(fn, f)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := l.err(r); err != nil {
		return fmt.Errorf("%s: %s %s: %w", what, CNDevLibrary, fn, err)
	}
	return nil
}

var _ vendors.LoadedLibrary = (*CNDev)(nil)

// HungLibraryCall implements vendors.LoadedLibrary: the call into l that
// has not returned since its deadline.
func (l *CNDev) HungLibraryCall() *vendors.HungCall { return l.calls.Hung() }

var _ vendors.LibraryWatch = (*Backend)(nil)

// HungLibraryCall implements vendors.LibraryWatch: the hung call of the
// backend's libcndev, loaded by any backend or tool of the process.
func (b *Backend) HungLibraryCall() *vendors.HungCall {
	if b.library == vendors.LibraryNone {
		return nil
	}
	if b.opened != nil {
		return b.opened.HungLibraryCall()
	}
	path := findCNDev(b.root, b.library)
	cndevMu.Lock()
	l := cndevLoaded[path]
	cndevMu.Unlock()
	if l == nil {
		return nil
	}
	return l.calls.Hung()
}

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

// vNPUs through DCMI: dcmi_create_vdevice and dcmi_set_destroy_vdevice
// make and remove them, dcmi_get_device_info (VDEV_MNG) lists them, as
// Huawei's device plugin does (mind-cluster devmanager CreateVirtualDevice,
// DestroyVirtualDevice, GetVirtualDeviceInfo). On a node the partition tool
// loads the same libdcmi.so as discovery (--dcmi-library, or the default
// paths under the root); one load per path per process (openDCMI), so both
// share one dcmi_init.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

var (
	openMu sync.Mutex
	opened = map[string]*dcmiLib{}
)

// openDCMI loads the library at path once per process; timeout bounds
// each of its calls (zero: vendors.DefaultLibraryCallTimeout).
func openDCMI(path string, timeout time.Duration) (*dcmiLib, error) {
	openMu.Lock()
	defer openMu.Unlock()
	if l, ok := opened[path]; ok {
		return l, nil
	}
	l, err := loadDCMI(path, timeout)
	if err != nil {
		return nil, err
	}
	opened[path] = l
	return l, nil
}

// NewTool implements vendors.Partitions: vNPUs through the node's
// libdcmi.so where it loads, else with npu-smi.
func (VNPUs) NewTool(cfg vendors.BackendConfig) vendors.PartitionTool {
	t := &PartitionTool{Runner: cfg.Runner, hostFiles: "/"}
	if cfg.Library == vendors.LibraryNone {
		return t
	}
	// A library that does not load is logged by discovery, which
	// loads it first; the tool then uses npu-smi like discovery.
	// Discovery loaded it first, with the configured call deadline.
	t.dcmi = vendors.LoadLibrary(cfg.Opened, func() *dcmiLib {
		path := findDCMI(cfg.Root, cfg.Library)
		if path == "" {
			return nil
		}
		l, _ := openDCMI(path, 0)
		return l
	})
	return t
}

// dcmiAddress returns the DCMI card and device of a chip by its logic id.
func (a *PartitionTool) dcmiAddress(lib *dcmiLib, c inventory.Chip) (int, int, error) {
	logic := c.Index
	if v, ok := c.Extra[ExtraLogicID]; ok && v.Int != nil {
		logic = int(*v.Int)
	}
	chips, _, err := lib.chips()
	if err != nil {
		return 0, 0, fmt.Errorf("finding chip %d through DCMI: %w", c.Index, err)
	}
	for _, d := range chips {
		if d.Logic == logic {
			return d.Card, d.Device, nil
		}
	}
	return 0, 0, fmt.Errorf("DCMI lists no chip with logic id %d (chip %d)", logic, c.Index)
}

func (a *PartitionTool) listDCMI(lib *dcmiLib, c inventory.Chip) ([]vendors.Instance, error) {
	card, dev, err := a.dcmiAddress(lib, c)
	if err != nil {
		return nil, err
	}
	vnpus, err := lib.vnpus(card, dev)
	if err != nil {
		return nil, fmt.Errorf("listing the vNPUs of chip %d through DCMI: %w", c.Index, err)
	}
	out := make([]vendors.Instance, 0, len(vnpus))
	for id, template := range vnpus {
		out = append(out, vnpuInstance(c, id, template))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (a *PartitionTool) createDCMI(ctx context.Context, lib *dcmiLib, c inventory.Chip, t vendors.Template, id int) (vendors.Instance, error) {
	card, dev, err := a.dcmiAddress(lib, c)
	if err != nil {
		return vendors.Instance{}, err
	}
	got, err := lib.createVNPU(card, dev, id, t.Name)
	if err != nil {
		return vendors.Instance{}, fmt.Errorf("creating a %s vNPU on chip %d through DCMI%s: %w", t.Name, c.Index, a.vnpuHint(err), err)
	}
	if got != id {
		return vendors.Instance{}, fmt.Errorf("creating a %s vNPU on chip %d through DCMI: asked for vNPU id %d, got %d", t.Name, c.Index, id, got)
	}
	return vendors.ConfirmCreated(ctx, a, c, id, t.Name, vendors.Created{Tool: "DCMI", Kind: "vNPU", Template: "template"})
}

// VNPUHostFiles are the host paths DCMI opens by absolute path to make or
// remove a vNPU: it takes a lock by creating a file in /run/vnpu_cfg_lock
// and records the vNPU in /etc/vnpu.cfg, and without them undoes the
// vNPU and returns -8020 (CANN driver source,
// dcmi/dcmi_inner/inc/dcmi_inner_cfg_persist.h:32-38,
// dcmi_inner_cfg_persist.c:84-110 and 879-881,
// dcmi_interface/src/dcmi_virtual_intf.c:648-653). Huawei's device plugin
// manifests mount both; so does the chart where vNPUs are enabled.
var VNPUHostFiles = []string{"/run/vnpu_cfg_lock", "/etc/vnpu.cfg"}

// vnpuHint says what a failed vNPU call most likely needs: the host files
// for -8020 and -8014, a privileged container for -8002.
func (a *PartitionTool) vnpuHint(err error) string {
	var d *DCMIError
	if !errors.As(err, &d) {
		return ""
	}
	switch d.Code {
	case dcmiErrOccupied, dcmiErrFileOperate:
		root := a.hostFiles
		if root == "" {
			root = "/"
		}
		var missing []string
		for _, p := range VNPUHostFiles {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return " (another vNPU operation may hold DCMI's lock /run/vnpu_cfg_lock/vnpu_cfg_lock_flag)"
		}
		return fmt.Sprintf(" (the agent's container lacks the host's %s, which DCMI needs to record a vNPU; the chart mounts them where %s is not off)",
			strings.Join(missing, " and "), PartitionModeValue)
	case dcmiErrNotPermitted:
		return " (DCMI makes 910B and 910_93 vNPUs only on the host or in a privileged container)"
	}
	return ""
}

var _ vendors.LoadedLibrary = (*dcmiLib)(nil)

// HungLibraryCall implements vendors.LoadedLibrary: the call into l that
// has not returned since its deadline.
func (l *dcmiLib) HungLibraryCall() *vendors.HungCall { return l.calls.Hung() }

var _ vendors.LibraryWatch = (*Backend)(nil)

// HungLibraryCall implements vendors.LibraryWatch: the hung call of the
// backend's libdcmi.so, loaded by any backend or tool of the process.
func (b *Backend) HungLibraryCall() *vendors.HungCall {
	if b.libraryPath == vendors.LibraryNone {
		return nil
	}
	if b.opened != nil {
		return b.opened.HungLibraryCall()
	}
	path := findDCMI(b.root, b.libraryPath)
	openMu.Lock()
	l := opened[path]
	openMu.Unlock()
	if l == nil {
		return nil
	}
	return l.calls.Hung()
}

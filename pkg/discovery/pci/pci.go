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

// Package pci reads the PCI facts of an accelerator from sysfs under a root
// directory (the real / or a fixture tree): vendor id, NUMA node and PCIe
// root complex. The standard attributes come from the upstream
// k8s.io/dynamic-resource-allocation/deviceattribute helpers.
package pci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

// Device is what sysfs tells about one PCI function.
type Device struct {
	// BusID is the extended BDF address in lower case, e.g. 0000:c1:00.0.
	BusID    string
	VendorID uint16
	DeviceID uint16
	// NUMANode is nil when sysfs reports -1 (no affinity) or nothing.
	NUMANode *int
	// PCIeRoot is the root complex, e.g. pci0000:00; empty if the sysfs
	// link cannot be resolved.
	PCIeRoot string
}

// NormalizeBusID turns the forms vendor tools print (0000:C1:00.0,
// 00000000:C1:00.0, C1:00.0) into the kernel's 0000:c1:00.0.
func NormalizeBusID(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2:
		parts = append([]string{"0000"}, parts...)
	case 3:
	default:
		return "", fmt.Errorf("PCI bus id %q is not in [domain:]bus:device.function form", s)
	}
	dom, err := strconv.ParseUint(parts[0], 16, 32)
	if err != nil {
		return "", fmt.Errorf("PCI bus id %q: bad domain: %w", s, err)
	}
	bus, err := strconv.ParseUint(parts[1], 16, 8)
	if err != nil {
		return "", fmt.Errorf("PCI bus id %q: bad bus: %w", s, err)
	}
	devFn := strings.Split(parts[2], ".")
	if len(devFn) != 2 {
		return "", fmt.Errorf("PCI bus id %q: device.function missing", s)
	}
	dev, err := strconv.ParseUint(devFn[0], 16, 8)
	if err != nil || dev > 0x1f {
		return "", fmt.Errorf("PCI bus id %q: bad device number", s)
	}
	fn, err := strconv.ParseUint(devFn[1], 16, 8)
	if err != nil || fn > 7 {
		return "", fmt.Errorf("PCI bus id %q: bad function number", s)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn), nil
}

// Read returns the sysfs facts of the PCI function busID under root.
func Read(root, busID string) (Device, error) {
	id, err := NormalizeBusID(busID)
	if err != nil {
		return Device{}, err
	}
	sys := filepath.Join(root, "sys")
	dir := filepath.Join(sys, "bus", "pci", "devices", id)
	d := Device{BusID: id}
	if d.VendorID, err = readHex16(filepath.Join(dir, "vendor")); err != nil {
		return Device{}, err
	}
	if d.DeviceID, err = readHex16(filepath.Join(dir, "device")); err != nil {
		return Device{}, err
	}
	// The upstream helper reads numa_node as the standard numaNode
	// attribute is meant; it refuses a device without affinity (-1) or a
	// missing file, which readNUMA tells from an unreadable one.
	if attr, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(id, deviceattribute.ScalarAttribute,
		deviceattribute.WithFSFromRoot(sys)); err == nil && attr.Value.IntValue != nil {
		n := int(*attr.Value.IntValue)
		d.NUMANode = &n
	} else if d.NUMANode, err = readNUMA(filepath.Join(dir, "numa_node")); err != nil {
		return Device{}, err
	}
	attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(id, deviceattribute.WithFSFromRoot(sys))
	if err == nil && attr.Value.StringValue != nil {
		d.PCIeRoot = *attr.Value.StringValue
	}
	return d, nil
}

// IsMissing reports whether the PCI function busID has no directory in
// sysfs under root while sysfs has PCI devices: the device is gone (hot-removed, fell off the bus),
// as opposed to being there but unreadable. A malformed id is not missing.
func IsMissing(root, busID string) bool {
	id, err := NormalizeBusID(busID)
	if err != nil {
		return false
	}
	dir := filepath.Join(root, "sys", "bus", "pci", "devices")
	if _, err := os.Stat(dir); err != nil {
		// No sysfs at all is a setup error (not mounted), not a lost chip.
		return false
	}
	_, err = os.Stat(filepath.Join(dir, id))
	return errors.Is(err, os.ErrNotExist)
}

// List returns the bus ids of all PCI functions of a vendor under root,
// sorted. A missing /sys/bus/pci is not an error: it just has none.
func List(root string, vendorID uint16) ([]string, error) {
	dir := filepath.Join(root, "sys", "bus", "pci", "devices")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing PCI devices: %w", err)
	}
	var out []string
	for _, e := range entries {
		v, err := readHex16(filepath.Join(dir, e.Name(), "vendor"))
		if err != nil {
			continue // not every entry is readable (or a PCI function); skip it
		}
		if v == vendorID {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func readHex16(path string) (uint16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading PCI id: %w", err)
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
	v, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("reading PCI id from %s: %q is not a 16-bit hex number", path, strings.TrimSpace(string(b)))
	}
	return uint16(v), nil
}

func readNUMA(path string) (*int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading NUMA node: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("reading NUMA node from %s: %q is not an integer", path, strings.TrimSpace(string(b)))
	}
	if n < 0 {
		return nil, nil
	}
	return &n, nil
}

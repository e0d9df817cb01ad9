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

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/discovery/pci"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// readLibrary reads the cards and their MLU-Links through libcndev, the
// calls Cambricon's device plugin makes (bindings.go getDeviceInfo,
// GetDeviceMemory, GetDeviceHealthState, getDeviceMLULinkDevs). Card N is
// cndev index N, whose node is /dev/cambricon_devN (getDeviceInfo).
//
// A call that returns an error code for one card never hides the node's
// other cards: a card whose handle or PCIe address cannot be read is left
// out (nothing else identifies it in sysfs), any other failing call makes
// it unhealthy (inventory.ReasonLibraryError), as the device plugin reads
// a failed health call (device-plugin/pkg/mlu/cambricon.go@3c9ed24 lines
// 224-227); each with a log line naming the call and the code. A wedged
// library (a call past its deadline) still fails discovery: no later call
// would answer.
// long: the libcndev calls per card in the order the library needs them,
// each failure handled where it happens; vendor-internal, reworked
// separately (issue 42).
func (b *Backend) readLibrary(ctx context.Context, l *CNDev) (reader, error) {
	logger := klog.FromContext(ctx)
	fn := func(name string) string { return CNDevLibrary + " " + name }
	var count cndevCardInfo
	count.Version = cndevVersion6
	if err := l.call("counting MLU cards", "cndevGetDeviceCount", func() int32 { return l.deviceCount(&count) }); err != nil {
		return reader{}, err
	}
	r := reader{name: CNDevLibrary, topo: Topology{Codes: map[int]map[int]string{}, CPUAffinity: map[int]string{}},
		faults: map[int][]fault{},
		sources: map[string]string{
			"model": fn("cndevGetCardNameStringByDevId"), "uuid": fn("cndevGetUUID"), "memory": fn("cndevGetMemoryUsageV2"),
			"driverVersion": fn("cndevGetVersionInfo"), "pciBusID": fn("cndevGetPCIeInfoV2"),
			"health": fn("cndevGetCardHealthState") + ", device files",
		}}
	if l.healthV2 != nil {
		r.sources["health"] = fn("cndevGetCardHealthStateV2") + ", device files"
	}
	cards, err := vendors.CheckCount(CNDevLibrary+" cndevGetDeviceCount", "MLU cards", int64(count.Number), cndevMaxCards)
	if err != nil {
		return reader{}, fmt.Errorf("counting MLU cards: %w", err)
	}
	// cardCall runs one call for card i. ok is false when the library
	// returned an error code, which is logged and, unless leaveOut, made
	// the card's fault; err is a wedged library.
	cardCall := func(i int, what, name string, leaveOut bool, f func() int32) (ok bool, err error) {
		err = l.call(what, name, f)
		var ce *CNDevError
		switch {
		case err == nil:
			return true, nil
		case !errors.As(err, &ce):
			return false, err
		case leaveOut:
			logger.Info("A CNDev call failed for one MLU card, leaving the card out", "card", i, "call", name, "code", ce.Code, "err", err)
		default:
			logger.Info("A CNDev call failed for one MLU card, reporting it unhealthy", "card", i, "call", name, "code", ce.Code, "err", err)
			r.faults[i] = append(r.faults[i], fault{inventory.ReasonLibraryError, fmt.Sprintf("%s returned %d (%s)", fn(name), ce.Code, ce.Text)})
		}
		return false, nil
	}
	handles := map[int]int32{}
	byUUID := map[string]int{}
	for i := range cards {
		what := fmt.Sprintf("reading MLU card %d", i)
		var h int32
		if ok, err := cardCall(i, what, "cndevGetDeviceHandleByIndex", true, func() int32 { return l.handleByIndex(int32(i), &h) }); err != nil {
			return reader{}, err
		} else if !ok {
			continue
		}
		var p cndevPCIeInfoV2
		if ok, err := cardCall(i, what, "cndevGetPCIeInfoV2", true, func() int32 { return l.pcie(&p, h) }); err != nil {
			return reader{}, err
		} else if !ok {
			continue
		}
		id, err := pci.NormalizeBusID(fmt.Sprintf("%04x:%02x:%02x.%x", p.Domain, p.Bus, p.Device, p.Function))
		if err != nil {
			return reader{}, fmt.Errorf("%s: %s cndevGetPCIeInfoV2: %w", what, CNDevLibrary, err)
		}
		var name string
		if err := l.call(what, "cndevGetCardNameStringByDevId", func() int32 { name = l.cardName(h); return cndevSuccess }); err != nil {
			return reader{}, err
		}
		c := CardInfo{Card: i, ProductName: name, PCIBusID: id}
		u := cndevUUID{Version: cndevVersion6}
		if ok, err := cardCall(i, what, "cndevGetUUID", false, func() int32 { return l.uuid(&u, h) }); err != nil {
			return reader{}, err
		} else if ok {
			c.UUID = cstring(u.UUID[:])
		}
		var m cndevMemoryInfoV2
		if ok, err := cardCall(i, what, "cndevGetMemoryUsageV2", false, func() int32 { return l.memory(&m, h) }); err != nil {
			return reader{}, err
		} else if ok {
			if m.PhysicalMemoryTotal < 0 || m.PhysicalMemoryTotal > 1<<40 {
				return reader{}, fmt.Errorf("%s: %s cndevGetMemoryUsageV2 reports %d MiB", what, CNDevLibrary, m.PhysicalMemoryTotal)
			}
			c.MemoryBytes = m.PhysicalMemoryTotal * mebibyte
		}
		v := cndevVersionInfo{Version: cndevVersion6}
		if ok, err := cardCall(i, what, "cndevGetVersionInfo", false, func() int32 { return l.version(&v, h) }); err != nil {
			return reader{}, err
		} else if ok {
			c.DriverVersion = fmt.Sprintf("%d.%d.%d", v.DriverMajorVersion, v.DriverMinorVersion, v.DriverBuildVersion)
		}
		if err := readHealth(l, &c, h, func(name string, f func() int32) (bool, error) { return cardCall(i, what, name, false, f) }); err != nil {
			return reader{}, err
		}
		c.Cores, c.CoresFrom = mluCoresPerChip[c.ProductName], modelTable
		if l.coreCount != nil {
			cc := cndevCardCoreCount{Version: cndevVersion6}
			if err := l.call(what, "cndevGetCoreCount", func() int32 { return l.coreCount(&cc, h) }); err == nil && cc.Count > 0 {
				c.Cores, c.CoresFrom = int(cc.Count), fn("cndevGetCoreCount")
			}
		}
		handles[i] = h
		r.cards = append(r.cards, c)
		r.topo.Cards = append(r.topo.Cards, i)
		if c.UUID != "" {
			byUUID[c.UUID] = i
		}
	}

	// MLU-Links: every port whose MAC is up counts towards the card it
	// reaches, found by its UUID (the device plugin's GetMLULinkGroups).
	for _, c := range r.cards {
		links := map[int]int{}
		if l.linkPorts != nil {
			h := handles[c.Card]
			var n int32
			what := fmt.Sprintf("counting the MLU-Link ports of MLU card %d", c.Card)
			if err := l.call(what, "cndevGetMLULinkPortNumber", func() int32 { n = l.linkPorts(h); return cndevSuccess }); err != nil {
				return reader{}, err
			}
			ports, err := vendors.CheckCount(CNDevLibrary+" cndevGetMLULinkPortNumber", "ports", int64(n), cndevMaxLinkPorts)
			if err != nil {
				return reader{}, fmt.Errorf("%s: %w", what, err)
			}
			for port := range int32(ports) {
				what := fmt.Sprintf("reading MLU-Link port %d of MLU card %d", port, c.Card)
				var st cndevMLULinkStatusV2
				if ok, err := cardCall(c.Card, what, "cndevGetMLULinkStatusV2", false, func() int32 { return l.linkStatus(&st, h, port) }); err != nil {
					return reader{}, err
				} else if !ok || st.MacState == cndevMACStateDown {
					continue
				}
				rem := cndevMLULinkRemoteInfo{Version: cndevVersion6}
				if ok, err := cardCall(c.Card, what, "cndevGetMLULinkRemoteInfo", false, func() int32 { return l.linkRemote(&rem, h, port) }); err != nil {
					return reader{}, err
				} else if !ok {
					continue
				}
				if other, ok := byUUID[cstring(rem.UUID[:])]; ok && other != c.Card {
					links[other]++
				}
			}
		}
		codes := map[int]string{}
		for _, o := range r.topo.Cards {
			switch {
			case o == c.Card:
				codes[o] = "X"
			case links[o] > 0:
				codes[o] = fmt.Sprintf("MLK%d", min(links[o], maxLinks))
			default:
				codes[o] = unknownCode // no MLU-Link; the PCIe path is not read
			}
		}
		r.topo.Codes[c.Card] = codes
	}
	sort.Ints(r.topo.Cards)
	if l.linkPorts != nil {
		r.sources["linkGroup"] = fn("cndevGetMLULinkRemoteInfo")
		r.sources["mluLinkPorts"] = fn("cndevGetMLULinkStatusV2")
	}
	if l.newProfile != nil {
		r.sized = fn("cndevCreateSMluProfileInfo")
	}
	if l.smluMode != nil {
		r.smluMode = func(card int) (string, string, error) {
			mode := cndevSMLUMode{Version: cndevVersion6}
			err := l.call(fmt.Sprintf("reading the sMLU mode of MLU card %d", card), "cndevGetSMLUMode", func() int32 { return l.smluMode(&mode, handles[card]) })
			switch {
			case notSupported(err):
				return fmt.Sprintf("the driver says card %d does not support sMLU (%s)", card, fn("cndevGetSMLUMode")), fn("cndevGetSMLUMode"), nil
			case err != nil:
				return "", "", err
			case mode.SmluMode != cndevFeatureEnabled:
				return fmt.Sprintf("sMLU mode is off on card %d (%s; switch it on with cnmon set -c %d -smlu on)", card, fn("cndevGetSMLUMode"), card), fn("cndevGetSMLUMode"), nil
			}
			return "", fn("cndevGetSMLUMode"), nil
		}
	}
	return r, nil
}

// readHealth reads card c's health through call (readLibrary's cardCall):
// with cndevGetCardHealthStateV2 where the library has it, as
// mlu-exporter does (pkg/cndev/cndev.go GetDeviceHealth), else with
// cndevGetCardHealthState, the device plugin's call. The device and
// driver states are the same in both; V2 adds an overall grade whose
// warning level (CNDEV_HEALTH_RESULT_WARN) becomes the Warning health
// (a taint that informs) and failure level the Fail health, each with the
// incidents the library reports.
func readHealth(l *CNDev, c *CardInfo, h int32, call func(name string, f func() int32) (bool, error)) error {
	var device, driver, overall int32
	var incidents []string
	if l.healthV2 != nil {
		var hs cndevCardHealthStateV2
		ok, err := call("cndevGetCardHealthStateV2", func() int32 { return l.healthV2(&hs, h) })
		if err != nil || !ok {
			return err
		}
		device, driver, overall = hs.DeviceState, hs.DriverState, hs.OverallHealth
		for _, in := range hs.Incidents[:min(int(hs.IncidentCount), len(hs.Incidents))] {
			incidents = append(incidents, fmt.Sprintf("incident %d: %s", in.Error.Code, cstring(in.Error.Msg[:])))
		}
	} else {
		hs := cndevCardHealthState{Version: cndevVersion6}
		ok, err := call("cndevGetCardHealthState", func() int32 { return l.health(&hs, h) })
		if err != nil || !ok {
			return err
		}
		device, driver = hs.DeviceState, hs.DriverState
	}
	c.DeviceHealth, c.DriverState = HealthGood, DriverRunning
	switch {
	case device != cndevDeviceGood:
		c.DeviceHealth = HealthInProblem
	case overall == cndevHealthFail:
		c.DeviceHealth = HealthFail
	case overall == cndevHealthWarn:
		c.DeviceHealth = HealthWarning
	}
	if c.DeviceHealth != HealthGood && len(incidents) > 0 {
		c.HealthDetail = strings.Join(incidents, "; ")
	}
	if driver != cndevDriverRunning {
		c.DriverState = fmt.Sprintf("state %d", driver)
	}
	return nil
}

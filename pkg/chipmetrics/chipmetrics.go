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

// Package chipmetrics is the node agent's chip telemetry: every chip's
// utilization, memory, temperature, power and health, read through each
// vendor's vendors.Telemetry at an interval in a goroutine of its own and
// served from the last reading (never read on a scrape), labelled with the
// chip and, while a claim holds it, the claim, its pod and containers:
// the claim from the driver's checkpoint, the pod and containers from the
// kubelet's PodResources v1 List (dynamic_resources), matched by driver,
// pool and device name. docs/health-metrics.md lists the series.
package chipmetrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// DefaultInterval is how often the chips are read by default.
const DefaultInterval = 10 * time.Second

// Values of the access label.
const (
	// AccessNone: no prepared claim holds the chip.
	AccessNone = ""
	// AccessWorkload: a claim holds the chip (or a partition or share of it)
	// for its workload.
	AccessWorkload = "workload"
	// AccessAdmin: an admin-access claim (a monitor, a debugger) has the
	// chip; it holds nothing, so it is not the chip's workload.
	AccessAdmin = "admin"
)

// Driver is one DRA driver of the agent, as the collector reads it.
type Driver struct {
	// Name is the DRA driver name (ascend.accel-dra.dev), Pool its pool
	// (the node name).
	Name, Pool string
	// Names are the vendor's names (the chips' DRA device names).
	Names vendors.Names
	// Telemetry reads the chips; nil: the driver's chips have none.
	Telemetry vendors.Telemetry
	// Chips are the vendor's chips of the node.
	Chips []inventory.Chip
	// Prepared returns the driver's prepared claims (its checkpoint)
	// without waiting for a running prepare.
	Prepared func() map[types.UID]checkpoint.Claim
}

// PodResources lists the pods' resources (the kubelet's PodResources v1
// List; see KubeletPodResources).
type PodResources interface {
	List(ctx context.Context) ([]Container, error)
}

// Container is one container's use of one DRA device (a
// PodResources v1 ClaimResource of a container's DynamicResource).
type Container struct {
	Namespace, Pod, Container string
	ClaimNamespace, ClaimName string
	Driver, Pool, Device      string
}

// Config configures a Collector.
type Config struct {
	// Node is the node name, the node label.
	Node string
	// Interval is how often the chips are read (DefaultInterval when zero).
	Interval time.Duration
	// ReadTimeout bounds one vendor's Read (and the PodResources List), so
	// a hanging library call delays only its own series; default half the
	// interval.
	ReadTimeout time.Duration
	Drivers     []Driver
	// PodResources, when set, gives the pod and container labels.
	PodResources PodResources
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Collector reads the chips and serves the last reading as Prometheus
// metrics (it is a prometheus.Collector).
type Collector struct {
	cfg Config

	mu   sync.Mutex
	last []sample // the series of the last reading
	// busy are the drivers whose Read has not returned yet.
	busy map[string]bool

	// state kept between readings, owned by the reading goroutine
	logged   map[string]bool
	lastBusy map[string]time.Time // by driver/device
	heldFrom map[string]time.Time // by driver/device/claim uid

	readErrors *prometheus.CounterVec
}

// sample is one series' value.
type sample struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

var chipLabels = []string{"node", "driver", "device", "uuid", "model", "namespace", "pod", "container", "claim", "access"}

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc("accel_dra_chip_"+name, help, append(append([]string{}, chipLabels...), extra...), nil)
}

var (
	descUtilization = desc("utilization_ratio", "Compute utilization of the chip (Ascend AI cores, Cambricon MLU cores), 0 to 1.")
	descMemoryUsed  = desc("memory_used_bytes", "Device memory (HBM or DDR) in use on the chip.")
	descMemoryTotal = desc("memory_total_bytes", "Device memory (HBM or DDR) of the chip.")
	descTemperature = desc("temperature_celsius", "Temperature of the chip.")
	descPower       = desc("power_watts", "Power the chip draws now.")
	descCardPower   = desc("card_power_watts", "Power the whole card the chip is on draws now, where the chip has no figure of its own (Ascend 310P: the card's MCU); each chip of the card reports the card's figure.")
	descHealthy     = desc("healthy", "1 when the vendor library reports the chip healthy, else 0.")
	descIdle        = desc("allocated_idle_seconds", "How long a chip held by a workload claim has shown zero utilization (since it was prepared or last busy).")
	descPartition   = prometheus.NewDesc("accel_dra_partition_utilization_ratio", "Compute utilization of one partition (vNPU, sMLU instance) of a chip, 0 to 1.",
		[]string{"node", "driver", "device", "uuid", "model", "partition"}, nil)
)

// New makes a collector; Run reads the chips.
func New(cfg Config) *Collector {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = cfg.Interval / 2
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Collector{cfg: cfg, busy: map[string]bool{}, logged: map[string]bool{}, lastBusy: map[string]time.Time{}, heldFrom: map[string]time.Time{},
		readErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "accel_dra", Name: "chip_telemetry_errors_total",
			Help: "Failed reads of a chip quantity (one vendor library call for one chip) or of all of a driver's chips (call \"read\").",
		}, []string{"driver", "call"})}
}

// Register registers the collector's metrics with r.
func (c *Collector) Register(r prometheus.Registerer) error {
	if err := r.Register(c); err != nil {
		return fmt.Errorf("registering the chip metrics: %w", err)
	}
	if err := r.Register(c.readErrors); err != nil {
		return fmt.Errorf("registering the chip metrics: %w", err)
	}
	return nil
}

// Run reads the chips now and then every interval until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		c.Read(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUtilization, descMemoryUsed, descMemoryTotal, descTemperature, descPower, descCardPower, descHealthy, descIdle, descPartition} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last reading.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	for _, s := range last {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
	}
}

// holder is one claim (and, where the kubelet says, container) that has a
// chip.
type holder struct {
	uid                              types.UID
	namespace, pod, container, claim string
	access                           string
}

// Read reads every driver's chips once and replaces the served series.
func (c *Collector) Read(ctx context.Context) {
	r := reading{now: c.cfg.Now(), containers: c.containers(ctx), seenIdle: map[string]bool{}}
	for _, d := range c.cfg.Drivers {
		if d.Telemetry == nil || len(d.Chips) == 0 {
			continue
		}
		c.readDriver(ctx, &r, d)
	}
	// A claim that no longer holds its chip starts idle afresh.
	for k := range c.heldFrom {
		if !r.seenIdle[k] {
			delete(c.heldFrom, k)
		}
	}
	c.mu.Lock()
	c.last = r.out
	c.mu.Unlock()
}

// reading is one Read in progress: its time, the kubelet's containers
// of the claims, the series so far and the held chips seen (heldFrom's
// keys still current).
type reading struct {
	now        time.Time
	containers []Container
	out        []sample
	seenIdle   map[string]bool
}

// readDriver adds the series of d's chips to r.
func (c *Collector) readDriver(ctx context.Context, r *reading, d Driver) {
	logger := klog.FromContext(ctx)
	samples, err := c.read(ctx, d)
	if err != nil {
		c.readErrors.WithLabelValues(d.Name, "read").Inc()
		c.logOnce(logger, d.Name, "Cannot read the chips' telemetry; their series are left out", "driver", d.Name, "err", err)
		return
	}
	c.recovered(logger, d.Name, "driver", d.Name)
	holders := c.holders(d, r.containers)
	for i, s := range samples {
		if i >= len(d.Chips) {
			break
		}
		chip := d.Chips[i]
		device := d.Names.ChipDevice(chip.Index)
		c.countCallErrors(logger, d, device, s)
		chipKey := d.Name + "/" + device
		if s.UtilizationRatio != nil && *s.UtilizationRatio > 0 {
			c.lastBusy[chipKey] = r.now
		}
		hs := holders[device]
		if len(hs) == 0 {
			hs = []holder{{}}
		}
		seen := map[string]bool{}
		for _, h := range hs {
			labels := []string{c.cfg.Node, d.Name, device, chip.UUID, chip.Model, h.namespace, h.pod, h.container, h.claim, h.access}
			key := strings.Join(labels, "\x00")
			if seen[key] {
				continue
			}
			seen[key] = true
			c.addHolderSeries(r, chipKey, h, labels, s)
		}
		for _, in := range s.Instances {
			if in.UtilizationRatio != nil {
				r.out = append(r.out, sample{desc: descPartition, value: *in.UtilizationRatio,
					labels: []string{c.cfg.Node, d.Name, device, chip.UUID, chip.Model, fmt.Sprint(in.ID)}})
			}
		}
	}
}

// countCallErrors counts and logs (once) the calls that failed for one
// chip, and logs the recovery of those that read again.
func (c *Collector) countCallErrors(logger klog.Logger, d Driver, device string, s vendors.ChipSample) {
	failed := map[string]bool{}
	for _, e := range s.Errors {
		failed[e.Call] = true
		c.readErrors.WithLabelValues(d.Name, e.Call).Inc()
		c.logOnce(logger, d.Name+"/"+device+"/"+e.Call, "Cannot read a chip quantity; its series is left out until it reads again",
			"driver", d.Name, "device", device, "call", e.Call, "err", e.Err)
	}
	for key := range c.logged {
		if call, ok := strings.CutPrefix(key, d.Name+"/"+device+"/"); ok && !failed[call] {
			c.recovered(logger, key, "driver", d.Name, "device", device, "call", call)
		}
	}
}

// addHolderSeries adds one chip's series, labelled for one holder, to r;
// for a workload's claim also how long the chip has been idle in it.
func (c *Collector) addHolderSeries(r *reading, chipKey string, h holder, labels []string, s vendors.ChipSample) {
	add := func(ds *prometheus.Desc, v *float64) {
		if v != nil {
			r.out = append(r.out, sample{desc: ds, value: *v, labels: labels})
		}
	}
	add(descUtilization, s.UtilizationRatio)
	add(descMemoryUsed, s.MemoryUsedBytes)
	add(descMemoryTotal, s.MemoryTotalBytes)
	add(descTemperature, s.TemperatureCelsius)
	add(descPower, s.PowerWatts)
	add(descCardPower, s.CardPowerWatts)
	if s.Healthy != nil {
		v := 0.0
		if *s.Healthy {
			v = 1
		}
		add(descHealthy, &v)
	}
	if h.access == AccessWorkload && s.UtilizationRatio != nil {
		heldKey := chipKey + "/" + string(h.uid)
		r.seenIdle[heldKey] = true
		from, ok := c.heldFrom[heldKey]
		if !ok {
			from = r.now
			c.heldFrom[heldKey] = r.now
		}
		if b, ok := c.lastBusy[chipKey]; ok && b.After(from) {
			from = b
		}
		idle := r.now.Sub(from).Seconds()
		add(descIdle, &idle)
	}
}

// read reads d's chips within the read timeout. A library call cannot be
// interrupted: a read that does not return in time is left running in its
// goroutine and its driver skipped until it does, so one hung call holds
// neither the other drivers' series nor the next readings.
func (c *Collector) read(ctx context.Context, d Driver) ([]vendors.ChipSample, error) {
	c.mu.Lock()
	if c.busy[d.Name] {
		c.mu.Unlock()
		return nil, fmt.Errorf("the read of %s's chips started before did not return yet", d.Name)
	}
	c.busy[d.Name] = true
	c.mu.Unlock()
	type result struct {
		samples []vendors.ChipSample
		err     error
	}
	done := make(chan result, 1)
	readCtx, cancel := context.WithTimeout(ctx, c.cfg.ReadTimeout)
	defer cancel()
	go func() {
		s, err := d.Telemetry.Read(readCtx, d.Chips)
		c.mu.Lock()
		delete(c.busy, d.Name)
		c.mu.Unlock()
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.samples, r.err
	case <-readCtx.Done():
		return nil, fmt.Errorf("reading %s's chips took longer than %s: %w", d.Name, c.cfg.ReadTimeout, readCtx.Err())
	}
}

// containers lists the containers' DRA devices; nil (no pod labels) when
// there is no PodResources or its List fails (logged once).
func (c *Collector) containers(ctx context.Context) []Container {
	if c.cfg.PodResources == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	listCtx, cancel := context.WithTimeout(ctx, c.cfg.ReadTimeout)
	defer cancel()
	list, err := c.cfg.PodResources.List(listCtx)
	if err != nil {
		c.logOnce(logger, "podresources", "Cannot list the kubelet's pod resources; chips carry their claims but no pod and container labels", "err", err)
		return nil
	}
	c.recovered(logger, "podresources")
	return list
}

// holders returns, by chip device name, the claims that hold each chip
// of d (the chip, a partition or a share of it), one per container of
// the claim's pods where the kubelet lists them.
func (c *Collector) holders(d Driver, containers []Container) map[string][]holder {
	if d.Prepared == nil {
		return nil
	}
	byDevice := map[string][]Container{}
	for _, ct := range containers {
		if ct.Driver == d.Name && ct.Pool == d.Pool {
			byDevice[ct.Device] = append(byDevice[ct.Device], ct)
		}
	}
	out := map[string][]holder{}
	for uid, claim := range d.Prepared() {
		for _, dev := range claim.Devices {
			chip, ok := chipOf(d, dev)
			if !ok {
				continue
			}
			access := AccessWorkload
			if dev.Kind == checkpoint.KindAdmin {
				access = AccessAdmin
			}
			base := holder{uid: uid, namespace: claim.Namespace, claim: claim.Name, access: access}
			matched := false
			for _, ct := range byDevice[dev.Device] {
				if ct.ClaimNamespace == claim.Namespace && ct.ClaimName == claim.Name {
					h := base
					h.pod, h.container = ct.Pod, ct.Container
					out[chip] = append(out[chip], h)
					matched = true
				}
			}
			if !matched {
				out[chip] = append(out[chip], base)
			}
		}
	}
	for chip := range out {
		hs := out[chip]
		sort.Slice(hs, func(i, j int) bool {
			a, b := hs[i], hs[j]
			return a.namespace+"/"+a.claim+"/"+a.pod+"/"+a.container < b.namespace+"/"+b.claim+"/"+b.pod+"/"+b.container
		})
	}
	return out
}

// chipOf returns the DRA device name of the chip a prepared device is
// (whole, shared, admin) or is a partition of.
func chipOf(d Driver, dev checkpoint.Device) (string, bool) {
	for _, chip := range d.Chips {
		name := d.Names.ChipDevice(chip.Index)
		if dev.Device == name || strings.HasPrefix(dev.Device, name+"-") || (dev.Partition != nil && dev.Partition.Chip == chip.Index) {
			return name, true
		}
	}
	return "", false
}

func (c *Collector) logOnce(logger klog.Logger, key, msg string, kv ...any) {
	if c.logged[key] {
		return
	}
	c.logged[key] = true
	logger.Info(msg, kv...)
}

func (c *Collector) recovered(logger klog.Logger, key string, kv ...any) {
	if !c.logged[key] {
		return
	}
	delete(c.logged, key)
	logger.Info("Reading again", kv...)
}

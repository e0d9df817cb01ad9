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

// Package nodeagent runs accel-dra on one node: it discovers the node's
// chips and serves each vendor found as its own DRA driver through the
// kubelet plugin helper, until its context ends.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/devicefaker"
	"github.com/accel-dra/accel-dra/pkg/devicemonitor"
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Options configure the node agent, grouped by concern as the upstream
// resourceslice.Options are; the binary wires its flags into them.
type Options struct {
	// Discovery says where the chips come from; its Registry has the
	// vendors the agent serves.
	Discovery source.Options
	// FakeDevices creates the simulated chips' device nodes and driver
	// files under Discovery.Root, so containers can start on a node
	// without the hardware. Only with a profile.
	FakeDevices bool
	KubeClient  kubernetes.Interface
	// Plugin is where the drivers meet the kubelet and keep their state.
	Plugin PluginOptions
	// CDI is how prepared claims reach the container runtime.
	CDI CDIOptions
	// Publish is what the ResourceSlices offer.
	Publish PublishOptions
	// Health is the device monitor and the probes.
	Health HealthOptions
	// Metrics is /metrics and the chips' telemetry.
	Metrics MetricsOptions
	// Fabric is the fabric labels of the agent's own Node.
	Fabric FabricOptions
}

// PluginOptions are the drivers' kubelet plugin directories and state.
type PluginOptions struct {
	// RegistrarDir is the kubelet's plugin registration directory.
	RegistrarDir string
	// PluginDir holds one directory per driver with its DRA socket.
	PluginDir string
	// StateDir holds one directory per driver with its checkpoint.
	StateDir string
	// PodUID enables rolling updates (see driver.Config.PodUID).
	PodUID types.UID
}

// CDIOptions say how the CDI specs of prepared claims are written.
type CDIOptions struct {
	// Dir is where CDI specs are written.
	Dir string
	// HostRoot is the node's root as the container runtime sees it,
	// the prefix of host paths in CDI specs: "/" when the plugin runs in a
	// container with the node's / mounted at Discovery.Root. Default
	// Discovery.Root (a plugin running on the host, or fake devices).
	HostRoot string
	// VisibleDevicesEnv says whether CDI specs set ASCEND_VISIBLE_DEVICES
	// and CAMBRICON_VISIBLE_DEVICES: "auto" (default: left out for Ascend
	// where ascend-docker-runtime is installed), "set" or "omit" (see
	// cdi.Config.VisibleDevicesEnv). The binary's --visible-devices-env
	// [ACCEL_DRA_VISIBLE_DEVICES_ENV].
	VisibleDevicesEnv string
	// Hook, if set, is the static hook binary accel-dra-cdi-hook,
	// installed in Plugin.StateDir as the CDI hook that adds the driver
	// libraries to a container's ld.so cache (cdihook.Install, which
	// refuses a dynamically linked one); the host must see StateDir at the
	// same path.
	Hook string
	// DeviceMetadata mounts the device metadata file (KEP-5304) into
	// containers (see driver.Config.DeviceMetadata). The binary's
	// --device-metadata flag, default on.
	DeviceMetadata bool
}

// PublishOptions say how the chips are published.
type PublishOptions struct {
	// ChipModes says how each chip is published, in partitions.ParsePolicy
	// syntax: "" (every chip Whole, the default), "Partitioned" (chips
	// whose model has partitions offer them too), "Shared",
	// "npu-0=Shared,mlu-*=Partitioned", … The binary's --chip-modes flag
	// [ACCEL_DRA_CHIP_MODES].
	ChipModes string
	// PartitionTemplates, when set, are the only partition templates a
	// Partitioned chip offers, by slug (vir10-3c-32g, smlu-50p): fewer
	// devices for the scheduler to evaluate (docs/benchmarks.md). The
	// binary's --partition-templates flag.
	PartitionTemplates []string
	// UnhealthyTaintEffect is the effect of the taint on unhealthy chips:
	// "" or NoSchedule, or NoExecute (evicts pods that do not tolerate it).
	UnhealthyTaintEffect string
}

// HealthOptions say how the chips' health is read and the agent's own is
// served.
type HealthOptions struct {
	// Interval is how often the device monitor (pkg/devicemonitor)
	// re-reads the chips for health and hot add/remove; zero or less:
	// health is only read at start.
	Interval time.Duration
	// Addr, when set, serves /livez, /readyz and /metrics over HTTP there.
	Addr string
	// LivenessTimeout bounds /livez's check of each driver (zero:
	// LiveTimeout).
	LivenessTimeout time.Duration
	// LibraryHangLimit is how long a call into a vendor library may stay
	// hung before /livez fails (zero: DefaultLibraryHangLimit). The
	// binary's --library-hang-limit.
	LibraryHangLimit time.Duration
	// OnServing, if set, is told the probe server's address (tests
	// listen on port 0).
	OnServing func(net.Addr)
}

// MetricsOptions say where /metrics is served and what it holds besides
// the drivers' own metrics.
type MetricsOptions struct {
	// Addr, when set, serves /metrics there instead of on Health.Addr
	// (e.g. 127.0.0.1:51516: metrics on loopback, probes not).
	Addr string
	// Secure serves Addr over HTTPS to authenticated and authorized
	// callers only (--metrics-secure).
	Secure SecureMetrics
	// OnServing, if set, is told the metrics server's address.
	OnServing func(net.Addr)
	// Chips reads the chips' utilization, memory, temperature and power
	// every ChipInterval (pkg/chipmetrics) into /metrics.
	Chips        bool
	ChipInterval time.Duration
	// PodResourcesSocket is the kubelet's PodResources socket the chip
	// metrics take pod and container labels from; "" leaves them out.
	PodResourcesSocket string
}

// agent is one run of the node agent: what each step of Run found or made
// for the steps after it.
type agent struct {
	o      Options
	policy partitions.Policy
	effect resourceapi.DeviceTaintEffect
	// inv are the chips found at start; found their vendors, the drivers
	// to serve; discoverErr why other vendors' chips could not be read.
	inv         inventory.Inventory
	found       []inventory.Vendor
	discoverErr error
	// hostRoot is the node's root the chips were discovered under.
	hostRoot string
	writer   *cdi.Writer
	probes   *probes
	drivers  []*driver.Driver
}

// Run discovers the chips and serves them until ctx is done. It returns
// an error if nothing could be started, or a fatal error of a driver.
func Run(ctx context.Context, o Options) error {
	if o.Discovery.Opened == nil {
		// One Library per vendor for every user of it, where main did not
		// make them (tests).
		o.Discovery.Opened = o.Discovery.Registry.NewLibraries()
	}
	a := &agent{o: o, hostRoot: rootOf(o)}
	if err := a.validate(); err != nil {
		return err
	}
	if err := a.discover(ctx); err != nil {
		return err
	}
	if err := a.newCDIWriter(ctx); err != nil {
		return err
	}
	// stopped is the caller's context (SIGTERM in the binary, whose cause
	// is the signal): its end is a clean stop, a driver's fatal error not.
	stopped := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := a.startProbes(ctx); err != nil {
		return err
	}
	defer a.stopDrivers()
	if err := a.startDrivers(ctx, cancel); err != nil {
		return err
	}
	if stopped.Err() != nil {
		klog.FromContext(ctx).Info("Stopped while starting", "reason", context.Cause(stopped))
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return a.serve(ctx, stopped, cancel)
}

// validate checks the options that are not discovery's before anything
// is read or written.
func (a *agent) validate() error {
	o := a.o
	if o.Discovery.NodeName == "" {
		return errors.New("node name is required (--node-name or NODE_NAME)")
	}
	if o.FakeDevices && o.Discovery.Profile == "" {
		return errors.New("--fake-devices needs --profile: it creates device files for simulated chips only")
	}
	var err error
	if a.policy, err = partitions.ParsePolicy(o.Discovery.Registry, o.Publish.ChipModes); err != nil {
		return fmt.Errorf("--chip-modes: %w", err)
	}
	if err := cdi.ValidateVisibleDevicesEnv(o.CDI.VisibleDevicesEnv); err != nil {
		return fmt.Errorf("--visible-devices-env: %w", err)
	}
	if a.effect, err = resourceslices.ParseTaintEffect(o.Publish.UnhealthyTaintEffect); err != nil {
		return fmt.Errorf("--unhealthy-taint-effect: %w", err)
	}
	if err := resourceslices.CheckTemplates(o.Discovery.Registry, o.Publish.PartitionTemplates); err != nil {
		return fmt.Errorf("--partition-templates: %w", err)
	}
	if err := o.Fabric.check(); err != nil {
		return err
	}
	return o.Metrics.Secure.check(o.Metrics.Addr)
}

// discover reads the node's chips and, on a simulated node with fake
// devices, creates their device files. A vendor whose chips cannot be read
// does not stop the others from being served.
func (a *agent) discover(ctx context.Context) error {
	o := a.o
	a.inv, a.discoverErr = source.Discover(ctx, o.Discovery)
	if a.discoverErr != nil && len(a.inv.Chips) == 0 {
		return a.discoverErr
	}
	logWhole(ctx, a.policy, a.inv)
	a.found = a.inv.Vendors()
	if len(a.found) == 0 {
		return source.NoChipsError(o.Discovery.Registry, o.Discovery.Vendors, a.hostRoot)
	}
	if a.discoverErr != nil {
		// One vendor's tool or library failing must not take the other
		// vendor's driver down with it: serve what was found, retry the
		// rest (retryDiscovery) and report it on /readyz.
		klog.FromContext(ctx).Error(a.discoverErr, "Cannot discover the chips of a vendor: serving the others and retrying it", "serving", a.found)
	}
	if o.FakeDevices {
		if err := devicefaker.Create(ctx, o.Discovery.Registry, a.hostRoot, a.inv); err != nil {
			return fmt.Errorf("creating fake devices under %s: %w", a.hostRoot, err)
		}
	}
	return nil
}

// newCDIWriter installs (or removes an unsafe) CDI hook and makes the
// writer of every driver's CDI specs.
func (a *agent) newCDIWriter(ctx context.Context) error {
	o := a.o
	cdiHostRoot := o.CDI.HostRoot
	if cdiHostRoot == "" {
		cdiHostRoot = a.hostRoot
	}
	var hook string
	var err error
	if o.CDI.Hook != "" {
		if hook, err = cdihook.Install(o.CDI.Hook, o.Plugin.StateDir); err != nil {
			return err
		}
	} else if removed, err := cdihook.RemoveUnsafe(o.Plugin.StateDir); err != nil {
		return err
	} else if removed {
		klog.FromContext(ctx).Info("Warning: removed the dynamically linked CDI hook an older agent installed; containers of claims it prepared fail to start until prepared again", "dir", o.Plugin.StateDir)
	}
	served, err := source.Served(o.Discovery.Registry, o.Discovery.Vendors)
	if err != nil {
		return err
	}
	a.writer, err = cdi.NewWriter(ctx, cdi.Config{SpecDir: o.CDI.Dir, HostRoot: cdiHostRoot, VisibleRoot: a.hostRoot, Registry: o.Discovery.Registry,
		VisibleDevicesEnv: o.CDI.VisibleDevicesEnv, LDCacheHook: hook, Served: served, FindingsDir: o.Plugin.StateDir})
	return err
}

// startProbes serves the probes and /metrics where the options ask.
func (a *agent) startProbes(ctx context.Context) error {
	o := a.o
	logger := klog.FromContext(ctx)
	a.probes = &probes{want: len(a.found), metrics: metrics.New(), separateMetrics: o.Metrics.Addr != "", liveTimeout: o.Health.LivenessTimeout,
		hangLimit: o.Health.LibraryHangLimit, discoveryErr: a.discoverErr}
	a.probes.libraries = libraryWatches(o.Discovery)
	if o.Metrics.Addr != "" {
		addr, err := serveMetrics(ctx, o.Metrics.Addr, a.probes.metrics, o.Metrics.Secure, o.Discovery.NodeName, o.KubeClient)
		if err != nil {
			return err
		}
		logger.Info("Serving metrics", "address", addr.String(), "secure", o.Metrics.Secure.Enabled)
		if o.Metrics.OnServing != nil {
			o.Metrics.OnServing(addr)
		}
	}
	if o.Health.Addr != "" {
		addr, err := a.probes.serve(ctx, o.Health.Addr)
		if err != nil {
			return err
		}
		logger.Info("Serving health probes and metrics", "address", addr.String())
		if o.Health.OnServing != nil {
			o.Health.OnServing(addr)
		}
	}
	return nil
}

// startDrivers starts one driver per vendor found. The drivers start side
// by side: each one's start waits about a second for its slice informer
// (upstream polls it once a second), and the second vendor's claims should
// not wait for the first's. A driver that fails to start cancels the
// others' starts: its error is the cause the agent exits with.
func (a *agent) startDrivers(ctx context.Context, cancel context.CancelCauseFunc) error {
	cfgs, err := a.driverConfigs(cancel)
	if err != nil {
		return err
	}
	// Every config is made before any driver starts, so no error return
	// can leave a started driver behind.
	logger := klog.FromContext(ctx)
	started := make([]*driver.Driver, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() {
			d, err := driver.Start(klog.NewContext(ctx, klog.LoggerWithValues(logger, "driver", cfg.Vendor.Names().Driver)), cfg)
			if err != nil {
				cancel(err)
			}
			started[i] = d
		})
	}
	wg.Wait()
	for _, d := range started {
		if d != nil {
			a.drivers = append(a.drivers, d)
			a.probes.add(d)
		}
	}
	return nil
}

// driverConfigs are the configs of the drivers of the vendors found.
func (a *agent) driverConfigs(cancel context.CancelCauseFunc) ([]driver.Config, error) {
	o := a.o
	// One decoder of the claims' opaque configs for every driver, from
	// the registry main holds: each reserves every vendor's variables.
	configs, err := o.Discovery.Registry.ConfigDecoder()
	if err != nil {
		return nil, err
	}
	cfgs := make([]driver.Config, len(a.found))
	for i, found := range a.found {
		v, ok := o.Discovery.Registry.Lookup(found)
		if !ok {
			return nil, fmt.Errorf("serving chips of vendor %q: not a registered vendor", found)
		}
		name := v.Names().Driver
		stateDir := filepath.Join(o.Plugin.StateDir, name)
		tool, err := partitionTool(o, v, a.inv, a.hostRoot, stateDir)
		if err != nil {
			return nil, err
		}
		cfgs[i] = driver.Config{
			Vendor:        v,
			NodeName:      o.Discovery.NodeName,
			Inventory:     a.inv,
			Configs:       configs,
			CDI:           a.writer,
			StateDir:      stateDir,
			KubeClient:    o.KubeClient,
			OnFatal:       cancel,
			RegistrarDir:  o.Plugin.RegistrarDir,
			PluginDataDir: filepath.Join(o.Plugin.PluginDir, name),
			PodUID:        o.Plugin.PodUID,
			Policy:        a.policy,
			PartitionTool: tool,
			Metrics:       a.probes.metrics,

			DeviceMetadata: o.CDI.DeviceMetadata,

			UnhealthyTaintEffect: a.effect,
			PartitionTemplates:   o.Publish.PartitionTemplates,
			HealthCheckTimeout:   devicemonitor.CheckTimeout(o.Health.Interval),
			BootIDFile:           bootIDFile(a.hostRoot),
		}
	}
	return cfgs, nil
}

func (a *agent) stopDrivers() {
	for _, d := range a.drivers {
		d.Stop()
	}
}

// serve runs the background work of the started drivers (device monitor,
// chip metrics, retrying a vendor not discovered) until ctx ends: cleanly
// when stopped, the caller's context, ends.
func (a *agent) serve(ctx, stopped context.Context, cancel context.CancelCauseFunc) error {
	o := a.o
	logger := klog.FromContext(ctx)
	monitor, err := devicemonitor.New(devicemonitor.Config{Discovery: o.Discovery, Interval: o.Health.Interval, Initial: a.inv, Targets: targets(a.drivers)})
	if err != nil {
		return err
	}
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		monitor.Run(ctx)
	}()
	if o.Metrics.Chips {
		if err := startChipMetrics(ctx, o, a.inv, a.drivers, a.probes.metrics); err != nil {
			return err
		}
	}
	if a.discoverErr != nil {
		go retryDiscovery(ctx, o, a.found, a.probes, cancel)
	}
	if o.Fabric.Labels && o.KubeClient != nil {
		go labelNode(ctx, o, o.Discovery.Registry, a.inv)
	}
	logger.Info("Serving", "node", o.Discovery.NodeName, "drivers", len(a.drivers))
	<-ctx.Done()
	// The monitor must not update a driver that is being stopped.
	<-monitorDone
	if stopped.Err() == nil {
		return context.Cause(ctx)
	}
	logger.Info("Shutting down", "reason", context.Cause(stopped))
	return nil
}

// retryDiscovery re-reads the vendors not served because their discovery
// failed at start, every health interval, reporting the error on /readyz
// until it clears. Once their chips can be read it stops the agent with a
// cause saying so: the kubelet restarts the container, and the new
// process serves every vendor (a driver is only started with the agent,
// and its health monitor).
func retryDiscovery(ctx context.Context, o Options, served []inventory.Vendor, p *probes, stop context.CancelCauseFunc) {
	logger := klog.FromContext(ctx)
	opts := o.Discovery
	want := unserved(opts, served)
	if len(want) == 0 {
		return
	}
	opts.Vendors = want
	interval := o.Health.Interval
	if interval <= 0 {
		interval = devicemonitor.DefaultInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for failures := 1; ; failures++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		inv, err := source.Discover(ctx, opts)
		p.setDiscoveryErr(err)
		if err != nil {
			logger.V(2).Info("Discovery of the vendors not served still fails", "vendors", want, "failures", failures, "err", err)
			continue
		}
		if vs := inv.Vendors(); len(vs) > 0 {
			stop(fmt.Errorf("the chips of %v can be read now: restarting to serve them", vs))
		} else {
			logger.Info("Discovery of the vendors not served succeeds now and finds no chips", "vendors", want)
		}
		return
	}
}

// unserved are the --vendors options of o's vendors that are not in
// served.
func unserved(o source.Options, served []inventory.Vendor) []string {
	var out []string
	for _, v := range o.Registry.All() {
		opt := v.Names().Option
		if len(o.Vendors) > 0 && !slices.Contains(o.Vendors, opt) {
			continue
		}
		if !slices.Contains(served, v.Names().Vendor) {
			out = append(out, opt)
		}
	}
	return out
}

// partitionTool is the tool that makes a vendor's partitions: on a
// simulated node a profilenode.PartitionTool keeping its state in the driver's state
// directory (and, with fake devices, the partitions' device nodes under
// the fake root); on a real node the vendor tool (npu-smi, cnmon at the
// configured paths). A node read from recorded tool output has none: it
// cannot make partitions, so it publishes none.
func partitionTool(o Options, v vendors.Vendor, inv inventory.Inventory, hostRoot, stateDir string) (vendors.PartitionTool, error) {
	parts := v.Partitions()
	if parts == nil {
		return nil, nil
	}
	if o.Discovery.Profile != "" {
		fake := &profilenode.PartitionTool{StatePath: filepath.Join(stateDir, profilenode.PartitionStateFile), Vendors: []vendors.Vendor{v},
			Chips: inv.ChipsOf(v.Names().Vendor)}
		if o.FakeDevices {
			fake.Root = hostRoot
		}
		return parts.NewTool(vendors.BackendConfig{Runner: fake, Library: vendors.LibraryNone}), nil
	}
	if o.Discovery.ToolOutput != "" {
		return nil, nil
	}
	root := o.Discovery.Root
	if root == "" {
		root = "/"
	}
	return parts.NewTool(o.Discovery.BackendConfig(v, root, discovery.ExecRunner{Tools: o.Discovery.ToolPaths(), Timeout: o.Discovery.ToolTimeout},
		o.Discovery.Libraries[v.Names().Option])), nil
}

func targets(drivers []*driver.Driver) []devicemonitor.Target {
	out := make([]devicemonitor.Target, len(drivers))
	for i, d := range drivers {
		out[i] = d
	}
	return out
}

// bootIDFile is the node's boot id file under root, where a fixture
// sets it; the process's own otherwise (the boot id is the kernel's, the
// same in every container of the node).
func bootIDFile(root string) string {
	under := filepath.Join(root, driver.BootIDFile)
	if _, err := os.Stat(under); err == nil {
		return under
	}
	return driver.BootIDFile
}

func rootOf(o Options) string {
	if o.Discovery.Root == "" {
		return "/"
	}
	return o.Discovery.Root
}

// logWhole says once, at start, which chips the admin asked to partition
// are published whole, and why (no templates, vendor partition mode off).
func logWhole(ctx context.Context, policy partitions.Policy, inv inventory.Inventory) {
	logger := klog.FromContext(ctx)
	for _, c := range inv.Chips {
		if policy.Requested(c) != partitions.ModePartitioned {
			continue
		}
		if why := policy.WhyWhole(c); why != "" {
			logger.Info("Publishing the chip whole although --chip-modes asks for Partitioned", "device", policy.Registry.ChipDeviceName(c), "model", c.Model, "reason", why)
		}
	}
}

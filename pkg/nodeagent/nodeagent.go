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

// Options configure the node agent.
type Options struct {
	// Discovery says where the chips come from; its Registry has the
	// vendors the agent serves.
	Discovery source.Options
	// FakeDevices creates the simulated chips' device nodes and driver
	// files under Discovery.Root, so containers can start on a node
	// without the hardware. Only with a profile.
	FakeDevices bool
	// RegistrarDir is the kubelet's plugin registration directory.
	RegistrarDir string
	// PluginDir holds one directory per driver with its DRA socket.
	PluginDir string
	// CDIDir is where CDI specs are written.
	CDIDir string
	// CDIHostRoot is the node's root as the container runtime sees it,
	// the prefix of host paths in CDI specs: "/" when the plugin runs in a
	// container with the node's / mounted at Discovery.Root. Default
	// Discovery.Root (a plugin running on the host, or fake devices).
	CDIHostRoot string
	// VisibleDevicesEnv says whether CDI specs set ASCEND_VISIBLE_DEVICES
	// and CAMBRICON_VISIBLE_DEVICES: "auto" (default: left out for Ascend
	// where ascend-docker-runtime is installed), "set" or "omit" (see
	// cdi.Config.VisibleDevicesEnv). The binary's --visible-devices-env
	// [ACCEL_DRA_VISIBLE_DEVICES_ENV].
	VisibleDevicesEnv string
	// StateDir holds one directory per driver with its checkpoint.
	StateDir string
	// CDIHook, if set, is the static hook binary accel-dra-cdi-hook,
	// installed in StateDir as the CDI hook that adds the driver libraries
	// to a container's ld.so cache (cdihook.Install, which refuses a
	// dynamically linked one); the host must see StateDir at the same
	// path.
	CDIHook string
	// PodUID enables rolling updates (see driver.Config.PodUID).
	PodUID types.UID
	// HealthAddr, when set, serves /livez, /readyz and /metrics over HTTP there.
	HealthAddr string
	// LivenessTimeout bounds /livez's check of each driver (zero:
	// LiveTimeout).
	LivenessTimeout time.Duration
	// LibraryHangLimit is how long a call into a vendor library may stay
	// hung before /livez fails (zero: DefaultLibraryHangLimit). The
	// binary's --library-hang-limit.
	LibraryHangLimit time.Duration
	// OnHealthServing, if set, is told the probe server's address (tests
	// listen on port 0).
	OnHealthServing func(net.Addr)
	KubeClient      kubernetes.Interface
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
	// HealthInterval is how often the device monitor (pkg/devicemonitor)
	// re-reads the chips for health and hot add/remove; zero or less:
	// health is only read at start.
	HealthInterval time.Duration
	// DeviceMetadata mounts the device metadata file (KEP-5304) into
	// containers (see driver.Config.DeviceMetadata). The binary's
	// --device-metadata flag, default on.
	DeviceMetadata bool
	// UnhealthyTaintEffect is the effect of the taint on unhealthy chips:
	// "" or NoSchedule, or NoExecute (evicts pods that do not tolerate it).
	UnhealthyTaintEffect string
	// MetricsAddr, when set, serves /metrics there instead of on
	// HealthAddr (e.g. 127.0.0.1:51516: metrics on loopback, probes not).
	MetricsAddr string
	// MetricsSecure serves MetricsAddr over HTTPS to authenticated and
	// authorized callers only (--metrics-secure).
	MetricsSecure SecureMetrics
	// OnMetricsServing, if set, is told the metrics server's address.
	OnMetricsServing func(net.Addr)
	// ChipMetrics reads the chips' utilization, memory, temperature and
	// power every ChipMetricsInterval (pkg/chipmetrics) into /metrics.
	ChipMetrics         bool
	ChipMetricsInterval time.Duration
	// PodResourcesSocket is the kubelet's PodResources socket the chip
	// metrics take pod and container labels from; "" leaves them out.
	PodResourcesSocket string
}

// Run discovers the chips and serves them until ctx is done. It returns
// an error if nothing could be started, or a fatal error of a driver.
func Run(ctx context.Context, o Options) error {
	logger := klog.FromContext(ctx)
	if o.Discovery.NodeName == "" {
		return errors.New("node name is required (--node-name or NODE_NAME)")
	}
	if o.FakeDevices && o.Discovery.Profile == "" {
		return errors.New("--fake-devices needs --profile: it creates device files for simulated chips only")
	}
	policy, err := partitions.ParsePolicy(o.Discovery.Registry, o.ChipModes)
	if err != nil {
		return fmt.Errorf("--chip-modes: %w", err)
	}
	if err := cdi.ValidateVisibleDevicesEnv(o.VisibleDevicesEnv); err != nil {
		return fmt.Errorf("--visible-devices-env: %w", err)
	}
	effect, err := resourceslices.ParseTaintEffect(o.UnhealthyTaintEffect)
	if err != nil {
		return fmt.Errorf("--unhealthy-taint-effect: %w", err)
	}
	if err := resourceslices.CheckTemplates(o.Discovery.Registry, o.PartitionTemplates); err != nil {
		return fmt.Errorf("--partition-templates: %w", err)
	}
	if err := o.MetricsSecure.check(o.MetricsAddr); err != nil {
		return err
	}
	inv, discoverErr := source.Discover(ctx, o.Discovery)
	if discoverErr != nil && len(inv.Chips) == 0 {
		return discoverErr
	}
	logWhole(ctx, policy, inv)
	found := inv.Vendors()
	if len(found) == 0 {
		return source.NoChipsError(o.Discovery.Registry, o.Discovery.Vendors, rootOf(o))
	}
	if discoverErr != nil {
		// One vendor's tool or library failing must not take the other
		// vendor's driver down with it: serve what was found, retry the
		// rest (retryDiscovery) and report it on /readyz.
		logger.Error(discoverErr, "Cannot discover the chips of a vendor: serving the others and retrying it", "serving", found)
	}
	hostRoot := rootOf(o)
	if o.FakeDevices {
		if err := devicefaker.Create(ctx, o.Discovery.Registry, hostRoot, inv); err != nil {
			return fmt.Errorf("creating fake devices under %s: %w", hostRoot, err)
		}
	}
	cdiHostRoot := o.CDIHostRoot
	if cdiHostRoot == "" {
		cdiHostRoot = hostRoot
	}
	var hook string
	if o.CDIHook != "" {
		if hook, err = cdihook.Install(o.CDIHook, o.StateDir); err != nil {
			return err
		}
	} else if removed, err := cdihook.RemoveUnsafe(o.StateDir); err != nil {
		return err
	} else if removed {
		logger.Info("Warning: removed the dynamically linked CDI hook an older agent installed; containers of claims it prepared fail to start until prepared again", "dir", o.StateDir)
	}
	served, err := source.Served(o.Discovery.Registry, o.Discovery.Vendors)
	if err != nil {
		return err
	}
	writer, err := cdi.NewWriter(ctx, cdi.Config{SpecDir: o.CDIDir, HostRoot: cdiHostRoot, VisibleRoot: hostRoot, Registry: o.Discovery.Registry,
		VisibleDevicesEnv: o.VisibleDevicesEnv, LDCacheHook: hook, Served: served, FindingsDir: o.StateDir})
	if err != nil {
		return err
	}

	// stopped is the caller's context (SIGTERM in the binary, whose cause
	// is the signal): its end is a clean stop, a driver's fatal error not.
	stopped := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	probeServer := &probes{want: len(found), metrics: metrics.New(), separateMetrics: o.MetricsAddr != "", liveTimeout: o.LivenessTimeout,
		hangLimit: o.LibraryHangLimit, discoveryErr: discoverErr}
	if probeServer.libraries, err = libraryWatches(o.Discovery); err != nil {
		return err
	}
	if o.MetricsAddr != "" {
		addr, err := serveMetrics(ctx, o.MetricsAddr, probeServer.metrics, o.MetricsSecure, o.Discovery.NodeName, o.KubeClient)
		if err != nil {
			return err
		}
		logger.Info("Serving metrics", "address", addr.String(), "secure", o.MetricsSecure.Enabled)
		if o.OnMetricsServing != nil {
			o.OnMetricsServing(addr)
		}
	}
	if o.HealthAddr != "" {
		addr, err := probeServer.serve(ctx, o.HealthAddr)
		if err != nil {
			return err
		}
		logger.Info("Serving health probes and metrics", "address", addr.String())
		if o.OnHealthServing != nil {
			o.OnHealthServing(addr)
		}
	}
	var drivers []*driver.Driver
	defer func() {
		for _, d := range drivers {
			d.Stop()
		}
	}()
	// One decoder of the claims' opaque configs for every driver, from
	// the registry main holds: each reserves every vendor's variables.
	configs, err := o.Discovery.Registry.ConfigDecoder()
	if err != nil {
		return err
	}
	// The drivers start side by side: each one's start waits about a
	// second for its slice informer (upstream polls it once a second), and
	// the second vendor's claims should not wait for the first's. A driver
	// that fails to start cancels the others' starts: its error is the
	// cause the agent exits with.
	cfgs := make([]driver.Config, len(found))
	for i, found := range found {
		v, ok := o.Discovery.Registry.Lookup(found)
		if !ok {
			return fmt.Errorf("serving chips of vendor %q: not a registered vendor", found)
		}
		name := v.Names().Driver
		stateDir := filepath.Join(o.StateDir, name)
		tool, err := partitionTool(o, v, inv, hostRoot, stateDir)
		if err != nil {
			return err
		}
		cfgs[i] = driver.Config{
			Vendor:        v,
			NodeName:      o.Discovery.NodeName,
			Inventory:     inv,
			Configs:       configs,
			CDI:           writer,
			StateDir:      stateDir,
			KubeClient:    o.KubeClient,
			OnFatal:       cancel,
			RegistrarDir:  o.RegistrarDir,
			PluginDataDir: filepath.Join(o.PluginDir, name),
			PodUID:        o.PodUID,
			Policy:        policy,
			PartitionTool: tool,
			Metrics:       probeServer.metrics,

			DeviceMetadata: o.DeviceMetadata,

			UnhealthyTaintEffect: effect,
			PartitionTemplates:   o.PartitionTemplates,
			HealthCheckTimeout:   devicemonitor.CheckTimeout(o.HealthInterval),
			BootIDFile:           bootIDFile(hostRoot),
		}
	}
	// Every config is made before any driver starts, so no error return
	// can leave a started driver behind.
	started := make([]*driver.Driver, len(found))
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
			drivers = append(drivers, d)
			probeServer.add(d)
		}
	}
	if stopped.Err() != nil {
		logger.Info("Stopped while starting", "reason", context.Cause(stopped))
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	monitor, err := devicemonitor.New(devicemonitor.Config{Discovery: o.Discovery, Interval: o.HealthInterval, Initial: inv, Targets: targets(drivers)})
	if err != nil {
		return err
	}
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		monitor.Run(ctx)
	}()
	if o.ChipMetrics {
		if err := startChipMetrics(ctx, o, inv, drivers, probeServer.metrics); err != nil {
			return err
		}
	}
	if discoverErr != nil {
		go retryDiscovery(ctx, o, found, probeServer, cancel)
	}
	logger.Info("Serving", "node", o.Discovery.NodeName, "drivers", len(drivers))
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
	interval := o.HealthInterval
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
		return parts.NewTool(fake, "", vendors.LibraryNone), nil
	}
	if o.Discovery.ToolOutput != "" {
		return nil, nil
	}
	root := o.Discovery.Root
	if root == "" {
		root = "/"
	}
	return parts.NewTool(discovery.ExecRunner{Tools: o.Discovery.ToolPaths(), Timeout: o.Discovery.ToolTimeout},
		root, o.Discovery.Libraries[v.Names().Option]), nil
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

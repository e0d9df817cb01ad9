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

// driver.go is the plugin's front: its configuration, start and stop,
// and the kubelet's calls (kubeletplugin.DRAPlugin), which take the lock,
// re-read the state and hand each claim to prepare or unprepare.

package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Config configures one driver instance.
type Config struct {
	// Vendor is the vendor whose chips the driver serves.
	Vendor   vendors.Vendor
	NodeName string
	// Inventory is the node's discovered chips; only Vendor's are served.
	Inventory inventory.Inventory
	// Configs decodes the opaque configs of the claims: built from the
	// registry of the vendors the node agent serves
	// (vendors.Registry.ConfigDecoder), so it reserves each vendor's
	// visible-devices variable. Required.
	Configs *v1alpha1.ConfigDecoder
	// CDI writes the per-claim CDI specs.
	CDI *cdi.Writer
	// StateDir holds the checkpoint; one directory per driver.
	StateDir string
	// KubeClient reads ResourceClaims and writes ResourceSlices.
	KubeClient kubernetes.Interface
	// RegistrarDir is the kubelet's plugin registration directory
	// (default kubeletplugin.KubeletRegistryDir).
	RegistrarDir string
	// PluginDataDir holds this driver's DRA socket (default
	// kubeletplugin.KubeletPluginsDir/<driver name>).
	PluginDataDir string
	// PodUID, when set, enables the kubeletplugin helper's rolling update:
	// a new pod of the DaemonSet serves beside the old one until it stops.
	// Both then share the checkpoint; gRPC calls are serialized across
	// them by the helper's file lock and each call re-reads the checkpoint.
	PodUID types.UID
	// PluginOptions are passed to kubeletplugin.Start after the ones the
	// driver sets itself.
	PluginOptions []kubeletplugin.Option
	// OnFatal is called when the helper reports an error that retrying
	// will not fix; the binary cancels its context there.
	OnFatal func(error)
	// Policy gives each chip its mode (Partitioned, Shared, Whole); the
	// zero value publishes every chip Whole.
	Policy partitions.Policy
	// PartitionTool makes, lists and removes partitions (the vendor tool,
	// or profilenode.PartitionTool on a simulated node). Without it no partitions are
	// published: chips that would be Partitioned are Whole.
	PartitionTool vendors.PartitionTool
	// Metrics, if set, records this driver's operations (nil: none).
	Metrics *metrics.Metrics
	// UnhealthyTaintEffect is the effect of the device taint on unhealthy
	// chips: NoSchedule (default) or NoExecute (see resourceslices.Taints).
	UnhealthyTaintEffect resourceapi.DeviceTaintEffect
	// PartitionTemplates, when set, are the only partition templates
	// Partitioned chips offer (resourceslices.Options.Templates).
	PartitionTemplates []string
	// DeviceMetadata has the kubelet plugin helper write the device
	// metadata file of KEP-5304 (beta in 1.37) for each prepared request
	// and mount it into the containers through a CDI spec of its own in
	// the CDI directory: the same facts as the claim's device status, so
	// a launcher can build an HCCL rank table without calling the API.
	DeviceMetadata bool
	// HealthCheckTimeout, when set, says a health monitor re-reads the
	// chips (calling Update) at least this often: the kubelet is told to
	// trust a report that long, and devices not verified for longer are
	// reported Unknown. Zero: health is what discovery found at start,
	// vouched for at every report.
	HealthCheckTimeout time.Duration
	// BootIDFile is the node's boot id file (BootIDFile, seen through the
	// host root); "" tracks no reboots. After a reboot start-up prepares
	// the checkpoint's claims again (see reboot.go).
	BootIDFile string
}

// Driver implements kubeletplugin.DRAPlugin for one vendor.
type Driver struct {
	name   string
	vendor vendors.Vendor
	// names are vendor's names, parts the vendor's partitions (nil: none).
	names vendors.Names
	parts vendors.Partitions
	node  string
	inv   inventory.Inventory
	chips map[string]inventory.Chip // by DRA device name
	// slots are the partition devices, by DRA device name.
	slots map[string]slot
	// modes are the modes of the chips, by DRA device name.
	modes  map[string]partitions.Mode
	policy partitions.Policy
	tool   vendors.PartitionTool
	cdi    *cdi.Writer
	// configs decodes the claims' opaque configs (Config.Configs).
	configs *v1alpha1.ConfigDecoder
	store   *checkpoint.Store
	fatal   func(error)
	// kube reads the claims to prepare again after a reboot.
	kube       kubernetes.Interface
	bootIDFile string
	// rebootID is the boot id of a start after a reboot, until reprepare
	// has prepared the checkpoint's claims again and recorded it. Guarded
	// by mu once the driver serves.
	rebootID string
	// missing are the claims of the checkpoint not prepared again since
	// the reboot (reboot.go), for Ready; guarded by rebootMu, not mu, so
	// /readyz never waits for a prepare.
	rebootMu sync.Mutex
	missing  map[types.UID]missingClaim
	// stopReprepare ends the background re-prepare, which closes
	// reprepareDone (nil when none runs).
	stopReprepare context.CancelFunc
	reprepareDone chan struct{}
	// metrics: see metrics.go; its Metrics may be nil (records nothing).
	metrics driverMetrics
	// rolling: another instance (the other pod of a rolling update) may
	// write the checkpoint too, so each call re-reads it.
	rolling bool
	// taintEffect and healthTimeout are Config.UnhealthyTaintEffect and
	// Config.HealthCheckTimeout.
	taintEffect   resourceapi.DeviceTaintEffect
	healthTimeout time.Duration
	// templates is Config.PartitionTemplates.
	templates []string
	// health is what WatchHealthStatus and healthReport send, replaced
	// whole by Update; healthWake is closed when it changes.
	health     atomic.Pointer[healthState]
	healthMu   sync.Mutex
	healthWake chan struct{}
	// live holds Live's connections to the driver's own sockets.
	live liveClients

	// metadata: the helper writes the device metadata file
	// (Config.DeviceMetadata), so prepare hands it the devices' facts.
	metadata bool
	// status writes the claims' status.devices in the background;
	// stopStatus ends it.
	status     *claimstatus.Writer
	stopStatus context.CancelFunc

	mu       sync.Mutex
	prepared checkpoint.Data
	// unsure are the chips (by index) where a partition create failed:
	// it may have made the partition anyway. Guarded by mu.
	unsure map[int]bool

	// helper serves the DRA socket; registrar registers it with the
	// kubelet, once the claims of the checkpoint are prepared again
	// after a reboot (see serve).
	helper, registrar *kubeletplugin.Helper
	// regSocket and draSocket are the helper's sockets, for Live.
	regSocket, draSocket string
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// Start loads the checkpoint, cleans up CDI specs of claims it does not
// know, prepares the checkpoint's claims again after a reboot, registers
// with the kubelet and publishes the node's ResourceSlices.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	logger := klog.FromContext(ctx)
	d, err := newDriver(cfg)
	if err != nil {
		return nil, err
	}
	regDir, dataDir, err := d.pluginDirs(cfg)
	if err != nil {
		return nil, err
	}
	if err := d.startupReconcile(ctx, dataDir); err != nil {
		return nil, err
	}
	opts := d.pluginOptions(cfg, regDir, dataDir)
	statusCtx, stopStatus := context.WithCancel(ctx)
	d.status, d.stopStatus = claimstatus.New(cfg.KubeClient, d.name), stopStatus
	go d.status.Run(statusCtx)
	if err := d.serve(ctx, opts); err != nil {
		d.Stop()
		return nil, err
	}
	// PublishResources returns once the slice informer has listed the
	// node's slices: while the API server is unreachable it retries (and
	// logs each failure) until it answers. Say what the wait is for.
	logger.Info("Publishing ResourceSlices: waiting for the API server to list this node's slices", "driver", d.name, "node", cfg.NodeName)
	if err := d.helper.PublishResources(ctx, d.resources(d.inv)); err != nil {
		d.Stop()
		return nil, fmt.Errorf("publishing ResourceSlices of %s: %w", d.name, err)
	}
	d.trackMetrics()
	logger.Info("Driver started", "driver", d.name, "node", cfg.NodeName, "chips", len(d.inv.Chips), "partitionDevices", len(d.slots),
		"chipModes", d.policy.String(), "preparedClaims", len(d.PreparedClaims()))
	return d, nil
}

// newDriver is the driver cfg describes, with its chips indexed and
// their health as discovered, before anything is read or served.
func newDriver(cfg Config) (*Driver, error) {
	if cfg.Vendor == nil {
		return nil, errors.New("starting driver: no vendor")
	}
	if cfg.Configs == nil {
		return nil, fmt.Errorf("starting driver %s: no config decoder", cfg.Vendor.Names().Driver)
	}
	names := cfg.Vendor.Names()
	d := &Driver{
		name:    names.Driver,
		vendor:  cfg.Vendor,
		names:   names,
		parts:   cfg.Vendor.Partitions(),
		node:    cfg.NodeName,
		inv:     cfg.Inventory.Only(names.Vendor),
		chips:   map[string]inventory.Chip{},
		slots:   map[string]slot{},
		policy:  cfg.Policy,
		tool:    cfg.PartitionTool,
		cdi:     cfg.CDI,
		configs: cfg.Configs,
		store:   checkpoint.New(cfg.StateDir, CheckpointFile),
		fatal:   cfg.OnFatal,
		kube:    cfg.KubeClient,

		bootIDFile: cfg.BootIDFile,
		metrics:    driverMetrics{Metrics: cfg.Metrics},
		rolling:    cfg.PodUID != "",

		metadata: cfg.DeviceMetadata,

		taintEffect:   cfg.UnhealthyTaintEffect,
		templates:     cfg.PartitionTemplates,
		healthTimeout: cfg.HealthCheckTimeout,
		healthWake:    make(chan struct{}),
	}
	if d.tool == nil {
		d.policy.NoPartitions = true
	}
	d.index(d.inv.Chips)
	d.setHealth(d.inv.Chips, nil, time.Time{})
	return d, nil
}

// pluginDirs are the kubelet's registration directory and the driver's
// plugin data directory, made if missing.
func (d *Driver) pluginDirs(cfg Config) (regDir, dataDir string, err error) {
	regDir, dataDir = cfg.RegistrarDir, cfg.PluginDataDir
	if regDir == "" {
		regDir = kubeletplugin.KubeletRegistryDir
	}
	if dataDir == "" {
		dataDir = filepath.Join(kubeletplugin.KubeletPluginsDir, d.name)
	}
	// The kubelet creates its registry directory, but not our plugin's
	// directory; a DaemonSet mounting the parents cannot either.
	for _, dir := range []string{regDir, dataDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", "", fmt.Errorf("starting kubelet plugin %s: %w", d.name, err)
		}
	}
	return regDir, dataDir, nil
}

// pluginOptions are the helper's options, and set the helper's socket
// names for Live.
func (d *Driver) pluginOptions(cfg Config, regDir, dataDir string) []kubeletplugin.Option {
	opts := append([]kubeletplugin.Option{
		kubeletplugin.DriverName(d.name),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.KubeClient),
		kubeletplugin.RegistrarDirectoryPath(regDir),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
	}, cfg.PluginOptions...)
	// The helper's own socket names (kubeletplugin Start), for Live.
	d.regSocket, d.draSocket = filepath.Join(regDir, d.name+"-reg.sock"), filepath.Join(dataDir, "dra.sock")
	if cfg.PodUID != "" {
		opts = append(opts, kubeletplugin.RollingUpdate(cfg.PodUID))
		d.regSocket = filepath.Join(regDir, kubeletplugin.RollingUpdateRegistrarSocketFile(regDir, d.name, cfg.PodUID))
		d.draSocket = filepath.Join(dataDir, "dra-"+string(cfg.PodUID)+".sock")
	}
	if cfg.DeviceMetadata {
		// v1beta1 is the latest (and, in v0.37, the only current) version;
		// the helper refuses to start without it.
		opts = append(opts, kubeletplugin.EnableDeviceMetadata(true, []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion}),
			kubeletplugin.CDIDirectory(cfg.CDI.SpecDir()))
	}
	return opts
}

// serve starts the helper in two halves, as the helper's split
// deployments do: first the DRA socket alone, on which a round of
// re-prepare after a reboot runs; then the registration with the
// kubelet, whose new claims must not take the partitions (and their ids)
// before the checkpoint's claims have theirs. Both halves get the same
// options, so the registration names the DRA socket the first serves.
// Claims the round could not prepare are retried in the background: a
// bad claim must not keep the node's other claims from the kubelet.
func (d *Driver) serve(ctx context.Context, opts []kubeletplugin.Option) error {
	helper, err := kubeletplugin.Start(ctx, d, append(slices.Clone(opts), kubeletplugin.RegistrationService(false))...)
	if err != nil {
		return fmt.Errorf("starting kubelet plugin %s: serving the DRA socket: %w", d.name, err)
	}
	d.helper = helper
	if !d.reprepare(ctx) {
		retryCtx, stop := context.WithCancel(ctx)
		d.stopReprepare, d.reprepareDone = stop, make(chan struct{})
		go d.retryReprepare(retryCtx, d.reprepareDone)
	}
	registrar, err := kubeletplugin.Start(ctx, d, append(slices.Clone(opts), kubeletplugin.DRAService(false))...)
	if err != nil {
		return fmt.Errorf("starting kubelet plugin %s: registering with the kubelet: %w", d.name, err)
	}
	d.registrar = registrar
	return nil
}

// startupReconcile loads the checkpoint and removes what it does not
// list. In a rolling update the other pod may be serving a prepare right
// now, whose partition and CDI spec the checkpoint lists only at its end:
// so this runs under the helper's lock, between that pod's calls.
func (d *Driver) startupReconcile(ctx context.Context, dataDir string) error {
	if d.rolling {
		unlock, err := lockStartup(ctx, dataDir)
		if err != nil {
			return fmt.Errorf("starting driver %s: %w", d.name, err)
		}
		defer unlock()
	}
	if err := d.loadState(ctx); err != nil {
		return err
	}
	if err := d.checkBoot(ctx); err != nil {
		return err
	}
	if err := d.reconcilePartitions(ctx); err != nil {
		return fmt.Errorf("starting driver %s: %w", d.name, err)
	}
	d.retryOrphans(ctx)
	return nil
}

// index makes chips the devices the driver serves: the chips by device
// name and, for Partitioned ones, their partition slots. Callers hold d.mu
// (or, in Start, are the only user).
func (d *Driver) index(chips []inventory.Chip) {
	d.chips = make(map[string]inventory.Chip, len(chips))
	d.slots = map[string]slot{}
	d.modes = make(map[string]partitions.Mode, len(chips))
	for _, c := range chips {
		name := d.names.ChipDevice(c.Index)
		d.chips[name] = c
		d.modes[name] = d.policy.ModeOf(c)
		if d.modes[name] != partitions.ModePartitioned {
			continue
		}
		if m, ok := vendors.PartitionModelOf(d.vendor, c); ok {
			for _, s := range m.Slots(c) {
				d.slots[d.names.PartitionDevice(c.Index, s)] = slot{chip: c, template: s.Template, model: m}
			}
		}
	}
}

// resources are the ResourceSlices of inv's chips of this driver.
func (d *Driver) resources(inv inventory.Inventory) resourceslice.DriverResources {
	own := vendors.MustRegistry(d.vendor)
	return resourceslices.DriverResourcesFor(own, d.node, inv, resourceslices.Options{Policy: d.policy, UnhealthyTaintEffect: d.taintEffect, Templates: d.templates})[d.name]
}

// Vendor is the vendor whose chips the driver serves.
func (d *Driver) Vendor() inventory.Vendor { return d.names.Vendor }

// Registered reports whether the kubelet has confirmed the registration.
func (d *Driver) Registered() bool {
	if d.registrar == nil {
		return false
	}
	st := d.registrar.RegistrationStatus()
	return st != nil && st.PluginRegistered
}

// Name is the DRA driver name.
func (d *Driver) Name() string { return d.name }

// Stop unregisters from the kubelet and stops the slice controller and
// the background re-prepare. The slices stay: a restarting plugin takes
// them over.
func (d *Driver) Stop() {
	if d.registrar != nil {
		d.registrar.Stop()
	}
	if d.stopReprepare != nil {
		// Before the DRA socket goes: a round in flight ends with its
		// call, and none writes the checkpoint after Stop.
		d.stopReprepare()
		<-d.reprepareDone
	}
	if d.helper != nil {
		d.helper.Stop()
	}
	d.live.close()
	if d.stopStatus != nil {
		// Status writes still queued are dropped: the next instance's
		// prepare (kubelet retries) or unprepare writes them again.
		d.stopStatus()
	}
}

// HandleError implements kubeletplugin.DRAPlugin.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg, "driver", d.name)
	d.countPublishError(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.fatal != nil {
		d.fatal(fmt.Errorf("%s: %s: %w", d.name, msg, err))
	}
}

// PrepareResourceClaims implements kubeletplugin.DRAPlugin. Each claim
// succeeds or fails on its own: a bad config in one claim does not stop
// the others of the same call.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	start := time.Now()
	defer trace.StartRegion(ctx, RegionPrepare).End()
	locking := trace.StartRegion(ctx, RegionPrepareLock)
	d.mu.Lock()
	locking.End()
	defer d.mu.Unlock()
	defer d.countPrepared()
	if err := d.reload(); err != nil {
		refs := make([]klog.ObjectRef, 0, len(claims))
		for _, c := range claims {
			refs = append(refs, klog.KObj(c))
		}
		d.callFailed(ctx, metrics.Prepare, refs, start, err)
		return nil, err
	}
	d.retryOrphans(ctx)
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		begin := time.Now()
		devices, status, err := d.prepare(ctx, claim)
		took := time.Since(begin)
		d.metrics.Observe(metrics.Prepare, d.name, took, err)
		if err != nil {
			err = fmt.Errorf("claim %s/%s (%s): %w", claim.Namespace, claim.Name, claim.UID, err)
			logger.Error(err, "Preparing claim failed", "claim", klog.KObj(claim), "claimUID", claim.UID, "duration", took)
		} else {
			if v := logger.V(2); v.Enabled() {
				prepared := make([]string, 0, len(devices))
				for _, dev := range devices {
					prepared = append(prepared, dev.DeviceName)
				}
				v.Info("Prepared claim", "claim", klog.KObj(claim), "claimUID", claim.UID, "devices", prepared, "duration", took)
			}
			// In the background, retried: a status the API refuses for a
			// while must not fail nor delay the pod's start.
			d.status.Prepared(claim.Namespace, claim.Name, claim.UID, status)
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices, Err: err}
	}
	return out, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin. A claim this
// plugin does not know is not an error (kubelet may retry), but a CDI spec
// left for it is still removed.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	start := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.countPrepared()
	if err := d.reload(); err != nil {
		refs := make([]klog.ObjectRef, 0, len(claims))
		for _, c := range claims {
			refs = append(refs, klog.KRef(c.Namespace, c.Name))
		}
		d.callFailed(ctx, metrics.Unprepare, refs, start, err)
		return nil, err
	}
	d.retryOrphans(ctx)
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		begin := time.Now()
		devices, err := d.unprepare(ctx, c)
		took := time.Since(begin)
		d.metrics.Observe(metrics.Unprepare, d.name, took, err)
		out[c.UID] = err
		if err != nil {
			logger.Error(err, "Unpreparing claim failed", "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID, "duration", took)
			continue
		}
		logger.V(2).Info("Unprepared claim", "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID, "devices", devices, "duration", took)
		// Also for a claim not prepared here: a status an earlier
		// instance wrote before it lost its state is cleared too.
		d.status.Unprepared(c.Namespace, c.Name, c.UID)
	}
	return out, nil
}

// Package driver is the kubelet plugin of one accel-dra driver
// (ascend.accel-dra.dev or cambricon.accel-dra.dev) on one node: it
// publishes the node's chips of that vendor as ResourceSlices and prepares
// allocated chips for containers through CDI, remembering what it prepared
// in a checkpoint so restarts lose nothing.
//
// # Whole chips, partitions and shares
//
// Each chip is published in the mode the node agent gives it
// (partitions.Policy):
//
//   - Whole (the default): the chip alone. Partitions and shares are
//     published only where the admin asks for them: partition devices
//     multiply what the scheduler evaluates per claim, and in Kubernetes
//     1.37 an admin-access claim cannot get a chip in use that offers
//     partitions (the allocator still checks its shared counters,
//     kubernetes/kubernetes#140729).
//   - Partitioned (where the model has partitions): the whole chip
//     and its partition devices (Ascend vNPUs, Cambricon sMLU instances),
//     kept apart by the chip's counter set. Preparing a partition device
//     creates the partition with the vendor tool (npu-smi create-vnpu,
//     cnmon smlu), records it in the checkpoint before the kubelet gets an
//     answer, and points the CDI spec at the partition's own device node;
//     Unprepare destroys it. On start-up the plugin lists the partitions of
//     its Partitioned chips and destroys those the checkpoint does not
//     know, which a crash between creating and recording leaves behind
//     (chips served by accel-dra must not be partitioned by hand).
//   - Shared: one device with allowMultipleAllocations; each claim gets the
//     memory and cores it requested (consumable capacity). The container
//     gets the whole chip's device node and the share in
//     DRA_DEVICE_<NAME>_MEMORY / _CORES / _SHARE_ID.
//
// # What is isolated
//
// A vNPU is isolated by the Ascend driver and firmware: its AI cores, AI
// CPUs and HBM are its own and the container only has /dev/vdavinci<id>
// (on a 310P two vir01 time-share one vGroup of 2 AI cores). An sMLU
// instance is limited by the Cambricon driver: its device memory is capped
// at the profile's size and its MLU-core time at the profile's utilization
// quota, but the cores are time-shared with the chip's other instances,
// not dedicated; the container has the chip's nodes plus the instance's
// capability node, without which the driver refuses work on a chip in sMLU
// mode.
//
// A share of a Shared chip isolates nothing. The scheduler never hands out
// more memory or cores than the chip has, but nothing on the node enforces
// a share: every container sharing the chip sees the whole chip and all of
// its memory, can allocate beyond its share (and so starve or crash its
// neighbours with out-of-memory errors), and competes for all AI/MLU cores
// by the driver's time slicing. The share is passed to the container
// (DRA_DEVICE_<NAME>_MEMORY, _CORES) for frameworks to limit themselves
// (e.g. a serving engine's memory fraction); it is not a limit. Faults of
// one process may reset the chip for all. Use partitions where tenants
// must not affect each other, shares for cooperative workloads.
package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/metrics"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// CheckpointFile is the checkpoint's name inside the driver's state directory.
const CheckpointFile = "checkpoint.json"

// Config configures one driver instance.
type Config struct {
	Vendor   inventory.Vendor
	NodeName string
	// Inventory is the node's discovered chips; only Vendor's are served.
	Inventory inventory.Inventory
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
	// or partitionsim.Fake on a simulated node). Without it no partitions are
	// published: chips that would be Partitioned are Whole.
	PartitionTool partitions.Tool
	// Metrics, if set, records this driver's operations (nil: none).
	Metrics *metrics.Metrics
	// UnhealthyTaintEffect is the effect of the device taint on unhealthy
	// chips: NoSchedule (default) or NoExecute (see resourceslices.Taints).
	UnhealthyTaintEffect resourceapi.DeviceTaintEffect
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
}

// Driver implements kubeletplugin.DRAPlugin for one vendor.
type Driver struct {
	name   string
	vendor inventory.Vendor
	node   string
	inv    inventory.Inventory
	chips  map[string]inventory.Chip // by DRA device name
	// slots are the partition devices, by DRA device name.
	slots  map[string]slot
	policy partitions.Policy
	tool   partitions.Tool
	cdi    *cdi.Writer
	store  *checkpoint.Store
	fatal  func(error)
	// metrics: see metrics.go; its Metrics may be nil (records nothing).
	metrics driverMetrics
	// rolling: another instance (the other pod of a rolling update) may
	// write the checkpoint too, so each call re-reads it.
	rolling bool
	// taintEffect and healthTimeout are Config.UnhealthyTaintEffect and
	// Config.HealthCheckTimeout.
	taintEffect   resourceapi.DeviceTaintEffect
	healthTimeout time.Duration
	// health is what WatchHealthStatus and healthReport send, replaced
	// whole by Update; healthWake is closed when it changes.
	health     atomic.Pointer[healthState]
	healthMu   sync.Mutex
	healthWake chan struct{}

	// metadata: the helper writes the device metadata file
	// (Config.DeviceMetadata), so prepare hands it the devices' facts.
	metadata bool
	// status writes the claims' status.devices in the background;
	// stopStatus ends it.
	status     *claimstatus.Writer
	stopStatus context.CancelFunc

	mu       sync.Mutex
	prepared checkpoint.Data

	helper *kubeletplugin.Helper
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// Start loads the checkpoint, cleans up CDI specs of claims it does not
// know, registers with the kubelet and publishes the node's ResourceSlices.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	logger := klog.FromContext(ctx)
	d := &Driver{
		name:    vendors.DriverFor(cfg.Vendor),
		vendor:  cfg.Vendor,
		node:    cfg.NodeName,
		inv:     cfg.Inventory.Only(cfg.Vendor),
		chips:   map[string]inventory.Chip{},
		slots:   map[string]slot{},
		policy:  cfg.Policy,
		tool:    cfg.PartitionTool,
		cdi:     cfg.CDI,
		store:   checkpoint.New(cfg.StateDir, CheckpointFile),
		fatal:   cfg.OnFatal,
		metrics: driverMetrics{Metrics: cfg.Metrics},
		rolling: cfg.PodUID != "",

		metadata: cfg.DeviceMetadata,

		taintEffect:   cfg.UnhealthyTaintEffect,
		healthTimeout: cfg.HealthCheckTimeout,
		healthWake:    make(chan struct{}),
	}
	if d.name == "" {
		return nil, fmt.Errorf("starting driver: unknown vendor %q", cfg.Vendor)
	}
	if d.tool == nil {
		d.policy.NoPartitions = true
	}
	d.index(d.inv.Chips)
	d.setHealth(d.inv.Chips, nil, time.Time{})
	if err := d.loadState(ctx); err != nil {
		return nil, err
	}
	d.reconcilePartitions(ctx)

	regDir, dataDir := cfg.RegistrarDir, cfg.PluginDataDir
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
			return nil, fmt.Errorf("starting kubelet plugin %s: %w", d.name, err)
		}
	}
	opts := append([]kubeletplugin.Option{
		kubeletplugin.DriverName(d.name),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.KubeClient),
		kubeletplugin.RegistrarDirectoryPath(regDir),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
	}, cfg.PluginOptions...)
	if cfg.PodUID != "" {
		opts = append(opts, kubeletplugin.RollingUpdate(cfg.PodUID))
	}
	if cfg.DeviceMetadata {
		// v1beta1 is the latest (and, in v0.37, the only current) version;
		// the helper refuses to start without it.
		opts = append(opts, kubeletplugin.EnableDeviceMetadata(true, []schema.GroupVersion{metadatav1beta1.SchemeGroupVersion}),
			kubeletplugin.CDIDirectory(cfg.CDI.SpecDir()))
	}
	statusCtx, stopStatus := context.WithCancel(ctx)
	d.status, d.stopStatus = claimstatus.New(cfg.KubeClient, d.name), stopStatus
	go d.status.Run(statusCtx)
	helper, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		stopStatus()
		return nil, fmt.Errorf("starting kubelet plugin %s: %w", d.name, err)
	}
	d.helper = helper
	// PublishResources returns once the slice informer has listed the
	// node's slices: while the API server is unreachable it retries (and
	// logs each failure) until it answers. Say what the wait is for.
	logger.Info("Publishing ResourceSlices: waiting for the API server to list this node's slices", "driver", d.name, "node", cfg.NodeName)
	if err := helper.PublishResources(ctx, d.resources(d.inv)); err != nil {
		helper.Stop()
		stopStatus()
		return nil, fmt.Errorf("publishing ResourceSlices of %s: %w", d.name, err)
	}
	d.trackMetrics()
	logger.Info("Driver started", "driver", d.name, "node", cfg.NodeName, "chips", len(d.inv.Chips), "partitionDevices", len(d.slots),
		"chipModes", d.policy.String(), "preparedClaims", len(d.prepared.Claims))
	return d, nil
}

// index makes chips the devices the driver serves: the chips by device
// name and, for Partitioned ones, their partition slots. Callers hold d.mu
// (or, in Start, are the only user).
func (d *Driver) index(chips []inventory.Chip) {
	d.chips = make(map[string]inventory.Chip, len(chips))
	d.slots = map[string]slot{}
	for _, c := range chips {
		d.chips[resourceslices.DeviceName(c)] = c
		if d.policy.ModeOf(c) == partitions.ModePartitioned {
			for _, s := range partitions.Slots(c) {
				d.slots[partitions.DeviceName(c, s)] = slot{chip: c, template: s.Template}
			}
		}
	}
}

// resources are the ResourceSlices of inv's chips of this driver.
func (d *Driver) resources(inv inventory.Inventory) resourceslice.DriverResources {
	return resourceslices.DriverResourcesFor(d.node, inv, resourceslices.Options{Policy: d.policy, UnhealthyTaintEffect: d.taintEffect})[d.name]
}

// Vendor is the vendor whose chips the driver serves.
func (d *Driver) Vendor() inventory.Vendor { return d.vendor }

// Registered reports whether the kubelet has confirmed the registration.
func (d *Driver) Registered() bool {
	if d.helper == nil {
		return false
	}
	st := d.helper.RegistrationStatus()
	return st != nil && st.PluginRegistered
}

// reload re-reads the checkpoint, which another instance of the plugin
// (during a rolling update) may have changed since. A lone instance is
// the checkpoint's only writer and keeps it in memory. Callers hold d.mu.
func (d *Driver) reload() error {
	if !d.rolling {
		return nil
	}
	data, err := d.store.Load()
	if err != nil {
		return fmt.Errorf("reloading state of %s: %w", d.name, err)
	}
	d.prepared = data
	return nil
}

// Name is the DRA driver name.
func (d *Driver) Name() string { return d.name }

// Stop unregisters from the kubelet and stops the slice controller. The
// slices stay: a restarting plugin takes them over.
func (d *Driver) Stop() {
	if d.helper != nil {
		d.helper.Stop()
	}
	if d.stopStatus != nil {
		// Status writes still queued are dropped: the next instance's
		// prepare (kubelet retries) or unprepare writes them again.
		d.stopStatus()
	}
}

// loadState reads the checkpoint and removes CDI specs of claims that it
// does not list (left by a crash between writing the spec and the
// checkpoint: kubelet got no answer and will ask again). A corrupt
// checkpoint is set aside and the prepared claims are rebuilt from the CDI
// specs, so devices in use stay protected.
func (d *Driver) loadState(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	data, err := d.store.Load()
	var corrupt *checkpoint.CorruptError
	if errors.As(err, &corrupt) {
		aside, err := d.store.SetAside()
		if err != nil {
			return err
		}
		logger.Error(corrupt, "Checkpoint is corrupt; set it aside and rebuilding the prepared claims from the CDI specs", "setAside", aside)
		data, err = d.rebuildFromCDI(ctx)
		if err != nil {
			return fmt.Errorf("rebuilding state after corrupt checkpoint %s: %w", corrupt.Path, err)
		}
		// Until this succeeds the corrupt file stays (SetAside links it),
		// so a restart rebuilds again rather than forgetting the claims.
		if err := d.store.Save(data); err != nil {
			return fmt.Errorf("saving the checkpoint rebuilt from the CDI specs (the corrupt one stays for the next start): %w", err)
		}
		d.prepared = data
		return nil
	}
	if err != nil {
		return fmt.Errorf("loading state of %s: %w", d.name, err)
	}
	d.prepared = data
	uids, err := d.cdi.ClaimUIDs(d.vendor)
	if err != nil {
		return fmt.Errorf("listing CDI specs of %s: %w", d.name, err)
	}
	for _, uid := range uids {
		if _, ok := data.Claims[uid]; ok {
			continue
		}
		logger.Info("Removing CDI spec of a claim the checkpoint does not list", "claimUID", uid)
		if err := d.cdi.Delete(ctx, d.vendor, uid); err != nil {
			return fmt.Errorf("removing stale CDI spec of claim %s: %w", uid, err)
		}
	}
	return nil
}

// HandleError implements kubeletplugin.DRAPlugin.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg, "driver", d.name)
	d.countPublishError(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.fatal != nil {
		d.fatal(fmt.Errorf("%s: %s: %w", d.name, msg, err))
	}
}

// rebuildFromCDI recovers the prepared claims from the CDI specs on disk,
// which the plugin writes before the checkpoint. Request names are not in
// the specs; they are only informational in the checkpoint.
func (d *Driver) rebuildFromCDI(ctx context.Context) (checkpoint.Data, error) {
	logger := klog.FromContext(ctx)
	data := checkpoint.Data{Claims: map[types.UID]checkpoint.Claim{}}
	uids, err := d.cdi.ClaimUIDs(d.vendor)
	if err != nil {
		return data, err
	}
	for _, uid := range uids {
		sc, err := d.cdi.ReadClaim(d.vendor, uid)
		if err != nil {
			// Keep the file for the operator; kubelet re-prepares the claim
			// if a pod still needs it.
			logger.Error(err, "Cannot recover a claim from its CDI spec", "claimUID", uid)
			continue
		}
		c := checkpoint.Claim{Namespace: sc.Namespace, Name: sc.Name}
		devs := make([]string, 0, len(sc.Devices))
		for dev := range sc.Devices {
			devs = append(devs, dev)
		}
		sort.Strings(devs)
		for _, dev := range devs {
			entry := checkpoint.Device{Pool: d.node, Device: dev, CDIDeviceIDs: sc.Devices[dev]}
			if err := decodeAnnotations(sc.Annotations[dev], &entry); err != nil {
				logger.Error(err, "Cannot recover the partition or share of a device from its CDI spec", "claimUID", uid, "device", dev)
			}
			c.Devices = append(c.Devices, entry)
		}
		data.Claims[uid] = c
		logger.Info("Recovered prepared claim from its CDI spec", "claim", klog.KRef(sc.Namespace, sc.Name), "claimUID", uid, "devices", devs)
	}
	return data, nil
}

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

// Package cdi writes one CDI spec per prepared ResourceClaim, with the
// device nodes, driver mounts and environment that the vendors' own
// container runtimes (ascend-docker-runtime, cambricon-k8s-device-plugin)
// give a container, so kubelet can hand the container runtime plain CDI
// device IDs and no vendor runtime is needed on the node.
//
// Layout of a claim's spec (kind accel-dra.dev/ascend or
// accel-dra.dev/cambricon, file <vendor>-<class>_<claimUID>.json):
//
//   - one CDI device per DRA device, named <claimUID>-<device> so a stale
//     entry in a runtime's cache can never match a later claim; it carries
//     the chip's own device nodes and per-device environment;
//   - spec-level containerEdits for what the whole claim needs: the
//     vendor's shared device nodes, the read-only driver mounts, the
//     visible-devices list and the DRA_* claim variables. The CDI spec
//     requires runtimes to apply these once to every container that gets
//     any device of the spec, so no extra "claim" device is needed.
package cdi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	cdiparser "tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// specExt is the extension of the specs Write writes: the CDI library
// writes a .json spec with encoding/json, a .yaml one with yaml v3, whose
// encoder allocated 40 % of all the bytes of a 16-chip prepare (and so
// set how often the agent's GC ran, the prepare's tail). Runtimes read
// both.
const specExt = ".json"

// legacySpecExt is the extension of the specs agents before wrote. A
// claim prepared then still has one: it is read, listed and removed like
// a current one, and replaced when the claim's spec is written again (two
// specs of the same devices would conflict in the runtime's CDI cache).
const legacySpecExt = ".yaml"

// Config says where specs go and where the host's files are.
type Config struct {
	// SpecDir is the CDI spec directory the container runtime reads;
	// default /var/run/cdi, the directory for generated specs.
	SpecDir string
	// HostRoot is the node's root as the container runtime sees it, "/" in
	// production, a fixture tree in tests. A device node's or mount's host
	// path is HostRoot joined with its container path, and driver files are
	// mounted only if they exist there. Default "/".
	HostRoot string
	// VisibleRoot is where the plugin itself sees HostRoot, to check which
	// driver files exist: "/host" when a DaemonSet mounts the node's / at
	// /host. Default HostRoot.
	VisibleRoot string
	// VisibleDevicesEnv says whether specs set the vendors'
	// visible-devices variables (ASCEND_VISIBLE_DEVICES,
	// CAMBRICON_VISIBLE_DEVICES): VisibleDevicesAuto (the default, ""),
	// VisibleDevicesSet or VisibleDevicesOmit. A vendor runtime still
	// configured on the node acts on the variable (see vendorruntime.go).
	VisibleDevicesEnv string
	// Registry has the vendors the node serves: the visible-devices
	// variables of all of them are reserved in every claim.
	Registry vendors.Registry
	// Served are the vendors this agent serves (its --vendors); empty,
	// all of Registry. The agent serving a vendor sees that vendor's
	// node paths (the chart mounts them only into its node group), so it
	// alone decides whether the vendor's runtime is installed.
	Served []inventory.Vendor
	// FindingsDir, when set, is a directory every agent of the node
	// shares (the --state-dir): the agent serving a vendor records there
	// whether it found the vendor's runtime, and agents of the node's
	// other groups read it (vendorruntime.go).
	FindingsDir string
	// LDCacheHook is the host path of the hook executable (cdihook.Install)
	// that adds a vendor's LibraryDirs to a container's ld.so cache; empty,
	// specs get no hook and the libraries are found only where the image
	// or the claim's config says.
	LDCacheHook string
}

// Writer writes and removes the CDI specs of claims. It is safe for
// concurrent use; claims are independent files, written one at a time
// (see writeSpec).
type Writer struct {
	cfg   Config
	cache *cdiapi.Cache
	// visible decides, per vendor, whether the specs list its chips in
	// its visible-devices variable (vendorruntime.go).
	visible *visibleEnv
	// reserved are the visible-devices variables of every vendor of
	// cfg.Registry, which no claim's config may set: worked out once
	// here, checked for every device prepared.
	reserved []string
}

// NewWriter returns a Writer for cfg and creates the spec directory,
// logging what it decided to ctx's logger. With VisibleDevicesAuto it
// looks for the vendors' runtimes under VisibleRoot once, here.
func NewWriter(ctx context.Context, cfg Config) (*Writer, error) {
	if len(cfg.Registry.All()) == 0 {
		// Without vendors no variable would be reserved: refuse rather
		// than write specs a config could fake chips into.
		return nil, errors.New("creating the CDI writer: Config.Registry has no vendors (main builds it from pkg/vendors/all)")
	}
	if cfg.SpecDir == "" {
		cfg.SpecDir = cdiapi.DefaultDynamicDir
	}
	if cfg.HostRoot == "" {
		cfg.HostRoot = "/"
	}
	if cfg.VisibleRoot == "" {
		cfg.VisibleRoot = cfg.HostRoot
	}
	if cfg.VisibleDevicesEnv == "" {
		cfg.VisibleDevicesEnv = VisibleDevicesAuto
	}
	if err := os.MkdirAll(cfg.SpecDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating CDI spec directory: %w", err)
	}
	// The cache is only used to write and remove specs (validated, atomic:
	// temporary file plus renameat2), never to resolve devices, so it needs
	// no directory watch.
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(cfg.SpecDir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("creating CDI cache for %s: %w", cfg.SpecDir, err)
	}
	visible, err := newVisibleEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Writer{cfg: cfg, cache: cache, visible: visible, reserved: cfg.Registry.ReservedEnv()}, nil
}

// SpecDir is the directory the specs are written to.
func (w *Writer) SpecDir() string { return w.cfg.SpecDir }

// Device is one allocated DRA device of a claim.
type Device struct {
	// Name is the DRA device name, e.g. npu-3.
	Name string
	// Chip is the chip behind the device.
	Chip inventory.Chip
	// Env is extra environment from the user's opaque configuration, set
	// only in containers that get this device. It may not set DRA_*
	// variables nor a vendor's visible-devices variable: Write rejects that.
	Env map[string]string
	// Nodes, when set, replace the chip's DeviceNodes: a partition's own
	// device files (a vNPU gets /dev/vdavinci<id> at /dev/davinci<id> and
	// not its parent chip's node).
	Nodes []DeviceNode
	// VisibleID, when set, is what the vendor's visible-devices variable
	// lists for this device instead of the chip index (a vNPU's id).
	VisibleID *int
	// NotVisible leaves the device out of the vendor's visible-devices
	// variable (a Cambricon sMLU, vendors.PartitionEdits.NotVisible); a
	// claim of only such devices gets no such variable.
	NotVisible bool
	// DriverEnv are per-device variables the driver sets besides UUID and
	// MODEL, by suffix: {"MEMORY": "8589934592"} becomes
	// DRA_DEVICE_<NAME>_MEMORY=8589934592.
	DriverEnv map[string]string
	// Annotations are recorded on the CDI device and returned by
	// ReadClaim, so the plugin can rebuild what it prepared (a partition)
	// from the spec alone.
	Annotations map[string]string
}

// visibleID is what the vendor's visible-devices variable lists for d,
// false when it lists nothing for it.
func (d Device) visibleID() (int, bool) {
	switch {
	case d.NotVisible:
		return 0, false
	case d.VisibleID != nil:
		return *d.VisibleID, true
	}
	return d.Chip.Index, true
}

// DeviceNode is a device file of a container: Path inside it, HostPath on
// the node as seen from the node's / (HostRoot is prefixed).
type DeviceNode struct {
	Path, HostPath string
}

// Claim is a prepared ResourceClaim's share of one vendor's devices.
type Claim struct {
	UID             types.UID
	Namespace, Name string
	// Vendor is the vendor of the claim's devices.
	Vendor  vendors.Vendor
	Devices []Device
	// SharedDeviceNodes are the vendor's device files every container of
	// the claim needs (inventory.Inventory.SharedDeviceNodes[Vendor]).
	SharedDeviceNodes []string
	// Env are claim-wide variables the driver sets besides the DRA_* and
	// visible-devices ones (DRA_ADMIN_ACCESS).
	Env map[string]string
	// Virtual says every device of the claim is a virtual partition (an
	// Ascend vNPU): the spec gets the vendor's vendors.CDIEdits.VirtualEnv
	// (ASCEND_RUNTIME_OPTIONS=VIRTUAL) besides Env.
	Virtual bool
}

// Write writes the claim's spec, replacing any earlier spec of that claim
// atomically, and returns per DRA device name the fully-qualified CDI
// device IDs kubelet must pass to the runtime. Writing the same claim again
// writes the same file and returns the same IDs.
func (w *Writer) Write(ctx context.Context, c Claim) (map[string][]string, error) {
	logger := klog.FromContext(ctx)
	if c.Vendor == nil {
		return nil, fmt.Errorf("writing CDI spec of claim %s/%s: no vendor", c.Namespace, c.Name)
	}
	v := editsOf(c.Vendor)
	spec, ids, err := w.spec(c, v)
	if err != nil {
		return nil, fmt.Errorf("building CDI spec of claim %s/%s (%s): %w", c.Namespace, c.Name, c.UID, err)
	}
	name := specName(v, c.UID)
	path := filepath.Join(w.cfg.SpecDir, name+specExt)
	if err := w.writeSpec(spec, name+specExt); err != nil {
		return nil, fmt.Errorf("writing CDI spec of claim %s/%s (%s) to %s: %w", c.Namespace, c.Name, c.UID, path, err)
	}
	if err := w.cache.RemoveSpec(name + legacySpecExt); err != nil {
		return nil, fmt.Errorf("removing the earlier CDI spec of claim %s/%s (%s): %w", c.Namespace, c.Name, c.UID, err)
	}
	logger.V(4).Info("Wrote CDI spec", "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID,
		"path", path, "devices", len(c.Devices))
	return ids, nil
}

// tempPattern matches the CDI library's temporary spec files.
const tempPattern = "spec.*.tmp"

// writeSpec writes spec with the CDI library and, if that fails, removes
// the temporary file the library leaves behind: when writing the
// temporary fails (a full disk) it returns without removing it
// (container-device-interface v1.1.2, pkg/cdi/spec.go, Spec.write), and
// every retry of the prepare would leave one more. The spec directory is
// locked meanwhile (flock, which the other driver of the agent and the
// other pod of a rolling update take too), so the temporaries that appear
// during the write are this write's, not another writer's in flight.
func (w *Writer) writeSpec(spec *cdispec.Spec, name string) error {
	dir := w.cfg.SpecDir
	// The library creates a missing directory; so must the lock.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating CDI spec directory: %w", err)
	}
	lock, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("locking CDI spec directory: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking CDI spec directory %s: %w", dir, err)
	}
	before, err := temporaries(dir)
	if err != nil {
		return err
	}
	writeErr := w.cache.WriteSpec(spec, name)
	if writeErr == nil {
		return nil
	}
	after, err := temporaries(dir)
	if err != nil {
		return errors.Join(writeErr, err)
	}
	for tmp := range after {
		if before[tmp] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			writeErr = errors.Join(writeErr, fmt.Errorf("removing temporary CDI spec file: %w", err))
		}
	}
	return writeErr
}

// temporaries are the names of the CDI library's temporary files in dir.
func temporaries(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing temporary CDI spec files: %w", err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if ok, _ := filepath.Match(tempPattern, e.Name()); ok {
			out[e.Name()] = true
		}
	}
	return out, nil
}

// Delete removes the spec of a claim's devices of vendor. A missing spec
// is not an error, so unprepare can be retried.
func (w *Writer) Delete(ctx context.Context, vendor vendors.Vendor, uid types.UID) error {
	v := editsOf(vendor)
	name := specName(v, uid)
	for _, ext := range []string{specExt, legacySpecExt} {
		if err := w.cache.RemoveSpec(name + ext); err != nil {
			return fmt.Errorf("deleting CDI spec of claim %s: %w", uid, err)
		}
	}
	klog.FromContext(ctx).V(4).Info("Deleted CDI spec", "claimUID", uid, "path", filepath.Join(w.cfg.SpecDir, name+specExt))
	return nil
}

// ClaimUIDs returns, sorted, the claims that have a spec of vendor in the
// spec directory, so the plugin can remove specs of claims it no longer
// knows at startup.
func (w *Writer) ClaimUIDs(vendor vendors.Vendor) ([]types.UID, error) {
	v := editsOf(vendor)
	entries, err := os.ReadDir(w.cfg.SpecDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing CDI specs of %s: %w", v.kind, err)
	}
	prefix := specName(v, "")
	var uids []types.UID
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		for _, ext := range []string{specExt, legacySpecExt} {
			if uid, ok := strings.CutSuffix(rest, ext); ok && uid != "" {
				uids = append(uids, types.UID(uid))
			}
		}
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return slices.Compact(uids), nil
}

// specName is the transient spec name of a claim, without extension:
// accel-dra.dev-ascend_<uid>. The same claim UID can have a spec of each
// vendor (one claim with an Ascend and a Cambricon request).
func specName(v vendorEdits, uid types.UID) string {
	vendor, class := cdiparser.ParseQualifier(v.kind)
	return cdiapi.GenerateTransientSpecName(vendor, class, string(uid))
}

// spec builds the claim's CDI spec and the IDs of its devices.
func (w *Writer) spec(c Claim, v vendorEdits) (*cdispec.Spec, map[string][]string, error) {
	if c.UID == "" {
		return nil, nil, errors.New("claim UID is empty")
	}
	if len(c.Devices) == 0 {
		return nil, nil, errors.New("claim has no devices")
	}
	vendor, class := cdiparser.ParseQualifier(v.kind)
	spec := &cdispec.Spec{Kind: v.kind}
	ids := make(map[string][]string, len(c.Devices))
	var indices []int
	for _, d := range c.Devices {
		if _, dup := ids[d.Name]; dup {
			return nil, nil, fmt.Errorf("device %q appears twice", d.Name)
		}
		dev, err := w.device(c, d, v)
		if err != nil {
			return nil, nil, fmt.Errorf("device %q: %w", d.Name, err)
		}
		spec.Devices = append(spec.Devices, dev)
		ids[d.Name] = []string{cdiparser.QualifiedName(vendor, class, dev.Name)}
		if id, ok := d.visibleID(); ok {
			indices = append(indices, id)
		}
	}

	shared, err := w.deviceNodes(c.SharedDeviceNodes, v)
	if err != nil {
		return nil, nil, fmt.Errorf("shared device nodes: %w", err)
	}
	env := []string{
		EnvDriver + "=" + v.driver,
		EnvClaimUID + "=" + string(c.UID),
		EnvClaim + "=" + c.Namespace + "/" + c.Name,
	}
	// The variable is what a vendor runtime reacts to (vendorruntime.go).
	// Where the specs do not list a vendor's chips, its runtime's neutral
	// value replaces any the pod sets itself (CDI env edits replace), so
	// the runtime cannot inject chips the claim does not hold — in the
	// containers of the other vendor's claims too. Every spec then carries
	// the same neutral value, so specs of two claims never disagree on it.
	omitVisible := w.visible.omitted()
	for _, x := range w.cfg.Registry.All() {
		e := x.CDI()
		switch {
		case x.Names().Vendor == c.Vendor.Names().Vendor && !omitVisible[x.Names().Vendor] && len(indices) > 0:
			env = append(env, e.VisibleEnv+"="+joinIndices(indices))
		case e.Runtime != nil && (omitVisible[x.Names().Vendor] || x.Names().Vendor == c.Vendor.Names().Vendor):
			// Also a claim of only devices the variable does not list:
			// the runtime must not act on a value the pod set.
			env = append(env, e.VisibleEnv+"="+e.Runtime.Neutral)
		}
	}
	claimEnv := claimEnvOf(c, v)
	for _, k := range sortedKeys(claimEnv) {
		env = append(env, k+"="+claimEnv[k])
	}
	spec.ContainerEdits = cdispec.ContainerEdits{
		Env:         env,
		DeviceNodes: shared,
		Mounts:      w.mounts(v),
		Hooks:       w.hooks(v),
	}
	// The oldest spec version that has every field used, so older
	// runtimes read the spec too.
	if spec.Version, err = cdispec.MinimumRequiredVersion(spec); err != nil {
		return nil, nil, fmt.Errorf("determining CDI spec version: %w", err)
	}
	return spec, ids, nil
}

// claimEnvOf are the claim-wide variables besides the DRA_* and
// visible-devices ones: the vendor's, its chips' (ChipEnv), a virtual
// claim's, then the claim's own, each winning over the ones before.
func claimEnvOf(c Claim, v vendorEdits) map[string]string {
	env := maps.Clone(v.Env)
	if env == nil {
		env = map[string]string{}
	}
	if v.ChipEnv != nil {
		for _, d := range c.Devices {
			maps.Copy(env, v.ChipEnv(d.Chip))
		}
	}
	if c.Virtual {
		maps.Copy(env, v.VirtualEnv)
	}
	maps.Copy(env, c.Env)
	return env
}

// device is the CDI device of one DRA device: the chip's own nodes and
// the per-device environment.
func (w *Writer) device(c Claim, d Device, v vendorEdits) (cdispec.Device, error) {
	if d.Name == "" {
		return cdispec.Device{}, errors.New("device name is empty")
	}
	if want := c.Vendor.Names().Vendor; d.Chip.Vendor != want {
		return cdispec.Device{}, fmt.Errorf("chip %d is a %s chip, not %s", d.Chip.Index, d.Chip.Vendor, want)
	}
	var nodes []*cdispec.DeviceNode
	var err error
	if len(d.Nodes) > 0 {
		nodes, err = w.mappedNodes(d.Nodes, v)
	} else {
		if len(d.Chip.DeviceNodes) == 0 {
			return cdispec.Device{}, fmt.Errorf("chip %d has no device nodes", d.Chip.Index)
		}
		nodes, err = w.deviceNodes(d.Chip.DeviceNodes, v)
	}
	if err != nil {
		return cdispec.Device{}, err
	}
	env, err := deviceEnv(c, d, v.driver, v.VisibleEnv, w.reserved)
	if err != nil {
		return cdispec.Device{}, err
	}
	return cdispec.Device{
		Name:           string(c.UID) + "-" + d.Name,
		Annotations:    d.Annotations,
		ContainerEdits: cdispec.ContainerEdits{Env: env, DeviceNodes: nodes},
	}, nil
}

// mappedNodes are device nodes whose container path differs from their
// host path (a vNPU's /dev/vdavinci<id> at /dev/davinci<id>).
func (w *Writer) mappedNodes(nodes []DeviceNode, v vendorEdits) ([]*cdispec.DeviceNode, error) {
	out := make([]*cdispec.DeviceNode, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, p := range []string{n.Path, n.HostPath} {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return nil, fmt.Errorf("device node path %q is not an absolute, clean path", p)
			}
		}
		if seen[n.Path] {
			continue
		}
		seen[n.Path] = true
		out = append(out, &cdispec.DeviceNode{Path: n.Path, HostPath: w.hostPath(n.HostPath), Permissions: v.Permissions})
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// deviceNodes maps container paths of device files to CDI device nodes.
// Type and numbers are left out: the CDI library fills them in from the
// host node when it injects the device (DeviceNode.fillMissingInfo), so
// the runtime sees the node as it is when the container starts, and a
// host path that is not a device fails that container's creation.
func (w *Writer) deviceNodes(paths []string, v vendorEdits) ([]*cdispec.DeviceNode, error) {
	nodes := make([]*cdispec.DeviceNode, 0, len(paths))
	seen := map[string]bool{}
	for _, p := range paths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, fmt.Errorf("device node path %q is not an absolute, clean path", p)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		nodes = append(nodes, &cdispec.DeviceNode{Path: p, HostPath: w.hostPath(p), Permissions: v.Permissions})
	}
	return nodes, nil
}

// mounts are the vendor's driver files that exist on the host. Checked on
// every Write, so a driver installed or removed later is seen by the next
// claim.
func (w *Writer) mounts(v vendorEdits) []*cdispec.Mount {
	var mounts []*cdispec.Mount
	for _, p := range v.Mounts {
		seen := p
		if with, ok := v.MountedWith[p]; ok {
			seen = with
		}
		if _, err := os.Stat(filepath.Join(w.cfg.VisibleRoot, seen)); err != nil {
			continue
		}
		mounts = append(mounts, &cdispec.Mount{HostPath: w.hostPath(p), ContainerPath: p, Options: mountOptions})
	}
	return mounts
}

// hooks is the createContainer hook that adds the vendor's library
// directories present on the host to the container's ld.so cache
// (ldcache.go), if the writer has a hook.
func (w *Writer) hooks(v vendorEdits) []*cdispec.Hook {
	if w.cfg.LDCacheHook == "" {
		return nil
	}
	var dirs []string
	for _, d := range v.LibraryDirs {
		if st, err := os.Stat(filepath.Join(w.cfg.VisibleRoot, d)); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	timeout := cdihook.Timeout()
	// Env always: without it the runtime runs the hook with the
	// container's environment (cdihook.Env).
	return []*cdispec.Hook{{HookName: cdiapi.CreateContainerHook, Path: w.cfg.LDCacheHook,
		Args: cdihook.Args(w.cfg.LDCacheHook, dirs), Env: slices.Clone(cdihook.Env), Timeout: &timeout}}
}

func (w *Writer) hostPath(p string) string {
	return filepath.Join(w.cfg.HostRoot, p)
}

// deviceEnv is DRA_DEVICE_<NAME>_DRIVER, _CLAIM_UID, _UUID and _MODEL
// (and the driver's extras, e.g. a share's size), then the user's
// variables sorted by name. User variables that would override the
// driver's own are an error naming the variable, not silently dropped: a
// workload that depends on them would otherwise run with a surprise.
func deviceEnv(c Claim, d Device, driver, own string, reserved []string) ([]string, error) {
	key := DeviceEnvKey(d.Name)
	// The claim-wide DRA_DRIVER and DRA_CLAIM_UID hold one value per
	// container, the last spec's, when a container gets devices of two
	// drivers or claims; these per-device ones are always right.
	env := []string{
		key + "_DRIVER=" + driver,
		key + "_CLAIM_UID=" + string(c.UID),
	}
	if d.Chip.UUID != "" {
		env = append(env, key+"_UUID="+d.Chip.UUID)
	}
	env = append(env, key+"_MODEL="+d.Chip.Model)
	for _, suffix := range sortedKeys(d.DriverEnv) {
		env = append(env, key+"_"+suffix+"="+d.DriverEnv[suffix])
	}

	// The API's validation, which the webhook ran at apply (the config
	// decoder, with the same reserved variables); again here for configs
	// applied before it, or without it.
	if errs := v1alpha1.ValidateEnv(own, reserved, d.Env); len(errs) > 0 {
		return nil, fmt.Errorf("configuration: %w", errs.ToAggregate())
	}
	for _, k := range sortedKeys(d.Env) {
		env = append(env, k+"="+d.Env[k])
	}
	return env, nil
}

var nonAlphanumeric = regexp.MustCompile(`[^A-Za-z0-9]+`)

// DeviceEnvKey is the stem of a device's variables: DRA_DEVICE_ and the
// device name upper-cased with runs of other characters as "_".
func DeviceEnvKey(device string) string {
	return EnvDevicePrefix + strings.ToUpper(nonAlphanumeric.ReplaceAllString(device, "_"))
}

// joinIndices is the sorted, de-duplicated comma list of chip indices.
func joinIndices(indices []int) string {
	sort.Ints(indices)
	parts := make([]string, 0, len(indices))
	for i, n := range indices {
		if i > 0 && indices[i-1] == n {
			continue
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

// SpecClaim is what a written spec tells about its claim: enough to
// rebuild the plugin's state when its checkpoint is lost.
type SpecClaim struct {
	Namespace, Name string
	// Devices maps DRA device names to their CDI device IDs.
	Devices map[string][]string
	// Annotations maps DRA device names to the annotations their CDI
	// device was written with (Device.Annotations), if any.
	Annotations map[string]map[string]string
}

// ReadClaim reads back the spec of a claim's devices of vendor.
func (w *Writer) ReadClaim(vendor vendors.Vendor, uid types.UID) (SpecClaim, error) {
	v := editsOf(vendor)
	path := filepath.Join(w.cfg.SpecDir, specName(v, uid)+specExt)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		path = filepath.Join(w.cfg.SpecDir, specName(v, uid)+legacySpecExt)
	}
	spec, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		return SpecClaim{}, fmt.Errorf("reading CDI spec of claim %s: %w", uid, err)
	}
	vendorName, class := cdiparser.ParseQualifier(v.kind)
	out := SpecClaim{Devices: map[string][]string{}, Annotations: map[string]map[string]string{}}
	for _, e := range spec.ContainerEdits.Env {
		if claim, ok := strings.CutPrefix(e, EnvClaim+"="); ok {
			out.Namespace, out.Name, _ = strings.Cut(claim, "/")
		}
	}
	for _, d := range spec.Devices {
		name, ok := strings.CutPrefix(d.Name, string(uid)+"-")
		if !ok {
			return SpecClaim{}, fmt.Errorf("reading CDI spec %s: device %q is not named after claim %s", path, d.Name, uid)
		}
		out.Devices[name] = []string{cdiparser.QualifiedName(vendorName, class, d.Name)}
		if len(d.Annotations) > 0 {
			out.Annotations[name] = d.Annotations
		}
	}
	return out, nil
}

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

// Package scale is the setup of the scheduler throughput benchmark
// (`make bench-scale`, test/e2e/cmd/bench-scale, docs/benchmarks.md): the
// ResourceSlices of many nodes, published through the API server by one
// process, in two shapes (our driver's real output, and the scheduler_perf
// test driver's), the DeviceClasses and claim templates of each side, the
// pods, and what is read from the components (Prometheus metrics, process
// CPU). It talks to any kubernetes.Interface, so its unit tests run it
// against a fake clientset; the benchmark runs it against the real control
// plane of the e2e tier.
package scale

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// OurProfiles alternate over the nodes of our side: bundled profiles
// (demo/profiles) whose chips the demo's claim shapes ask for: 8 × Ascend
// 910B3 in one HCCS mesh, and 4 MLU370-X8 cards.
var OurProfiles = []string{"atlas-800t-a2", "mlu370-x8"}

// NodeName is the name of the benchmark's i-th node.
func NodeName(i int) string { return fmt.Sprintf("scale-%04d", i) }

// VendorLabel is the node label the device-plugin setups and our chart's
// DaemonSets select on, and its value per OurProfiles entry: a pod's
// nodeSelector on it lets the scheduler's NodeAffinity filter drop the
// other vendor's nodes before the DRA filter evaluates their devices.
const VendorLabel = "accelerator"

// OurVendorLabels are VendorLabel's values of the OurProfiles nodes.
var OurVendorLabels = []string{"huawei-ascend", "cambricon-mlu"}

// Slices says how our side's chips are published: the node agent's
// settings a lever of the benchmark varies.
type Slices struct {
	// Modes are the chip modes (the agent's --chip-modes syntax).
	Modes string
	// Templates are the partition templates offered, all when empty
	// (resourceslices.Options.Templates).
	Templates []string
	// Omit are attribute keys left out of every device
	// (resourceslices.Options.OmitAttributes).
	Omit []resourceapi.QualifiedName
	// Fabric places node i in a super pod, as an A3 node's agent does: its
	// chips publish accel-dra.dev/superPod, serverIndex and superDeviceID
	// (FabricPlace); FabricLabels are its labels.
	Fabric bool
	// Sources are facts discovery would set on every chip where the
	// node's libraries offer them (inventory.Chip.Sources), which a
	// hardware profile does not carry.
	Sources map[string]string
	// Profile, when set, is every node's hardware profile (a cluster of
	// one vendor, as the peer sides' nodes are all alike) instead of
	// OurProfiles in turn.
	Profile string
}

// ServersPerSuperPod is how many nodes the Fabric side puts in one super
// pod; LeafsPerSpine how many of its leaves (one per super pod) share a
// spine.
const (
	ServersPerSuperPod = 16
	LeafsPerSpine      = 8
)

// FabricPlace is node i's super pod and server index on the Fabric side.
func FabricPlace(i int) (superPod string, server int64) {
	return strconv.Itoa(i / ServersPerSuperPod), int64(i % ServersPerSuperPod)
}

// FabricLabels are the fabric labels the agent of node i writes on the
// Fabric side: its super pod and, as an admin's ConfigMap would give them,
// a leaf per super pod and a spine per LeafsPerSpine leaves.
func FabricLabels(i int) map[string]string {
	sp := i / ServersPerSuperPod
	return map[string]string{fabric.LabelSuperPod: fmt.Sprintf("sp-%d", sp),
		fabric.LabelLeaf: fmt.Sprintf("leaf-%d", sp), fabric.LabelSpine: fmt.Sprintf("spine-%d", sp/LeafsPerSpine)}
}

// placeInFabric gives node i's chips their place in its super pod, the
// SDID laid out as the 910_93 DCMI reference does (fabric.SDID: server
// index in bits 22-31, chip and die below).
func placeInFabric(inv *inventory.Inventory, i int) {
	superPod, server := FabricPlace(i)
	for j := range inv.Chips {
		c := &inv.Chips[j]
		c.SuperPod, c.ServerIndex, c.SuperDeviceID = superPod, ptr.To(server), ptr.To(fabric.SDID(server, c.Index))
	}
}

// LeanOmit are the attributes the scheduler cost lever leaves out
// (docs/benchmarks.md): healthy (the device taint says it), family (the
// driver name implies it), Ascend's chipName (model repeats it) and
// logicId (an internal id), and driverVersion (a version, parsed on every
// evaluation).
var LeanOmit = []resourceapi.QualifiedName{names.AttrHealthy, names.AttrFamily, "chipName", "logicId", names.AttrDriverVersion}

// UnusedOmit are those of LeanOmit no documented claim selects on.
var UnusedOmit = []resourceapi.QualifiedName{names.AttrHealthy, "logicId"}

// HalfChipTemplates are the largest partition template of each
// OurProfiles model (910B3, MLU370-X8): two slots per chip instead of the
// six of every template.
var HalfChipTemplates = []string{"vir10-3c-32g", "smlu-50p"}

// OurResources is what the node agent of node name publishes, by driver,
// for profile OurProfiles[i % len] with its settings s.
func OurResources(ctx context.Context, name string, i int, s Slices) (map[string]resourceslice.DriverResources, error) {
	ref := OurProfiles[i%len(OurProfiles)]
	if s.Profile != "" {
		ref = s.Profile
	}
	return resourcesFor(ctx, name, i, ref, s)
}

// registry is the vendors the node agent serves, as its main builds it.
var registry = all.Registry()

// ResourcesFor is what the node agent of node name publishes, by driver,
// for hardware profile ref (a bundled name or a file) in chip modes modes.
func ResourcesFor(ctx context.Context, name, ref, modes string) (map[string]resourceslice.DriverResources, error) {
	return resourcesFor(ctx, name, 0, ref, Slices{Modes: modes})
}

func resourcesFor(ctx context.Context, name string, i int, ref string, s Slices) (map[string]resourceslice.DriverResources, error) {
	policy, err := partitions.ParsePolicy(registry, s.Modes)
	if err != nil {
		return nil, fmt.Errorf("parsing chip modes %q: %w", s.Modes, err)
	}
	p, err := profile.Load(registry, ref)
	if err != nil {
		return nil, err
	}
	inv, err := profilenode.New(registry, name, p).Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovering the simulated chips of node %s: %w", name, err)
	}
	if s.Fabric {
		placeInFabric(&inv, i)
	}
	withSources(&inv, s.Sources)
	return resourceslices.DriverResourcesFor(registry, name, inv, resourceslices.Options{
		Policy: policy, Templates: s.Templates, OmitAttributes: s.Omit}), nil
}

// Publisher runs one upstream resourceslice controller per node and
// driver, each started as the kubeletplugin helper of a node agent starts
// it (owner: the Node), all in one process over one client.
type Publisher struct {
	ctrls []*resourceslice.Controller
	// Slices is the number of ResourceSlices the controllers publish.
	Slices int
	// Drivers are the driver names published.
	Drivers []string
	errs    chan error
	lastErr atomic.Value // error
}

// Publish starts the controllers for nodes (which must exist: their UIDs
// own the slices) with settings and returns when every slice is in
// the API server, or with the first controller error.
func Publish(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, settings Slices, timeout time.Duration) (*Publisher, error) {
	return publish(ctx, client, nodes, timeout, func(ctx context.Context, name string, i int) (map[string]resourceslice.DriverResources, error) {
		return OurResources(ctx, name, i, settings)
	})
}

// publish is Publish of what resources says node i, named name, publishes
// by driver.
func publish(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, timeout time.Duration,
	resources func(ctx context.Context, name string, i int) (map[string]resourceslice.DriverResources, error)) (*Publisher, error) {
	p := &Publisher{errs: make(chan error, 16)}
	type start struct {
		owner  resourceslice.Owner
		driver string
		res    resourceslice.DriverResources
	}
	var starts []start
	drivers := map[string]bool{}
	for i, n := range nodes {
		res, err := resources(ctx, n.Name, i)
		if err != nil {
			return nil, err
		}
		for driver, r := range res {
			if !drivers[driver] {
				drivers[driver] = true
				p.Drivers = append(p.Drivers, driver)
			}
			for _, pool := range r.Pools {
				p.Slices += len(pool.Slices)
			}
			starts = append(starts, start{resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}, driver, r})
		}
	}
	// StartController waits for its informer's sync, polling once a
	// second: start them in parallel, as the nodes of a cluster do.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctrl, err := resourceslice.StartController(ctx, resourceslice.Options{
				DriverName: s.driver, KubeClient: client, Owner: &s.owner, Resources: &s.res,
				// The controller retries what failed (an API server
				// that times out under load): keep the last error for
				// the message if the slices never all arrive.
				ErrorHandler: func(_ context.Context, err error, msg string) {
					p.lastErr.Store(fmt.Errorf("publishing the slices of node %s, driver %s: %s: %w", s.owner.Name, s.driver, msg, err))
				},
			})
			if err != nil {
				p.errs <- fmt.Errorf("starting the resourceslice controller of node %s, driver %s: %w", s.owner.Name, s.driver, err)
				return
			}
			mu.Lock()
			p.ctrls = append(p.ctrls, ctrl)
			mu.Unlock()
		}()
	}
	wg.Wait()
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-p.errs:
			return false, err
		default:
		}
		n, err := CountSlices(ctx, client, p.Drivers...)
		if err != nil {
			p.lastErr.Store(err)
		}
		return err == nil && n >= p.Slices, nil
	})
	if err != nil {
		p.Stop()
		// What did arrive must not stay for the next side to see.
		if derr := DeleteSlices(context.WithoutCancel(ctx), client, 2*time.Minute, p.Drivers...); derr != nil {
			err = fmt.Errorf("%w (and removing the slices published: %w)", err, derr)
		}
		if last, ok := p.lastErr.Load().(error); ok {
			err = fmt.Errorf("%w (last error: %w)", err, last)
		}
		return nil, fmt.Errorf("waiting for %d ResourceSlices of %d nodes: %w", p.Slices, len(nodes), err)
	}
	return p, nil
}

// Stop stops the controllers; their slices stay.
func (p *Publisher) Stop() {
	for _, c := range p.ctrls {
		c.Stop()
	}
	p.ctrls = nil
}

// CountSlices counts the ResourceSlices of the drivers.
func CountSlices(ctx context.Context, client kubernetes.Interface, drivers ...string) (int, error) {
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	n := 0
	for _, s := range list.Items {
		for _, d := range drivers {
			if s.Spec.Driver == d {
				n++
			}
		}
	}
	return n, nil
}

// DeleteSlices deletes the ResourceSlices of the drivers and waits until
// they are gone.
func DeleteSlices(ctx context.Context, client kubernetes.Interface, timeout time.Duration, drivers ...string) error {
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	var names []string
	for _, s := range list.Items {
		for _, d := range drivers {
			if s.Spec.Driver == d {
				names = append(names, s.Name)
			}
		}
	}
	err = parallel(ctx, names, func(ctx context.Context, name string) error {
		err := client.ResourceV1().ResourceSlices().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ResourceSlice %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := CountSlices(ctx, client, drivers...)
		return n == 0, err
	})
}

// parallel runs fn for every item with a few workers and returns the
// first error.
func parallel[T any](ctx context.Context, items []T, fn func(context.Context, T) error) error {
	const workers = 16
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan T)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				if err := fn(ctx, it); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
loop:
	for _, it := range items {
		select {
		case next <- it:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// Workload is what one side's pods need: DeviceClasses and the claim
// templates the pods reference, in turn.
type Workload struct {
	Classes   []*resourceapi.DeviceClass
	Templates []*resourceapi.ResourceClaimTemplate
	// NodeSelectors are the nodeSelector of the pods using a template,
	// by template name; none when absent.
	NodeSelectors map[string]map[string]string
}

// OurTemplates are the claims of the allocation benchmark
// (test/bench/testdata/claims.yaml), the demo's shapes: one chip by
// model, four chips in one link group, firstAvailable.
var OurTemplates = []string{"a-one-by-model", "b-four-in-a-link-group", "c-first-available"}

// OneVendorProfile and OneVendorTemplates are our side in the peers'
// setting: every node alike (8 × Ascend 910B3 in one HCCS mesh, as the
// peers' nodes are 8 GPUs or NPUs) and only the two shapes the peers'
// claims have, one chip by model and four in one link group, without
// (c)'s firstAvailable over both vendors.
var (
	OneVendorProfile   = OurProfiles[0]
	OneVendorTemplates = OurTemplates[:2]
)

// PerModelTemplates are the same shapes naming the chart's per-model
// classes without selectors (testdata/levers.yaml), DriverOnlyTemplates
// the same shapes as OurTemplates with driver-only generic classes.
var (
	PerModelTemplates   = []string{"a-one-by-model-class", "b-four-in-a-link-group-class", "c-first-available-class"}
	DriverOnlyTemplates = []string{"a-one-by-model-driver-only", "b-four-in-a-link-group-driver-only", "c-first-available-driver-only"}
)

// OurWorkload reads the chart's DeviceClasses and the OurTemplates claims
// from the repository at repo.
func OurWorkload(repo string) (Workload, error) {
	return LoadWorkload(repo, "test/bench/testdata/claims.yaml", OurTemplates)
}

// LoadWorkload reads the chart's DeviceClasses, the classes of claims (a
// file under repo) and its claims named templates, as templates in that
// order.
func LoadWorkload(repo, claims string, templates []string) (Workload, error) {
	return loadWorkload([]string{filepath.Join(repo, "deployments/helm/accel-dra/deviceclasses"), filepath.Join(repo, claims)}, claims, templates)
}

// loadWorkload reads the DeviceClasses of paths and their claims named
// templates (in claims, the file named in errors).
func loadWorkload(paths []string, claims string, templates []string) (Workload, error) {
	in, err := simulate.Load(paths)
	if err != nil {
		return Workload{}, err
	}
	var w Workload
	for name, c := range in.Classes {
		// The allocation benchmark's baseline classes are not the chart's.
		if !strings.HasSuffix(name, ".bench.accel-dra.dev") {
			w.Classes = append(w.Classes, c)
		}
	}
	for _, name := range templates {
		var found bool
		for _, c := range in.Claims {
			if c.Name == name {
				w.Templates = append(w.Templates, &resourceapi.ResourceClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: c.Spec},
				})
				found = true
			}
		}
		if !found {
			return Workload{}, fmt.Errorf("%s has no claim %s", claims, name)
		}
	}
	return w, nil
}

// WithNodeSelector returns w with the pods of template selecting nodes by
// selector.
func (w Workload) WithNodeSelector(template string, selector map[string]string) Workload {
	sel := make(map[string]map[string]string, len(w.NodeSelectors)+1)
	for k, v := range w.NodeSelectors {
		sel[k] = v
	}
	sel[template] = selector
	w.NodeSelectors = sel
	return w
}

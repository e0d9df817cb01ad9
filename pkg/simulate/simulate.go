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

// Package simulate allocates ResourceClaims over a simulated cluster with
// the upstream structured allocator, the same code the kube-scheduler runs,
// over the ResourceSlices the node agents would publish.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inputfile"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/profilenode"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Features are the allocator features kube-scheduler 1.37 turns on with
// its default feature gates (AllocatorFeatures in k8s.io/kubernetes
// pkg/scheduler/framework/plugins/dynamicresources; gates from
// pkg/features): admin access, prioritized list, device taints and
// binding conditions with device status are on, as are partitionable
// devices, consumable capacity and its fractional ranges (beta). The
// alpha ones (list-type and derived attributes, compatibility groups,
// optional node operations) are off. simulate and why allocate with
// these, so they pick the allocator implementation the scheduler picks.
var Features = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true,
	DeviceTaints: true, DeviceBindingAndStatus: true, ConsumableCapacity: true, FractionalCapacityRange: true}

// Cluster is the simulated cluster: nodes and their slices, in order.
type Cluster struct {
	Nodes  []*v1.Node
	Slices []*resourceapi.ResourceSlice

	// chips are the nodes' chips and chip modes (set by BuildCluster), so
	// a claim that finds nothing can be told which nodes would have
	// partitions for it with other chip modes.
	chips []nodeChips
	// registry has the chips' vendors (ClusterOptions.Registry).
	registry vendors.Registry
}

type nodeChips struct {
	node   string
	inv    inventory.Inventory
	policy partitions.Policy
}

// ClusterOptions tune BuildCluster.
type ClusterOptions struct {
	// Registry has the vendors the nodes' profiles may hold.
	Registry vendors.Registry
	// Policy gives the chips of nodes that set no chipModes their modes
	// (simulate --chip-modes); the zero value publishes them Whole, as the
	// node agent does by default.
	Policy partitions.Policy
}

// BuildCluster generates the slices of every node of a cluster file, each
// node's chips in the modes its chipModes (or else opts.Policy) give them,
// as the node agent with that --chip-modes would publish them.
func BuildCluster(ctx context.Context, c *v1alpha1.SimulatedCluster, opts ClusterOptions) (*Cluster, error) {
	out := &Cluster{registry: opts.Registry}
	// servers counts each super pod's nodes: a node's server index.
	servers := map[string]int64{}
	for i, n := range c.Nodes {
		p, err := profile.Load(opts.Registry, n.Profile)
		if err != nil {
			return nil, fmt.Errorf("nodes[%d].profile: %w", i, err)
		}
		policy := opts.Policy
		if n.ChipModes != "" {
			if policy, err = partitions.ParsePolicy(opts.Registry, n.ChipModes); err != nil {
				return nil, fmt.Errorf("nodes[%d].chipModes (node %q): %w", i, n.Name, err)
			}
		}
		for _, name := range n.NodeNames() {
			inv, err := profilenode.New(opts.Registry, name, p).Discover(ctx)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", name, err)
			}
			labels := map[string]string{"kubernetes.io/hostname": name}
			for k, v := range n.Labels {
				labels[k] = v
			}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
			stampFabric(n, node, &inv, servers[n.SuperPod])
			servers[n.SuperPod]++
			nodeSlices := resourceslices.SlicesFor(opts.Registry, name, inv, resourceslices.Options{Policy: policy})
			out.Nodes = append(out.Nodes, node)
			out.chips = append(out.chips, nodeChips{node: name, inv: inv, policy: policy})
			out.Slices = append(out.Slices, nodeSlices...)
		}
	}
	return out, nil
}

// Inputs are the user's objects, claims in file order.
type Inputs struct {
	Classes map[string]*resourceapi.DeviceClass
	Claims  []*resourceapi.ResourceClaim
	// Sources names the file each claim came from, for errors.
	Sources map[*resourceapi.ResourceClaim]string
	// check is LoadChecked's.
	check Check
}

// List implements structured.DeviceClassLister.
func (in *Inputs) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, c := range in.Classes {
		out = append(out, c)
	}
	return out, nil
}

// Get implements structured.DeviceClassLister.
func (in *Inputs) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := in.Classes[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("DeviceClass %q not found", name)
}

var decoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// Load reads DeviceClasses, ResourceClaims and ResourceClaimTemplates from
// files or directories (*.yaml, *.yml, *.json, sorted by path, with their
// subdirectories: the chart's deviceclasses/ keeps its per-model classes
// in models/). Other kinds are skipped; each template becomes one claim
// named after it.
func Load(paths []string) (*Inputs, error) {
	return LoadChecked(paths, nil)
}

// Check judges one object read from a file, named name; an error stops
// the load, naming the file and document.
type Check func(obj runtime.Object, name string) error

// LoadChecked is Load with check run on every object it keeps (nil: none),
// e.g. the admission webhook's validation of our drivers' opaque configs,
// so a claim the API server would refuse is not simulated as allocated.
func LoadChecked(paths []string, check Check) (*Inputs, error) {
	in := &Inputs{Classes: map[string]*resourceapi.DeviceClass{}, Sources: map[*resourceapi.ResourceClaim]string{}, check: check}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var names []string
		err = filepath.WalkDir(p, func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := filepath.Ext(e.Name())
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				names = append(names, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading input directory %s: %w", p, err)
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	for _, f := range files {
		if err := in.loadFile(f); err != nil {
			return nil, err
		}
	}
	return in, in.validate()
}

func (in *Inputs) loadFile(path string) error {
	data, err := inputfile.Read("input", path)
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, errEOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		if strings.TrimSpace(stripComments(string(raw))) == "" {
			continue
		}
		obj, gvk, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, doc, err)
		}
		if in.check != nil {
			if err := in.check(obj, objectName(obj)); err != nil {
				return fmt.Errorf("%s: document %d: %w", path, doc, err)
			}
		}
		switch o := obj.(type) {
		case *resourceapi.DeviceClass:
			in.Classes[o.Name] = o
		case *resourceapi.ResourceClaim:
			in.addClaim(path, o.Namespace, o.Name, o.Spec)
		case *resourceapi.ResourceClaimTemplate:
			in.addClaim(path, o.Namespace, o.Name, o.Spec.Spec)
		default:
			_ = gvk // workloads (Pods, Jobs) are not simulated yet
		}
	}
}

// objectName is obj's name, as the webhook's messages name it (the file
// and document say where it is).
func objectName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

func (in *Inputs) addClaim(source, namespace, name string, spec resourceapi.ResourceClaimSpec) {
	if namespace == "" {
		namespace = "default"
	}
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("sim-" + namespace + "-" + name)}, Spec: *spec.DeepCopy()}
	defaultClaim(c)
	in.Claims = append(in.Claims, c)
	in.Sources[c] = source
}

// defaultClaim applies the API server's defaulting the allocator relies on.
func defaultClaim(c *resourceapi.ResourceClaim) {
	for i := range c.Spec.Devices.Requests {
		if e := c.Spec.Devices.Requests[i].Exactly; e != nil {
			if e.AllocationMode == "" {
				e.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			}
			if e.AllocationMode == resourceapi.DeviceAllocationModeExactCount && e.Count == 0 {
				e.Count = 1
			}
		}
		for j := range c.Spec.Devices.Requests[i].FirstAvailable {
			s := &c.Spec.Devices.Requests[i].FirstAvailable[j]
			if s.AllocationMode == "" {
				s.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			}
			if s.AllocationMode == resourceapi.DeviceAllocationModeExactCount && s.Count == 0 {
				s.Count = 1
			}
		}
	}
}

// validate rejects unknown classes and CEL that does not compile, naming
// the file, object and field.
func (in *Inputs) validate() error {
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
	check := func(where string, sels []resourceapi.DeviceSelector) error {
		for i, s := range sels {
			if s.CEL == nil {
				continue
			}
			if r := cache.GetOrCompile(s.CEL.Expression); r.Error != nil {
				return fmt.Errorf("%s.selectors[%d].cel.expression: %s", where, i, r.Error.Detail)
			}
		}
		return nil
	}
	for _, dc := range in.Classes {
		if err := check("DeviceClass "+dc.Name+": spec", dc.Spec.Selectors); err != nil {
			return err
		}
	}
	for _, c := range in.Claims {
		obj := fmt.Sprintf("%s: claim %s/%s: spec.devices", in.Sources[c], c.Namespace, c.Name)
		for i, r := range c.Spec.Devices.Requests {
			field := fmt.Sprintf("%s.requests[%d]", obj, i)
			type sub struct {
				field, class string
				sels         []resourceapi.DeviceSelector
			}
			var subs []sub
			if r.Exactly != nil {
				subs = append(subs, sub{field + ".exactly", r.Exactly.DeviceClassName, r.Exactly.Selectors})
			}
			for j, s := range r.FirstAvailable {
				subs = append(subs, sub{fmt.Sprintf("%s.firstAvailable[%d]", field, j), s.DeviceClassName, s.Selectors})
			}
			if len(subs) == 0 {
				return fmt.Errorf("%s: one of exactly or firstAvailable is required", field)
			}
			for _, s := range subs {
				if _, ok := in.Classes[s.class]; !ok {
					return fmt.Errorf("%s.deviceClassName: unknown DeviceClass %q (load it with -f)", s.field, s.class)
				}
				if err := check(s.field, s.sels); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// DeviceResult is one allocated device.
type DeviceResult struct {
	Request    string         `json:"request"`
	Driver     string         `json:"driver"`
	Pool       string         `json:"pool"`
	Device     string         `json:"device"`
	Attributes map[string]any `json:"attributes"`
}

// ClaimResult is the outcome for one claim.
type ClaimResult struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Allocated bool           `json:"allocated"`
	Node      string         `json:"node"`
	Devices   []DeviceResult `json:"devices"`
	Reason    string         `json:"reason"`
	// Explanation is set with Options.Explain: per request, the candidate
	// counts the allocator had before this claim.
	Explanation []string `json:"explanation,omitempty"`
}

// Options tune Run.
type Options struct {
	// Explain adds the per-request candidate counts to every claim, not
	// only to the ones that could not be allocated.
	Explain bool
}

// Result is what simulate prints.
type Result struct {
	Claims []ClaimResult `json:"claims"`
}

// Run allocates the claims in order; later claims see what earlier ones
// took. Nodes are tried in cluster order and the first that fits wins.
func Run(ctx context.Context, cluster *Cluster, in *Inputs, opts Options) (*Result, error) {
	allocated := NewAllocatedState()
	attrs := map[structured.DeviceID]resourceapi.Device{}
	for _, s := range cluster.Slices {
		for _, d := range s.Spec.Devices {
			attrs[structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)] = d
		}
	}
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: true})
	res := &Result{Claims: []ClaimResult{}}
	for _, claim := range in.Claims {
		a, err := structured.NewAllocator(ctx, Features, allocated, in, cluster.Slices, cache)
		if err != nil {
			return nil, fmt.Errorf("creating allocator: %w", err)
		}
		cr := ClaimResult{Namespace: claim.Namespace, Name: claim.Name, Devices: []DeviceResult{}}
		var why []string
		if opts.Explain {
			// Before the allocation, so counts show what the claim chose from.
			why = explain(ctx, cluster, in, cache, allocated, claim)
			cr.Explanation = why
		}
		// Like the scheduler's scoring of prioritized lists: a node where an
		// earlier firstAvailable subrequest fits beats one that needs a
		// fallback; otherwise the first node in cluster order wins.
		var best *resourceapi.AllocationResult
		bestNode, bestRank := "", -1
		for _, node := range cluster.Nodes {
			out, err := a.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil && !errors.Is(err, structured.ErrFailedAllocationOnNode) {
				return nil, fmt.Errorf("%s: claim %s/%s: allocating: %w", in.Sources[claim], claim.Namespace, claim.Name, err)
			}
			if err != nil || out == nil {
				continue
			}
			if r := rank(claim, out[0].Devices.Results); bestRank < 0 || r < bestRank {
				best, bestNode, bestRank = &out[0], node.Name, r
			}
			if bestRank == 0 {
				break
			}
		}
		if bestRank >= 0 {
			cr.Allocated, cr.Node = true, bestNode
			// Later claims see this one's devices, shares and consumed
			// capacity as the scheduler would.
			AddAllocation(allocated, best)
			for _, r := range best.Devices.Results {
				d := attrs[structured.MakeDeviceID(r.Driver, r.Pool, r.Device)]
				cr.Devices = append(cr.Devices, DeviceResult{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device,
					Attributes: map[string]any{
						string(names.AttrModel):     *d.Attributes[names.AttrModel].StringValue,
						string(names.AttrLinkGroup): *d.Attributes[names.AttrLinkGroup].StringValue,
					}})
			}
		}
		if !cr.Allocated {
			if why == nil {
				why = explain(ctx, cluster, in, cache, allocated, claim)
			}
			cr.Reason = fmt.Sprintf("no node of %d has free devices for every request and constraint: %s", len(cluster.Nodes), strings.Join(why, "; "))
		}
		res.Claims = append(res.Claims, cr)
	}
	return res, nil
}

// rank sums the positions of the firstAvailable subrequests an allocation
// used: 0 when every request got its first choice.
func rank(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult) int {
	total := 0
	for _, r := range results {
		parent, sub, ok := strings.Cut(r.Request, "/")
		if !ok {
			continue
		}
		for _, req := range claim.Spec.Devices.Requests {
			if req.Name != parent {
				continue
			}
			for i, s := range req.FirstAvailable {
				if s.Name == sub {
					total += i
				}
			}
		}
	}
	return total
}

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

// Package why explains, on a live cluster, why a pod or a ResourceClaim
// waits: for a claim not allocated it runs the upstream structured
// allocator over the cluster's slices, classes and allocated claims,
// restricted to the nodes the pod could go to, and says per request what
// the candidates were narrowed to (simulate's explanation code); for an
// allocated claim where its devices are; for a pod stuck after
// allocation, the kubelet's prepare error and the node agent to read.
// It only reads.
package why

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// DefaultAgentSelector selects the chart's node agent pods (the
// DaemonSet's selector labels, whatever the release is called).
const DefaultAgentSelector = "app.kubernetes.io/name=accel-dra,app.kubernetes.io/component=kubeletplugin"

// PrepareFailedReason is the reason of the kubelet's event when a
// driver's NodePrepareResources fails (k8s.io/kubernetes
// pkg/kubelet/events).
const PrepareFailedReason = "FailedPrepareDynamicResources"

// maxHolders bounds how many allocated claims are tried, one at a time,
// as gone: each try is one allocator run on one node.
const maxHolders = 64

// Target is what to explain: a pod or a claim by name.
type Target struct {
	Kind string // "pod" or "claim"
	Name string
}

// ParseTarget reads pod/NAME or claim/NAME (kubectl's resource names and
// short names too: po, pods, resourceclaim, resourceclaims).
func ParseTarget(arg string) (Target, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("%q: want pod/NAME or claim/NAME", arg)
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return Target{"pod", name}, nil
	case "claim", "claims", "resourceclaim", "resourceclaims":
		return Target{"claim", name}, nil
	}
	return Target{}, fmt.Errorf("%q: kind %q is not pod or claim", arg, kind)
}

// Options tune Explain.
type Options struct {
	// Namespace is where the target is (-n, else the context's).
	Namespace string
	// AllNamespaces (-A) looks for the target in every namespace.
	AllNamespaces bool
	// AgentSelector selects the node agent's pods (DefaultAgentSelector).
	AgentSelector string
	// Registry has accel-dra's vendors, whose drivers' claims it explains.
	Registry vendors.Registry
	// AllocatorTimeout bounds the allocator's runs for one explanation
	// (zero: DefaultAllocatorTimeout).
	AllocatorTimeout time.Duration
}

// DefaultAllocatorTimeout bounds the allocator in why: a claim whose
// constraints make it try every combination of a large cluster's devices
// could otherwise run for hours (the scheduler bounds its own, too).
const DefaultAllocatorTimeout = 30 * time.Second

// Explain reads the cluster and returns the explanation, one line per
// fact, indented under the object it is about. Bad input (an unknown pod
// or claim, one in another namespace, a claim of another driver, a
// template or class that does not exist) is an error of one line.
func Explain(ctx context.Context, conn *livecluster.Connection, t Target, opts Options) ([]string, error) {
	if opts.AgentSelector == "" {
		opts.AgentSelector = DefaultAgentSelector
	}
	if opts.AllocatorTimeout <= 0 {
		opts.AllocatorTimeout = DefaultAllocatorTimeout
	}
	e := &explainer{conn: conn, opts: opts}
	switch t.Kind {
	case "pod":
		pod, err := e.findPod(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		return e.pod(ctx, pod)
	case "claim":
		claim, err := e.findClaim(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		return e.claim(ctx, claim)
	}
	return nil, fmt.Errorf("kind %q is not pod or claim", t.Kind)
}

type explainer struct {
	conn *livecluster.Connection
	opts Options
	snap *livecluster.Snapshot
	out  []string
	// gangLevel is the fabric level the pod's gang must stay in (domains),
	// "" for a pod of no topology gang.
	gangLevel string
}

// say adds a line. Names, messages and events come from the cluster, where
// anyone who can write an event or a status can put terminal escapes in
// them: control and bidirectional-override characters are printed
// escaped, never sent to the user's terminal.
func (e *explainer) say(indent int, format string, args ...any) {
	e.out = append(e.out, strings.Repeat("  ", indent)+escapeControls(fmt.Sprintf(format, args...)))
}

// escapeControls writes the control characters (C0, DEL, C1), the
// Unicode bidirectional controls and invalid UTF-8 of s as Go escapes
// (\x1b, \u202e).
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unsafeRune(r):
			b.WriteString(strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// findPod reads the pod in the namespace; without it, it looks in the
// others so the error can say which -n to use (with -A a single match is
// taken).
func (e *explainer) findPod(ctx context.Context, name string) (*v1.Pod, error) {
	return find(ctx, e.opts, "pod", name, e.conn.Pod, e.conn.PodsNamed, func(p *v1.Pod) string { return p.Namespace })
}

func (e *explainer) findClaim(ctx context.Context, name string) (*resourceapi.ResourceClaim, error) {
	return find(ctx, e.opts, "claim", name, e.conn.Claim, e.conn.ClaimsNamed, func(c *resourceapi.ResourceClaim) string { return c.Namespace })
}

func find[T any](ctx context.Context, opts Options, kind, name string,
	get func(ctx context.Context, ns, name string) (*T, error),
	named func(ctx context.Context, name string) ([]T, error),
	namespace func(*T) string) (*T, error) {
	if !opts.AllNamespaces {
		o, err := get(ctx, opts.Namespace, name)
		if err == nil {
			return o, nil
		}
		if !livecluster.IsNotFound(err) {
			return nil, err
		}
	}
	objs, err := named(ctx, name)
	if err != nil {
		return nil, err
	}
	var nss []string
	for i := range objs {
		nss = append(nss, namespace(&objs[i]))
	}
	ns, err := pickNamespace(kind, name, slices.Clone(nss), opts)
	if err != nil {
		return nil, err
	}
	return &objs[slices.Index(nss, ns)], nil
}

// pickNamespace chooses among the namespaces holding an object of that
// name, or says what to do.
func pickNamespace(kind, name string, nss []string, opts Options) (string, error) {
	sort.Strings(nss)
	kubectl := map[string]string{"pod": "pods", "claim": "resourceclaims"}[kind]
	switch {
	case len(nss) == 0 && opts.AllNamespaces:
		return "", fmt.Errorf("%s %s not found in any namespace: check the name (kubectl get %s -A)", kind, name, kubectl)
	case len(nss) == 0:
		return "", fmt.Errorf("%s %s/%s not found, nor in another namespace: check the name (kubectl get %s -A)", kind, opts.Namespace, name, kubectl)
	case len(nss) == 1 && opts.AllNamespaces:
		return nss[0], nil
	case opts.AllNamespaces:
		return "", fmt.Errorf("%s %s is in namespaces %s: choose one with -n", kind, name, strings.Join(nss, ", "))
	case len(nss) == 1:
		return "", fmt.Errorf("%s %s/%s not found; there is a %s %s in namespace %s: run with -n %s", kind, opts.Namespace, name, kind, name, nss[0], nss[0])
	}
	return "", fmt.Errorf("%s %s/%s not found; namespaces %s have one: run with -n NAMESPACE", kind, opts.Namespace, name, strings.Join(nss, ", "))
}

// read lists what the allocator needs.
func (e *explainer) read(ctx context.Context) error {
	if e.snap != nil {
		return nil
	}
	s, err := e.conn.Read(ctx, livecluster.Kinds{Claims: true, Classes: true, Nodes: true})
	if err != nil {
		return err
	}
	e.snap = s
	return nil
}

// podClaim is one claim of a pod, with where it came from.
type podClaim struct {
	claim *resourceapi.ResourceClaim
	// from names the pod's entry: "ResourceClaimTemplate ns/t" or
	// "spec.resourceClaims[i] NAME"; empty for a claim asked for by name.
	from     string
	template string
}

// label names the claim and, for a pod's claim, where it came from.
func (pc podClaim) label() string {
	s := "claim " + pc.claim.Namespace + "/" + pc.claim.Name
	if pc.from != "" {
		s += " (" + pc.from + ")"
	}
	return s
}

// pod explains a pod: its scheduling state, then each claim.
func (e *explainer) pod(ctx context.Context, pod *v1.Pod) ([]string, error) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no resource claims (spec.resourceClaims is empty): nothing for accel-dra to explain; kubectl describe pod -n %s %s shows why it waits", pod.Namespace, pod.Name, pod.Namespace, pod.Name)
	}
	if err := e.read(ctx); err != nil {
		return nil, err
	}
	e.say(0, "pod %s/%s: %s", pod.Namespace, pod.Name, podState(pod))
	var claims []podClaim
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := resourceclaim.Name(pod, pc)
		if errors.Is(err, resourceclaim.ErrClaimNotFound) {
			name, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d] (%s): %w", pod.Namespace, pod.Name, i, pc.Name, err)
		}
		from := fmt.Sprintf("spec.resourceClaims[%d] %s", i, pc.Name)
		tmpl := ""
		if pc.ResourceClaimTemplateName != nil {
			tmpl = *pc.ResourceClaimTemplateName
			from = fmt.Sprintf("ResourceClaimTemplate %s/%s", pod.Namespace, tmpl)
		}
		if name == nil {
			// The resourceclaim controller has not made the claim yet:
			// say why if the template is missing.
			if tmpl != "" {
				if _, err := e.conn.ClaimTemplate(ctx, pod.Namespace, tmpl); livecluster.IsNotFound(err) {
					return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d] (%s) names ResourceClaimTemplate %s/%s, which does not exist: create it or fix resourceClaimTemplateName", pod.Namespace, pod.Name, i, pc.Name, pod.Namespace, tmpl)
				} else if err != nil && !apierrors.IsForbidden(err) {
					// Without the right to read templates the line
					// below still holds.
					return nil, err
				}
			}
			e.say(1, "claim for %s: not created yet (kube-controller-manager's resourceclaim controller makes it from the template)", from)
			continue
		}
		c := e.snapClaim(pod.Namespace, *name)
		if c == nil {
			return nil, fmt.Errorf("pod %s/%s: spec.resourceClaims[%d] (%s) names ResourceClaim %s/%s, which does not exist: create it or fix resourceClaimName", pod.Namespace, pod.Name, i, pc.Name, pod.Namespace, *name)
		}
		claims = append(claims, podClaim{claim: c, from: from, template: tmpl})
	}
	return e.explainClaims(ctx, pod, claims)
}

// claim explains a claim on its own; the pod that owns or reserves it,
// if any, gives the nodes it may go to.
func (e *explainer) claim(ctx context.Context, claim *resourceapi.ResourceClaim) ([]string, error) {
	if err := e.read(ctx); err != nil {
		return nil, err
	}
	// The pod that owns the claim (made from its template), else the
	// first that reserved it.
	var refs []metav1.OwnerReference
	for _, o := range claim.OwnerReferences {
		if o.Kind == "Pod" && o.APIVersion == "v1" {
			refs = append(refs, o)
		}
	}
	for _, r := range claim.Status.ReservedFor {
		if r.Resource == "pods" && r.APIGroup == "" {
			refs = append(refs, metav1.OwnerReference{Name: r.Name, UID: r.UID})
		}
	}
	var pod *v1.Pod
	for _, o := range refs {
		p, err := e.conn.Pod(ctx, claim.Namespace, o.Name)
		if err != nil && !livecluster.IsNotFound(err) {
			return nil, err
		}
		if err == nil && p.UID == o.UID {
			pod = p
			break
		}
	}
	if pod != nil {
		e.say(0, "claim %s/%s of pod %s/%s: %s", claim.Namespace, claim.Name, pod.Namespace, pod.Name, podState(pod))
	}
	c := e.snapClaim(claim.Namespace, claim.Name)
	if c == nil {
		c = claim
	}
	return e.explainClaims(ctx, pod, []podClaim{{claim: c}})
}

func (e *explainer) snapClaim(ns, name string) *resourceapi.ResourceClaim {
	for i := range e.snap.Claims {
		if c := &e.snap.Claims[i]; c.Namespace == ns && c.Name == name {
			return c
		}
	}
	return nil
}

// explainClaims checks the claims' classes and drivers, then explains
// the allocated ones, the pending ones, and the pod's prepare state.
func (e *explainer) explainClaims(ctx context.Context, pod *v1.Pod, claims []podClaim) ([]string, error) {
	classes := map[string]*resourceapi.DeviceClass{}
	for i := range e.snap.Classes {
		classes[e.snap.Classes[i].Name] = &e.snap.Classes[i]
	}
	lister := &simulate.Inputs{Classes: classes}
	cache := cel.NewCache(100, cel.Features{EnableConsumableCapacity: simulate.Features.ConsumableCapacity})
	var ours, pending []podClaim
	for _, pc := range claims {
		if err := checkClasses(pod, pc, classes); err != nil {
			return nil, err
		}
		if drivers, foreign := e.foreignDrivers(ctx, pc.claim, classes, cache); foreign {
			what := fmt.Sprintf("claim %s/%s asks for devices of %s, not of accel-dra (%s): that driver's tools explain it", pc.claim.Namespace, pc.claim.Name, strings.Join(drivers, ", "), strings.Join(e.ourDrivers(), ", "))
			if len(claims) == 1 {
				return nil, errors.New(what)
			}
			e.say(1, "%s", what)
			continue
		}
		ours = append(ours, pc)
		if pc.claim.Status.Allocation == nil {
			pending = append(pending, pc)
		}
	}
	if len(ours) == 0 && pod == nil {
		return nil, fmt.Errorf("no claim for accel-dra's drivers (%s)", strings.Join(e.ourDrivers(), ", "))
	}
	if len(ours) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no claim for accel-dra's drivers (%s)", pod.Namespace, pod.Name, strings.Join(e.ourDrivers(), ", "))
	}
	for _, pc := range ours {
		if pc.claim.Status.Allocation != nil {
			e.allocated(pc)
		}
	}
	if len(pending) > 0 && pod != nil {
		if err := e.domains(ctx, pod); err != nil {
			return nil, err
		}
	}
	if len(pending) > 0 {
		if err := e.pending(ctx, pod, ours, pending, lister, cache); err != nil {
			return nil, err
		}
	} else if pod != nil && pod.Spec.NodeName != "" {
		if err := e.prepare(ctx, pod); err != nil {
			return nil, err
		}
	} else if pod != nil {
		e.say(1, "every claim is allocated; the pod is not scheduled for other reasons: kubectl describe pod -n %s %s", pod.Namespace, pod.Name)
	}
	return e.out, nil
}

// checkClasses refuses a claim whose request names a DeviceClass that
// does not exist: the scheduler waits for it forever.
func checkClasses(pod *v1.Pod, pc podClaim, classes map[string]*resourceapi.DeviceClass) error {
	for i, r := range pc.claim.Spec.Devices.Requests {
		type sub struct{ field, class string }
		var subs []sub
		if r.Exactly != nil {
			subs = append(subs, sub{fmt.Sprintf("spec.devices.requests[%d].exactly.deviceClassName", i), r.Exactly.DeviceClassName})
		}
		for j, s := range r.FirstAvailable {
			subs = append(subs, sub{fmt.Sprintf("spec.devices.requests[%d].firstAvailable[%d].deviceClassName", i, j), s.DeviceClassName})
		}
		for _, s := range subs {
			if _, ok := classes[s.class]; ok {
				continue
			}
			where := fmt.Sprintf("claim %s/%s", pc.claim.Namespace, pc.claim.Name)
			fix := "fix the claim"
			if pc.template != "" {
				where = fmt.Sprintf("pod %s/%s: ResourceClaimTemplate %s/%s", pod.Namespace, pod.Name, pc.claim.Namespace, pc.template)
				fix = "fix the template (and recreate the pod)"
			}
			return fmt.Errorf("%s: %s: DeviceClass %q does not exist: %s or install the class (kubectl get deviceclasses lists them)", where, s.field, s.class, fix)
		}
	}
	return nil
}

// ourDrivers are the DRA drivers of the vendors of the registry.
func (e *explainer) ourDrivers() []string {
	var out []string
	for _, v := range e.opts.Registry.All() {
		out = append(out, v.Names().Driver)
	}
	sort.Strings(out)
	return out
}

func (e *explainer) isOurs(driver string) bool {
	_, ok := e.opts.Registry.ByDriver(driver)
	return ok
}

// foreignDrivers says whether a claim is for another driver: its
// allocated devices are none of ours, or, pending, its classes match
// devices of other drivers and none of ours.
func (e *explainer) foreignDrivers(ctx context.Context, claim *resourceapi.ResourceClaim, classes map[string]*resourceapi.DeviceClass, cache *cel.Cache) ([]string, bool) {
	other := map[string]bool{}
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			if e.isOurs(r.Driver) {
				return nil, false
			}
			other[r.Driver] = true
		}
		return sortedKeys(other), len(other) > 0
	}
	for _, r := range claim.Spec.Devices.Requests {
		var cls []string
		if r.Exactly != nil {
			cls = append(cls, r.Exactly.DeviceClassName)
		}
		for _, s := range r.FirstAvailable {
			cls = append(cls, s.DeviceClassName)
		}
		for _, name := range cls {
			class := classes[name]
			for _, s := range e.snap.Slices {
				for _, d := range s.Spec.Devices {
					if !simulate.SelectorsMatch(ctx, cache, class.Spec.Selectors, s.Spec.Driver, d) {
						continue
					}
					if e.isOurs(s.Spec.Driver) {
						return nil, false
					}
					other[s.Spec.Driver] = true
				}
			}
		}
	}
	return sortedKeys(other), len(other) > 0
}

// allocated says where an allocated claim's devices are and who holds it.
func (e *explainer) allocated(pc podClaim) {
	c := pc.claim
	devs := e.devices()
	node := allocationNode(c.Status.Allocation, e.nodeOfPool())
	e.say(1, "%s: allocated on node %s", pc.label(), node)
	for _, r := range c.Status.Allocation.Devices.Results {
		d, ok := devs[structured.MakeDeviceID(r.Driver, r.Pool, r.Device)]
		desc := ""
		if ok {
			desc = describe(d)
		}
		admin := ""
		if r.AdminAccess != nil && *r.AdminAccess {
			admin = " (admin access)"
		}
		e.say(2, "request %s: %s/%s/%s%s%s", r.Request, r.Driver, r.Pool, r.Device, desc, admin)
	}
	var holders []string
	for _, ref := range c.Status.ReservedFor {
		holders = append(holders, strings.TrimSuffix(ref.Resource, "s")+" "+ref.Name)
	}
	if len(holders) > 0 {
		e.say(2, "reserved for %s", strings.Join(holders, ", "))
	}
}

// describe is a device's model and link group, as " (Ascend910B3, hccs-0)".
func describe(d resourceapi.Device) string {
	var parts []string
	for _, a := range []resourceapi.QualifiedName{names.AttrModel, names.AttrLinkGroup} {
		if v, ok := d.Attributes[a]; ok && v.StringValue != nil {
			parts = append(parts, *v.StringValue)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (e *explainer) devices() map[structured.DeviceID]resourceapi.Device {
	out := map[structured.DeviceID]resourceapi.Device{}
	for _, s := range e.snap.Slices {
		for _, d := range s.Spec.Devices {
			out[structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)] = d
		}
	}
	return out
}

// nodeOfPool maps driver/pool to the node of its slices.
func (e *explainer) nodeOfPool() map[string]string {
	out := map[string]string{}
	for _, s := range e.snap.Slices {
		if s.Spec.NodeName != nil {
			out[s.Spec.Driver+"/"+s.Spec.Pool.Name] = *s.Spec.NodeName
		}
	}
	return out
}

// allocationNode names the node of an allocation: the node of its
// devices' slices, else its node selector's hostname.
func allocationNode(a *resourceapi.AllocationResult, nodeOfPool map[string]string) string {
	for _, r := range a.Devices.Results {
		if n, ok := nodeOfPool[r.Driver+"/"+r.Pool]; ok {
			return n
		}
	}
	if a.NodeSelector != nil {
		for _, t := range a.NodeSelector.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return "(any)"
}

// podState is a pod's phase and, while it waits, the scheduler's or the
// container's reason.
func podState(pod *v1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "being deleted"
	}
	s := string(pod.Status.Phase)
	if pod.Spec.NodeName == "" {
		s += ", not scheduled"
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
				s += " (" + c.Message + ")"
			}
		}
		return s
	}
	s += " on node " + pod.Spec.NodeName
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return s + ", container " + cs.Name + " " + w.Reason
		}
	}
	return s
}

// prepare explains a scheduled pod: the kubelet prepares its claims
// through the node agent before the containers start.
func (e *explainer) prepare(ctx context.Context, pod *v1.Pod) error {
	if pod.Status.Phase != v1.PodPending {
		e.say(1, "the kubelet prepared the claims (the pod is %s)", pod.Status.Phase)
		return nil
	}
	events, err := e.conn.Events(ctx, pod.Namespace, pod.UID)
	if err != nil {
		return err
	}
	var last *v1.Event
	for i := range events {
		if ev := &events[i]; ev.Reason == PrepareFailedReason && (last == nil || eventTime(ev).After(eventTime(last).Time)) {
			last = ev
		}
	}
	if last == nil {
		e.say(1, "the kubelet on %s reports no prepare failure (no %s event): the containers may still be starting; kubectl describe pod -n %s %s", pod.Spec.NodeName, PrepareFailedReason, pod.Namespace, pod.Name)
	} else {
		times := "once"
		if last.Count > 1 {
			times = fmt.Sprintf("%d times", last.Count)
		}
		e.say(1, "the kubelet on %s cannot prepare the claims (%s, %s): %s", pod.Spec.NodeName, PrepareFailedReason, times, last.Message)
	}
	agents, err := e.conn.PodsOnNode(ctx, pod.Spec.NodeName, e.opts.AgentSelector)
	if err != nil {
		return err
	}
	if len(agents) == 0 {
		e.say(1, "no accel-dra node agent pod (%s) runs on node %s: check the DaemonSet (kubectl get daemonsets -A -l app.kubernetes.io/name=accel-dra) and its nodeSelector", e.opts.AgentSelector, pod.Spec.NodeName)
		return nil
	}
	for _, a := range agents {
		e.say(1, "node agent on %s: pod %s/%s; its log says why: kubectl logs -n %s %s", pod.Spec.NodeName, a.Namespace, a.Name, a.Namespace, a.Name)
	}
	return nil
}

func eventTime(ev *v1.Event) metav1.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp
	case !ev.EventTime.IsZero():
		return metav1.Time{Time: ev.EventTime.Time}
	}
	return ev.FirstTimestamp
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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

// Package claimstatus writes a driver's entries of ResourceClaim
// status.devices (resourceapi.AllocatedDeviceStatus): after the node agent
// has prepared a claim, each allocated device of the driver gets a Ready
// condition and its v1alpha1.DeviceStatusData; after unprepare the entries
// go again.
//
// The writes are asynchronous: Prepared and Unprepared only record the
// desired state and return, so a slow or failing API server never fails or
// delays NodePrepareResources. Workers write the latest desired state of a
// claim with server-side apply of the status subresource, the driver name
// as field manager: status.devices is a map list keyed by driver, pool,
// device and shareID, so each driver owns only its own entries, and the
// Ascend and Cambricon drivers of one node agent write into the same claim
// without clobbering each other. Failed writes are retried with
// exponential backoff until they succeed or the claim is gone.
//
// Since Kubernetes 1.36 the API server authorizes each driver's entries
// separately (KEP-4817, feature DRAResourceClaimGranularStatusAuthorization,
// beta and on by default; k8s.io/kubernetes
// pkg/registry/resource.AuthorizedForDeviceStatus): besides patch on
// resourceclaims/status, the agent needs associated-node:patch on the
// synthetic resourceclaims/driver subresource, named after the driver; see
// the chart's ClusterRole.
package claimstatus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// The condition every written entry carries.
const (
	ConditionReady  = "Ready"
	ReasonPrepared  = "Prepared"
	messagePrepared = "The node agent has prepared the device for the claim's containers."
)

// Device is one allocated device of the driver in a prepared claim: the
// pool, device and share ID of its allocation result, and what to publish
// about it.
type Device struct {
	Pool, Device string
	// ShareID is the allocation result's shareID (a share of a chip that
	// allows multiple allocations); nil otherwise.
	ShareID *types.UID
	Data    v1alpha1.DeviceStatusData
}

// ChipData is the status data of a whole chip. For a partition the caller
// adds Template and InstanceID.
func ChipData(c inventory.Chip) v1alpha1.DeviceStatusData {
	return v1alpha1.DeviceStatusData{
		UUID:          c.UUID,
		Model:         c.Model,
		Index:         ptr.To(c.Index),
		PCIBusID:      c.PCIBusID,
		DriverVersion: c.DriverVersion,
		DeviceIP:      c.DeviceIP,
		SuperPodID:    c.SuperPod,
		SuperDeviceID: c.SuperDeviceID,
		ServerIndex:   c.ServerIndex,
	}
}

// Defaults of the retry backoff: per claim, doubling from base up to max.
const (
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 2 * time.Minute
	DefaultWorkers     = 2
)

// Option changes a Writer's defaults.
type Option func(*Writer)

// WithBackoff sets the retry backoff of a claim's failed writes: base after
// the first failure, doubling up to max.
func WithBackoff(base, max time.Duration) Option {
	return func(w *Writer) { w.backoffBase, w.backoffMax = base, max }
}

// WithWorkers sets how many claims are written at the same time.
func WithWorkers(n int) Option {
	return func(w *Writer) {
		if n > 0 {
			w.workers = n
		}
	}
}

// Writer writes the status.devices entries of one driver. Create it with
// New, start it with Run; Prepared and Unprepared may be called before Run
// and from any goroutine.
type Writer struct {
	client      kubernetes.Interface
	driverName  string
	workers     int
	backoffBase time.Duration
	backoffMax  time.Duration
	queue       workqueue.TypedRateLimitingInterface[claimKey]

	mu sync.Mutex
	// desired is the latest state asked for, per claim; an entry goes once
	// it is written or can never be.
	desired map[claimKey]desiredState
	seq     uint64
}

// claimKey is one claim: a claim that is deleted and created again under
// the same name is another claim.
type claimKey struct {
	Namespace, Name string
	UID             types.UID
}

// desiredState is the devices to publish; none clears the driver's entries.
// seq tells a state from a newer one asked for while it was written.
type desiredState struct {
	devices []Device
	seq     uint64
}

// New returns a Writer for driverName that writes with client, which must
// carry the node agent's own credentials (see the package documentation
// for the permissions).
func New(client kubernetes.Interface, driverName string, opts ...Option) *Writer {
	w := &Writer{
		client:      client,
		driverName:  driverName,
		workers:     DefaultWorkers,
		backoffBase: DefaultBackoffBase,
		backoffMax:  DefaultBackoffMax,
		desired:     map[claimKey]desiredState{},
	}
	for _, o := range opts {
		o(w)
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[claimKey](w.backoffBase, w.backoffMax),
		workqueue.TypedRateLimitingQueueConfig[claimKey]{Name: "claimstatus-" + driverName},
	)
	return w
}

// Prepared asks for one entry per device in the claim's status.devices,
// replacing the driver's earlier entries there. It returns at once.
// Devices not allocated to the driver in the claim are left out (and
// logged); with no devices it is Unprepared.
func (w *Writer) Prepared(namespace, name string, uid types.UID, devices []Device) {
	w.want(claimKey{Namespace: namespace, Name: name, UID: uid}, cloneDevices(devices))
}

// Unprepared asks for the driver's entries in the claim's status.devices
// to be removed. It returns at once. A claim that is gone or deallocated
// meanwhile has none left (the API server drops the status of deallocated
// devices), which is not an error.
func (w *Writer) Unprepared(namespace, name string, uid types.UID) {
	w.want(claimKey{Namespace: namespace, Name: name, UID: uid}, nil)
}

func (w *Writer) want(key claimKey, devices []Device) {
	if w.queue.ShuttingDown() {
		return
	}
	w.mu.Lock()
	w.seq++
	w.desired[key] = desiredState{devices: devices, seq: w.seq}
	w.mu.Unlock()
	w.queue.Add(key)
}

// Run writes until ctx is done, then stops the workers and returns. Call it
// once, in its own goroutine.
func (w *Writer) Run(ctx context.Context) {
	logger := klog.LoggerWithValues(klog.LoggerWithName(klog.FromContext(ctx), "claimstatus"), "driver", w.driverName)
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(func() {
			for w.processNext(ctx) {
			}
		})
	}
	logger.V(3).Info("Writing claim device status", "workers", w.workers)
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
}

// processNext writes one claim; false once the queue is shut down.
func (w *Writer) processNext(ctx context.Context) bool {
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)

	w.mu.Lock()
	state, ok := w.desired[key]
	w.mu.Unlock()
	if !ok {
		// Done already: a retry of a state that a newer one has replaced.
		w.queue.Forget(key)
		return true
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "claim", klog.KRef(key.Namespace, key.Name), "claimUID", key.UID)
	err := w.sync(klog.NewContext(ctx, logger), key, state.devices)
	var final *finalError
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: the write was cut short, not failed.
		return true
	case err != nil && !errors.As(err, &final):
		logger.Error(err, "Writing the claim's device status failed, will retry", "attempt", w.queue.NumRequeues(key)+1)
		w.queue.AddRateLimited(key)
		return true
	case err != nil:
		logger.Error(err, "Writing the claim's device status failed, not retrying")
	}
	w.queue.Forget(key)
	w.mu.Lock()
	if cur, ok := w.desired[key]; ok && cur.seq == state.seq {
		delete(w.desired, key)
	}
	w.mu.Unlock()
	return true
}

// finalError is a failed write that writing again cannot fix.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// sync makes the driver's entries in the claim's status.devices those of
// devices. It returns nil when there is nothing (more) to do: the claim is
// gone, replaced by another of the same name, or deallocated.
func (w *Writer) sync(ctx context.Context, key claimKey, devices []Device) error {
	logger := klog.FromContext(ctx)
	claims := w.client.ResourceV1().ResourceClaims(key.Namespace)
	// The claim gives the generation for observedGeneration, the
	// allocation to check the devices against, and the entries there now.
	claim, err := claims.Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logger.V(3).Info("Claim is gone, its device status with it")
		return nil
	case err != nil:
		return fmt.Errorf("getting the claim: %w", err)
	case claim.UID != key.UID:
		logger.V(3).Info("Claim was replaced by another of the same name, leaving it alone", "otherUID", claim.UID)
		return nil
	case claim.Status.Allocation == nil:
		// The API server drops status.devices entries of devices that get
		// deallocated, and accepts entries only for allocated devices.
		logger.V(3).Info("Claim is not allocated, so it has no device status to write or clear")
		return nil
	}

	current := w.entriesOf(claim)
	want := w.entries(ctx, claim, devices, current)
	if sameEntries(current, want) {
		logger.V(4).Info("Claim's device status is up to date", "devices", len(want))
		return nil
	}

	// metadata.uid makes the apply fail instead of writing into a claim
	// that replaced ours since the Get (the API server rejects changing the
	// uid; it never creates a claim through the status subresource).
	status := resourceac.ResourceClaimStatus()
	for _, k := range slices.SortedFunc(maps.Keys(want), compareKeys) {
		status.WithDevices(applyConfiguration(want[k]))
	}
	ac := resourceac.ResourceClaim(key.Name, key.Namespace).WithUID(key.UID).WithStatus(status)
	_, err = claims.ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: w.driverName, Force: true})
	switch {
	case apierrors.IsNotFound(err):
		logger.V(3).Info("Claim is gone, its device status with it")
		return nil
	case apierrors.IsInvalid(err) && uidChanged(err):
		logger.V(3).Info("Claim was replaced by another of the same name, leaving it alone")
		return nil
	case apierrors.IsInvalid(err):
		// The claim was deallocated since the Get, or our entries are not
		// valid: the same write would fail again.
		return &finalError{fmt.Errorf("applying status.devices: %w", err)}
	case err != nil:
		return fmt.Errorf("applying status.devices: %w", err)
	}
	if len(want) == 0 {
		logger.V(3).Info("Cleared the claim's device status", "devices", len(current))
	} else {
		logger.V(3).Info("Wrote the claim's device status", "devices", len(want))
	}
	return nil
}

// uidChanged says whether an Invalid error is the API server refusing our
// metadata.uid, which happens when the claim is not the one we prepared.
func uidChanged(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// entryKey is the list-map key of status.devices.
type entryKey struct {
	pool, device, shareID string
}

func compareKeys(a, b entryKey) int {
	return cmp.Or(cmp.Compare(a.pool, b.pool), cmp.Compare(a.device, b.device), cmp.Compare(a.shareID, b.shareID))
}

func keyOf(pool, device string, shareID *string) entryKey {
	return entryKey{pool: pool, device: device, shareID: ptr.Deref(shareID, "")}
}

// entriesOf returns the claim's status.devices entries of the driver.
func (w *Writer) entriesOf(claim *resourceapi.ResourceClaim) map[entryKey]resourceapi.AllocatedDeviceStatus {
	out := map[entryKey]resourceapi.AllocatedDeviceStatus{}
	for _, e := range claim.Status.Devices {
		if e.Driver == w.driverName {
			out[keyOf(e.Pool, e.Device, e.ShareID)] = e
		}
	}
	return out
}

// entries builds the wanted entries of devices, leaving out those the claim
// does not allocate to the driver (the API server would reject the whole
// write). A Ready condition keeps its lastTransitionTime from current.
func (w *Writer) entries(ctx context.Context, claim *resourceapi.ResourceClaim, devices []Device, current map[entryKey]resourceapi.AllocatedDeviceStatus) map[entryKey]resourceapi.AllocatedDeviceStatus {
	logger := klog.FromContext(ctx)
	allocated := map[entryKey]bool{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == w.driverName {
			allocated[keyOf(r.Pool, r.Device, (*string)(r.ShareID))] = true
		}
	}
	now := metav1.Now().Rfc3339Copy() // the precision the API stores
	out := map[entryKey]resourceapi.AllocatedDeviceStatus{}
	for _, d := range devices {
		k := keyOf(d.Pool, d.Device, (*string)(d.ShareID))
		if !allocated[k] {
			logger.Error(nil, "Device is not allocated to the driver in the claim, leaving it out of status.devices", "pool", d.Pool, "device", d.Device, "shareID", k.shareID)
			continue
		}
		raw, err := json.Marshal(d.Data)
		if err != nil { // cannot happen: strings and ints
			logger.Error(err, "Encoding device status data, leaving the data out", "device", d.Device)
		}
		cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared,
			Message: messagePrepared, ObservedGeneration: claim.Generation, LastTransitionTime: now}
		if old, ok := current[k]; ok {
			for _, c := range old.Conditions {
				if c.Type == cond.Type && c.Status == cond.Status {
					cond.LastTransitionTime = c.LastTransitionTime
				}
			}
		}
		e := resourceapi.AllocatedDeviceStatus{Driver: w.driverName, Pool: d.Pool, Device: d.Device,
			ShareID: (*string)(d.ShareID), Conditions: []metav1.Condition{cond}, NetworkData: d.Data.NetworkData()}
		if err == nil {
			e.Data = &runtime.RawExtension{Raw: raw}
		}
		out[k] = e // a device listed twice: the last one wins
	}
	return out
}

// sameEntries says whether writing want would change nothing. Data is
// compared as JSON values, not bytes.
func sameEntries(current, want map[entryKey]resourceapi.AllocatedDeviceStatus) bool {
	if len(current) != len(want) {
		return false
	}
	for k, w := range want {
		c, ok := current[k]
		if !ok || !apiequality.Semantic.DeepEqual(c.Conditions, w.Conditions) ||
			!apiequality.Semantic.DeepEqual(c.NetworkData, w.NetworkData) || !sameJSON(c.Data, w.Data) {
			return false
		}
	}
	return true
}

func sameJSON(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	var va, vb any
	if json.Unmarshal(a.Raw, &va) != nil || json.Unmarshal(b.Raw, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func applyConfiguration(e resourceapi.AllocatedDeviceStatus) *resourceac.AllocatedDeviceStatusApplyConfiguration {
	ac := resourceac.AllocatedDeviceStatus().WithDriver(e.Driver).WithPool(e.Pool).WithDevice(e.Device)
	if e.ShareID != nil {
		ac.WithShareID(*e.ShareID)
	}
	for _, c := range e.Conditions {
		ac.WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	if e.Data != nil {
		ac.WithData(*e.Data)
	}
	if e.NetworkData != nil {
		ac.WithNetworkData(resourceac.NetworkDeviceData().WithIPs(e.NetworkData.IPs...))
	}
	return ac
}

// cloneDevices copies devices so that the caller may reuse its slice.
func cloneDevices(devices []Device) []Device {
	if len(devices) == 0 {
		return nil
	}
	out := make([]Device, len(devices))
	for i, d := range devices {
		out[i] = d
		out[i].ShareID = clonePtr(d.ShareID)
		out[i].Data.Index = clonePtr(d.Data.Index)
		out[i].Data.InstanceID = clonePtr(d.Data.InstanceID)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

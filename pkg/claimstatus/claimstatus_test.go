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

package claimstatus

// The tests run the Writer against client-go's fake clientset
// (fake.NewClientset), whose object tracker applies server-side apply
// patches with the real structured-merge-diff field manager and the
// resource.k8s.io/v1 schema: list-map merging of status.devices by
// driver/pool/device/shareID and ownership per field manager are the real
// ones, so two drivers' entries coexisting and one driver clearing only
// its own are tested for real. What the fake does not do, and so these
// tests cannot show:
//   - it ignores the status subresource: an apply to a missing claim
//     creates it instead of failing with NotFound, and metadata.uid in the
//     apply is written instead of being rejected as immutable. The Writer
//     Gets the claim first and skips gone or replaced claims, so that path
//     is tested; the apiserver's own rejection (the race between Get and
//     apply) is simulated with injected NotFound/Invalid errors.
//   - no validation (devices must be allocated, canonical CIDR IPs,
//     condition fields) and no dropping of deallocated devices' status;
//     v1alpha1's tests check the IPs against the apiserver's validator.
//   - no authorization: the resourceclaims/driver associated-node check is
//     covered by the chart's RBAC tests and the e2e cluster.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	ascendvendor "github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

const (
	ascend    = "ascend.accel-dra.dev"
	cambricon = "cambricon.accel-dra.dev"
	ns        = "default"
	node      = "mixed-0"
)

func result(request, driver, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: node, Device: device}
}

// claim is an allocated claim on node with the given results.
func claim(name string, uid types.UID, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Generation: 1},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results},
		}},
	}
}

var (
	npu0 = Device{Pool: node, Device: "npu-0", Data: v1alpha1.DeviceStatusData{UUID: "u-npu-0", Model: "Ascend910B3",
		Index: ptr.To(0), PCIBusID: "0000:11:00.0", DriverVersion: "24.1.0", DeviceIP: "10.20.1.2/24"}}
	npu1 = Device{Pool: node, Device: "npu-1", Data: v1alpha1.DeviceStatusData{UUID: "u-npu-1", Model: "Ascend910B3",
		Index: ptr.To(1), PCIBusID: "0000:12:00.0", DriverVersion: "24.1.0", DeviceIP: "10.20.1.3/24"}}
	mlu0 = Device{Pool: node, Device: "mlu-0", Data: v1alpha1.DeviceStatusData{UUID: "u-mlu-0", Model: "MLU370-X8",
		Index: ptr.To(0), PCIBusID: "0000:91:00.0", DriverVersion: "5.10.22"}}
)

// start runs a Writer for driver with a fast backoff until the test ends.
func start(t *testing.T, client *fake.Clientset, driver string) *Writer {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	w := New(client, driver, WithBackoff(time.Millisecond, 20*time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return w
}

// settled waits until w has nothing left to write.
func settled(t *testing.T, w *Writer) {
	t.Helper()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.desired) == 0
	}, 10*time.Second, time.Millisecond, "the writer still has work")
}

func get(t *testing.T, client *fake.Clientset, name string) *resourceapi.ResourceClaim {
	t.Helper()
	c, err := client.ResourceV1().ResourceClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return c
}

// devicesOf returns driver/device -> entry of the claim's status.devices.
func devicesOf(c *resourceapi.ResourceClaim) map[string]resourceapi.AllocatedDeviceStatus {
	out := map[string]resourceapi.AllocatedDeviceStatus{}
	for _, e := range c.Status.Devices {
		out[e.Driver+"/"+e.Device] = e
	}
	return out
}

// statusWrites counts the apply patches of the status subresource.
func statusWrites(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" && p.GetPatchType() == types.ApplyPatchType {
			n++
		}
	}
	return n
}

// failWrites makes the first n status writes fail with err.
func failWrites(client *fake.Clientset, n int32, err error) *atomic.Int32 {
	var calls atomic.Int32
	client.PrependReactor("patch", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		if calls.Add(1) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &calls
}

func TestPreparedWritesOneReadyEntryWithTheDataOfEachDevice(t *testing.T) {
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0"), result("npus", ascend, "npu-1")))
	w := start(t, client, ascend)
	w.Prepared(ns, "train", "uid-1", []Device{npu0, npu1})
	settled(t, w)

	c := get(t, client, "train")
	got := devicesOf(c)
	require.Len(t, got, 2)
	e := got[ascend+"/npu-0"]
	require.Equal(t, node, e.Pool)
	require.Nil(t, e.ShareID)
	require.Len(t, e.Conditions, 1)
	cond := e.Conditions[0]
	require.Equal(t, "Ready", cond.Type)
	require.Equal(t, metav1.ConditionTrue, cond.Status)
	require.Equal(t, "Prepared", cond.Reason)
	require.Equal(t, int64(1), cond.ObservedGeneration)
	require.False(t, cond.LastTransitionTime.IsZero(), "the API server requires lastTransitionTime")
	require.NotNil(t, e.Data)
	require.JSONEq(t, `{"uuid":"u-npu-0","model":"Ascend910B3","index":0,"pciBusID":"0000:11:00.0","driverVersion":"24.1.0","deviceIP":"10.20.1.2/24"}`, string(e.Data.Raw))
	require.Equal(t, &resourceapi.NetworkDeviceData{IPs: []string{"10.20.1.2/24"}}, e.NetworkData)

	var data v1alpha1.DeviceStatusData
	require.NoError(t, json.Unmarshal(got[ascend+"/npu-1"].Data.Raw, &data), "a launcher parses the data with the public type")
	require.Equal(t, npu1.Data, data)

	managers := map[string]bool{}
	for _, m := range c.ManagedFields {
		managers[m.Manager] = true
	}
	require.True(t, managers[ascend], "the driver name is the field manager: %v", managers)
}

func TestASharedChipsEntryCarriesTheShareIDAndAnMLUHasNoNetworkData(t *testing.T) {
	share := types.UID("8f2b2c4e-7f0c-4b8a-9d21-5d9d5a4c0a11")
	r := result("mlu", cambricon, "mlu-0")
	r.ShareID = &share
	client := fake.NewClientset(claim("infer", "uid-1", r))
	w := start(t, client, cambricon)
	shared := mlu0
	shared.ShareID = &share
	w.Prepared(ns, "infer", "uid-1", []Device{shared})
	settled(t, w)

	e := devicesOf(get(t, client, "infer"))[cambricon+"/mlu-0"]
	require.Equal(t, ptr.To(string(share)), e.ShareID)
	require.Nil(t, e.NetworkData)
}

func TestFailedWritesAreRetriedUntilTheySucceed(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"server unavailable", apierrors.NewServiceUnavailable("injected")},
		{"forbidden until RBAC is fixed", apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, "train", errors.New("injected"))},
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0")))
			calls := failWrites(client, 3, tt.err)
			w := start(t, client, ascend)
			w.Prepared(ns, "train", "uid-1", []Device{npu0})
			settled(t, w)
			require.Equal(t, int32(4), calls.Load(), "three failures, then the write that succeeds")
			require.Len(t, get(t, client, "train").Status.Devices, 1)
		})
	}
}

func TestPreparedOnlyRecordsAndTheWorkersKeepRetrying(t *testing.T) {
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0")))
	failWrites(client, 1<<30, apierrors.NewServiceUnavailable("injected"))
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	w := New(client, ascend, WithBackoff(time.Millisecond, 20*time.Millisecond))
	for range 100 {
		w.Prepared(ns, "train", "uid-1", []Device{npu0})
	}
	require.Empty(t, client.Actions(), "the prepare path makes no API call")

	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	require.Eventually(t, func() bool { return statusWrites(client) >= 3 }, 10*time.Second, time.Millisecond, "the writer keeps retrying")
	cancel()
	<-done // Run returns once ctx is done, even with a write pending
}

func TestUnpreparedClearsTheDriversEntries(t *testing.T) {
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0"), result("npus", ascend, "npu-1")))
	w := start(t, client, ascend)
	w.Prepared(ns, "train", "uid-1", []Device{npu0, npu1})
	settled(t, w)
	require.Len(t, get(t, client, "train").Status.Devices, 2)

	w.Unprepared(ns, "train", "uid-1")
	settled(t, w)
	require.Empty(t, get(t, client, "train").Status.Devices)
}

func TestNothingToWriteOrClearMakesNoWrite(t *testing.T) {
	deallocated := claim("done", "uid-2")
	deallocated.Status.Allocation = nil
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0")), deallocated)
	w := start(t, client, ascend)

	w.Unprepared(ns, "train", "uid-1") // never prepared: no entries of ours
	w.Unprepared(ns, "done", "uid-2")  // deallocated: the API server dropped them
	w.Prepared(ns, "done", "uid-2", []Device{npu0})
	w.Unprepared(ns, "gone", "uid-3") // deleted
	settled(t, w)
	require.Zero(t, statusWrites(client))

	w.Prepared(ns, "train", "uid-1", []Device{npu0})
	settled(t, w)
	require.Equal(t, 1, statusWrites(client))
	w.Prepared(ns, "train", "uid-1", []Device{npu0}) // kubelet prepares again after a restart
	settled(t, w)
	require.Equal(t, 1, statusWrites(client), "an entry that is up to date is not written again")
}

func TestANewerStateReplacesTheOneNotYetWritten(t *testing.T) {
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0"), result("npus", ascend, "npu-1")))
	// Not started yet: the states pile up as they would behind a slow
	// API server.
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := New(client, ascend, WithBackoff(time.Millisecond, 20*time.Millisecond))
	w.Prepared(ns, "train", "uid-1", []Device{npu0})
	w.Unprepared(ns, "train", "uid-1")
	changed := npu1
	changed.Data.DeviceIP = "10.20.1.9/24"
	w.Prepared(ns, "train", "uid-1", []Device{npu1, changed}) // the same device twice: the last wins
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	settled(t, w)
	cancel()
	<-done

	require.Equal(t, 1, statusWrites(client), "only the latest state is written")
	got := devicesOf(get(t, client, "train"))
	require.Len(t, got, 1)
	require.Equal(t, []string{"10.20.1.9/24"}, got[ascend+"/npu-1"].NetworkData.IPs)
}

func TestAChangedEntryKeepsItsTransitionTime(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c := claim("train", "uid-1", result("npus", ascend, "npu-0"))
	c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: ascend, Pool: node, Device: "npu-0",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", ObservedGeneration: 1, LastTransitionTime: since}},
		Data:       &runtime.RawExtension{Raw: []byte(`{"driverVersion":"24.1.0"}`)}}}
	client := fake.NewClientset(c)
	w := start(t, client, ascend)
	w.Prepared(ns, "train", "uid-1", []Device{npu0})
	settled(t, w)
	require.Equal(t, 1, statusWrites(client), "the data changed")
	e := devicesOf(get(t, client, "train"))[ascend+"/npu-0"]
	require.Contains(t, string(e.Data.Raw), `"uuid":"u-npu-0"`)
	require.True(t, since.Equal(&e.Conditions[0].LastTransitionTime), "still Ready since %v, got %v", since, e.Conditions[0].LastTransitionTime)
}

func TestAClaimThatIsGoneOrReplacedIsLeftAloneAndNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		claims []runtime.Object
		// applyErr is what the API server answers the apply: the claim
		// went away between the Writer's Get and its apply.
		applyErr error
		wantGet  bool // the claim named "train" still exists afterwards
	}{
		{name: "deleted before the write"},
		{name: "replaced by a claim of the same name",
			claims: []runtime.Object{claim("train", "uid-new", result("npus", ascend, "npu-0"))}, wantGet: true},
		{name: "deleted between get and apply",
			claims:   []runtime.Object{claim("train", "uid-1", result("npus", ascend, "npu-0"))},
			applyErr: apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, "train"), wantGet: true},
		{name: "replaced between get and apply: the uid is immutable",
			claims: []runtime.Object{claim("train", "uid-1", result("npus", ascend, "npu-0"))},
			applyErr: apierrors.NewInvalid(schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaim"}, "train",
				field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "uid-1", "field is immutable")}), wantGet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.claims...)
			var calls *atomic.Int32
			if tt.applyErr != nil {
				calls = failWrites(client, 1<<30, tt.applyErr)
			}
			w := start(t, client, ascend)
			w.Prepared(ns, "train", "uid-1", []Device{npu0})
			settled(t, w)
			time.Sleep(50 * time.Millisecond) // more than the backoff: a retry would show
			if calls != nil {
				require.Equal(t, int32(1), calls.Load(), "one attempt, no retry")
			}
			_, err := client.ResourceV1().ResourceClaims(ns).Get(context.Background(), "train", metav1.GetOptions{})
			if !tt.wantGet {
				require.True(t, apierrors.IsNotFound(err), "the fake would create the claim by apply: %v", err)
				return
			}
			require.NoError(t, err)
			if tt.applyErr == nil {
				require.Empty(t, get(t, client, "train").Status.Devices, "another claim's status is not ours")
			}
		})
	}
}

func TestADeviceTheClaimDoesNotAllocateToTheDriverIsLeftOut(t *testing.T) {
	client := fake.NewClientset(claim("train", "uid-1", result("npus", ascend, "npu-0"), result("mlu", cambricon, "npu-1")))
	w := start(t, client, ascend)
	w.Prepared(ns, "train", "uid-1", []Device{npu0, npu1})
	settled(t, w)
	got := devicesOf(get(t, client, "train"))
	require.Len(t, got, 1)
	require.Contains(t, got, ascend+"/npu-0")
}

func TestTwoDriversWriteTheirOwnEntriesIntoOneClaim(t *testing.T) {
	client := fake.NewClientset(claim("pipeline", "uid-1", result("npu", ascend, "npu-0"), result("mlu", cambricon, "mlu-0")))
	a, c := start(t, client, ascend), start(t, client, cambricon)
	a.Prepared(ns, "pipeline", "uid-1", []Device{npu0})
	c.Prepared(ns, "pipeline", "uid-1", []Device{mlu0})
	settled(t, a)
	settled(t, c)
	got := devicesOf(get(t, client, "pipeline"))
	require.Len(t, got, 2, "neither apply removed the other driver's entry")
	require.Contains(t, got, ascend+"/npu-0")
	require.Contains(t, got, cambricon+"/mlu-0")

	a.Unprepared(ns, "pipeline", "uid-1")
	settled(t, a)
	got = devicesOf(get(t, client, "pipeline"))
	require.Len(t, got, 1)
	require.Contains(t, got, cambricon+"/mlu-0", "clearing removes only the driver's own entries")
}

func TestChipDataIsTheChipsFacts(t *testing.T) {
	c := inventory.Chip{Vendor: ascendvendor.Vendor, Model: "Ascend910A", Index: 0, UUID: "u-0",
		PCIBusID: "0000:11:00.0", DriverVersion: "23.0.3", DeviceIP: "192.168.100.101/24", MemoryBytes: 32 << 30}
	require.Equal(t, v1alpha1.DeviceStatusData{UUID: "u-0", Model: "Ascend910A", Index: ptr.To(0), PCIBusID: "0000:11:00.0",
		DriverVersion: "23.0.3", DeviceIP: "192.168.100.101/24"}, ChipData(c))
}

func TestChipDataCarriesTheChipsPlaceInItsSuperPod(t *testing.T) {
	c := inventory.Chip{Vendor: ascendvendor.Vendor, Model: "Ascend910C", Index: 3, DeviceIP: "10.0.3.46/24",
		SuperPod: "1", SuperDeviceID: ptr.To[int64](114622475), ServerIndex: ptr.To[int64](27)}
	require.Equal(t, v1alpha1.DeviceStatusData{Model: "Ascend910C", Index: ptr.To(3), DeviceIP: "10.0.3.46/24",
		SuperPodID: "1", SuperDeviceID: ptr.To[int64](114622475), ServerIndex: ptr.To[int64](27)}, ChipData(c))
}

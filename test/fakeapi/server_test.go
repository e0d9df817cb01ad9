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

package fakeapi_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/test/fakeapi"
)

// TestHandler drives the served fake with client-go's real clientset, as
// the node agent binary does: the calls of the kubeletplugin helper and
// its resourceslice controller (get, list and watch by field selector,
// create, update, delete) and of the claim status writer (apply).
func TestHandler(t *testing.T) {
	ctx := context.Background()
	fake := fakeapi.NewClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0", UID: "node-uid"}})
	fakeapi.CheapStatusApply(fake)
	srv := httptest.NewServer(fakeapi.Handler(fake))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)

	node, err := c.CoreV1().Nodes().Get(ctx, "node-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "node-uid", string(node.UID))
	_, err = c.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a missing object is NotFound: %v", err)

	w, err := c.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{FieldSelector: "spec.driver=a"})
	require.NoError(t, err)
	defer w.Stop()
	slice := func(driver string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-0-" + driver + "-"},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("node-0"), Pool: resourceapi.ResourcePool{Name: "node-0", ResourceSliceCount: 1}}}
	}
	a, err := c.ResourceV1().ResourceSlices().Create(ctx, slice("a"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, a.Name, "a generated name")
	_, err = c.ResourceV1().ResourceSlices().Create(ctx, slice("b"), metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=a"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "the field selector applies")
	select {
	case e := <-w.ResultChan():
		require.Equal(t, watch.Added, e.Type)
		require.Equal(t, a.Name, e.Object.(*resourceapi.ResourceSlice).Name, "only driver a's slice")
	case <-time.After(time.Minute):
		require.Fail(t, "no watch event")
	}
	a.Spec.Pool.Generation = 2
	_, err = c.ResourceV1().ResourceSlices().Update(ctx, a, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.ResourceV1().ResourceSlices().Delete(ctx, a.Name, metav1.DeleteOptions{}))
	for _, want := range []watch.EventType{watch.Modified, watch.Deleted} {
		e := <-w.ResultChan()
		require.Equal(t, want, e.Type)
	}

	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", UID: "uid-c"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	_, err = c.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "c", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, got.Status.Allocation, "the status is stored with the claim")
	ac := resourceac.ResourceClaim("c", "default").WithStatus(resourceac.ResourceClaimStatus().
		WithDevices(resourceac.AllocatedDeviceStatus().WithDriver("a").WithPool("node-0").WithDevice("x")))
	got, err = c.ResourceV1().ResourceClaims("default").ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: "agent", Force: true})
	require.NoError(t, err)
	require.Equal(t, claim.UID, got.UID)

	_, err = c.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	require.True(t, apierrors.IsBadRequest(err), "a watch list is refused, so informers list and watch: %v", err)
}

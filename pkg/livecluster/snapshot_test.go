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

package livecluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
)

func TestReadListsWhatIsAsked(t *testing.T) {
	objs := []runtime.Object{
		&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-a-ascend"}},
		&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c1"}},
		&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "c2"}},
		&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "ascend.accel-dra.dev"}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
	}
	conn, _ := liveclustertest.Connection("team-a", objs...)
	for _, tc := range []struct {
		name  string
		kinds livecluster.Kinds
		want  [5]int // slices, claims, classes, pods, nodes
	}{
		{"slices only", livecluster.Kinds{}, [5]int{1, 0, 0, 0, 0}},
		{"claims in every namespace", livecluster.Kinds{Claims: true}, [5]int{1, 2, 0, 0, 0}},
		{"everything", livecluster.Kinds{Claims: true, Classes: true, Pods: true, Nodes: true}, [5]int{1, 2, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := conn.Read(context.Background(), tc.kinds)
			require.NoError(t, err)
			require.Equal(t, tc.want, [5]int{len(s.Slices), len(s.Claims), len(s.Classes), len(s.Pods), len(s.Nodes)})
		})
	}
}

func TestReadExplainsRefusals(t *testing.T) {
	gr := schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}
	for _, tc := range []struct {
		name     string
		versions []string
		listErr  error
		want     []string
	}{
		{name: "no resource.k8s.io", versions: nil, want: []string{"does not serve the resource.k8s.io API group", "1.34"}},
		{name: "only beta", versions: []string{"v1beta2"}, want: []string{"does not serve resource.k8s.io/v1"}},
		{name: "newer version preferred", versions: []string{"v2", "v1"}, want: []string{"prefers resource.k8s.io/v2", "newer than the v1"}},
		{name: "forbidden", versions: []string{"v1"}, listErr: apierrors.NewForbidden(gr, "", errors.New("user \"dev\" cannot list")),
			want: []string{"not allowed to list resourceclaims.resource.k8s.io at cluster scope", "ClusterRole accel-dra-viewer", "kubectl create clusterrolebinding"}},
		{name: "unreachable", versions: []string{"v1"}, listErr: &url.Error{Op: "Get", URL: "https://fake.test", Err: errors.New("connection refused")},
			want: []string{"cannot reach the cluster at https://fake.test", "--kubeconfig"}},
		{name: "bad credentials", versions: []string{"v1"}, listErr: apierrors.NewUnauthorized("who are you"),
			want: []string{"did not accept your credentials", "--token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, client := liveclustertest.Connection("default")
			liveclustertest.SetResourceVersions(client, tc.versions...)
			if tc.listErr != nil {
				client.PrependReactor("list", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.listErr
				})
			}
			_, err := conn.Read(context.Background(), livecluster.Kinds{Claims: true})
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestReadFollowsContinueTokens(t *testing.T) {
	conn, client := liveclustertest.Connection("default")
	calls := 0
	client.PrependReactor("list", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		opts := a.(k8stesting.ListActionImpl).ListOptions
		require.Equal(t, int64(500), opts.Limit)
		if opts.Continue == "" {
			return true, &resourceapi.ResourceSliceList{ListMeta: metav1.ListMeta{Continue: "page2"},
				Items: []resourceapi.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}, nil
		}
		require.Equal(t, "page2", opts.Continue)
		return true, &resourceapi.ResourceSliceList{Items: []resourceapi.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}, nil
	})
	s, err := conn.Read(context.Background(), livecluster.Kinds{})
	require.NoError(t, err)
	require.Equal(t, 2, calls)
	require.Len(t, s.Slices, 2)
}

// A server that pages in a loop, or without end, stops the read with an
// error naming the kind, not an endless list.
func TestReadRefusesARepeatedContinueTokenAndEndlessPages(t *testing.T) {
	tests := []struct {
		name  string
		token func(call int) string
		want  string
	}{
		{name: "the same token again", token: func(call int) string { return []string{"p2", "p3", "p2"}[min(call, 2)] },
			want: `list resourceslices.resource.k8s.io: the server returned continue token "p2" again on page 3; it would page forever`},
		{name: "a new token every page", token: func(call int) string { return fmt.Sprintf("p%d", call+2) },
			want: "list resourceslices.resource.k8s.io: more than 2000 pages of 500; refusing to read more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, client := liveclustertest.Connection("default")
			calls := 0
			client.PrependReactor("list", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				return true, &resourceapi.ResourceSliceList{ListMeta: metav1.ListMeta{Continue: tt.token(calls - 1)}}, nil
			})
			_, err := conn.Read(context.Background(), livecluster.Kinds{})
			require.EqualError(t, err, tt.want)
		})
	}
}

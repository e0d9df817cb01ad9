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
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/livecluster/liveclustertest"
)

func TestObjectReadsFilterAndExplainRefusals(t *testing.T) {
	pod := func(ns, name, node string, labels map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + ns + "-" + name)}, Spec: v1.PodSpec{NodeName: node}}
	}
	agent := map[string]string{"app": "agent"}
	conn, client := liveclustertest.Connection("default",
		pod("a", "p", "n1", nil), pod("b", "p", "n2", nil), pod("a", "q", "n1", agent), pod("sys", "agent-n2", "n2", agent),
		&v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e1"}, InvolvedObject: v1.ObjectReference{UID: "uid-a-p"}, Reason: "X"},
		&v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "e2"}, InvolvedObject: v1.ObjectReference{UID: "uid-a-q"}, Reason: "Y"},
	)
	ctx := context.Background()

	_, err := conn.Pod(ctx, "default", "p")
	require.True(t, livecluster.IsNotFound(err), "not found stays the API's answer: %v", err)
	got, err := conn.Pod(ctx, "b", "p")
	require.NoError(t, err)
	require.Equal(t, "n2", got.Spec.NodeName)

	named, err := conn.PodsNamed(ctx, "p")
	require.NoError(t, err)
	require.Len(t, named, 2)

	evs, err := conn.Events(ctx, "a", "uid-a-p")
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "X", evs[0].Reason)

	agents, err := conn.PodsOnNode(ctx, "n2", "app=agent")
	require.NoError(t, err)
	require.Len(t, agents, 1)
	require.Equal(t, "agent-n2", agents[0].Name)

	client.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New(`user "dev" cannot list events`))
	})
	_, err = conn.Events(ctx, "a", "uid-a-p")
	require.ErrorContains(t, err, "not allowed to list events in namespace a: ask an admin to bind the ClusterRole accel-dra-viewer")
}

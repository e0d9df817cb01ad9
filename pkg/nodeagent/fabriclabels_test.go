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

package nodeagent

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/accel-dra/accel-dra/pkg/fabric"
	"github.com/accel-dra/accel-dra/pkg/source"
)

func fabricNode(labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: labels}}
}

func levelConfigMap(t *testing.T, file string) *corev1.ConfigMap {
	t.Helper()
	doc, err := os.ReadFile("../fabric/testdata/" + file)
	require.NoError(t, err)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "accel-dra", Name: "fabric"}, Data: map[string]string{fabric.LevelMapKey: string(doc)}}
}

// nodeLabelsAfter runs one round of the fabric labels on node-1 through
// the fake clientset's server-side apply and returns its labels.
func nodeLabelsAfter(t *testing.T, f FabricOptions, superPod string, superPodErr error, objs ...any) map[string]string {
	t.Helper()
	client := fake.NewClientset()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			_, err := client.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{FieldManager: "kubelet"})
			require.NoError(t, err)
		case *corev1.ConfigMap:
			_, err := client.CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	o := Options{Discovery: source.Options{NodeName: "node-1"}, KubeClient: client, Fabric: f}
	require.NoError(t, applyFabricLabels(context.Background(), o, superPod, superPodErr))
	node, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	return node.Labels
}

func TestTheAgentLabelsItsNodeWithTheFabricItsSourcesKnow(t *testing.T) {
	tests := []struct {
		name     string
		fabric   FabricOptions
		superPod string
		spErr    error
		objs     []any
		want     map[string]string
	}{
		{"an A3 node gets its super pod, other labels stay",
			FabricOptions{Labels: true}, "7", nil,
			[]any{fabricNode(map[string]string{"kubernetes.io/hostname": "node-1"})},
			map[string]string{"kubernetes.io/hostname": "node-1", fabric.LabelSuperPod: "sp-7"}},
		{"a RoCE node gets its leaf from volcano.sh/tor",
			FabricOptions{Labels: true, LeafLabel: "volcano.sh/tor"}, "", nil,
			[]any{fabricNode(map[string]string{"volcano.sh/tor": "tor-3"})},
			map[string]string{"volcano.sh/tor": "tor-3", fabric.LabelLeaf: "tor-3"}},
		{"a node gets its leaf and spine from the admin's ConfigMap",
			FabricOptions{Labels: true, LevelConfigMap: "accel-dra/fabric"}, "", nil,
			[]any{fabricNode(nil), levelConfigMap(t, "levels-good.yaml")},
			map[string]string{fabric.LabelLeaf: "leaf-a", fabric.LabelSpine: "spine-1"}},
		{"a ConfigMap naming a node twice leaves the levels as they are",
			FabricOptions{Labels: true, LevelConfigMap: "accel-dra/fabric"}, "7", nil,
			[]any{fabricNode(map[string]string{fabric.LabelLeaf: "leaf-old"}), levelConfigMap(t, "levels-node-twice.yaml")},
			map[string]string{fabric.LabelLeaf: "leaf-old", fabric.LabelSuperPod: "sp-7"}},
		{"chips that disagree leave the super pod label as it is",
			FabricOptions{Labels: true}, "", errors.New("field accel-dra.dev/superPod: the chips disagree"),
			[]any{fabricNode(map[string]string{fabric.LabelSuperPod: "sp-7"})},
			map[string]string{fabric.LabelSuperPod: "sp-7"}},
		{"the mirror label is written where absent",
			FabricOptions{Labels: true, Mirror: true}, "7", nil,
			[]any{fabricNode(nil)},
			map[string]string{fabric.LabelSuperPod: "sp-7", fabric.MirrorSuperPod: "7"}},
		{"the mirror label another writer set differently stays",
			FabricOptions{Labels: true, Mirror: true}, "7", nil,
			[]any{fabricNode(map[string]string{fabric.MirrorSuperPod: "8"})},
			map[string]string{fabric.LabelSuperPod: "sp-7", fabric.MirrorSuperPod: "8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, nodeLabelsAfter(t, tc.fabric, tc.superPod, tc.spErr, tc.objs...))
		})
	}
}

func TestALabelTheAgentNoLongerWantsIsRemovedAndOthersStay(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	_, err := client.CoreV1().Nodes().Create(ctx, fabricNode(map[string]string{"volcano.sh/tor": "tor-3"}), metav1.CreateOptions{FieldManager: "kubelet"})
	require.NoError(t, err)
	o := Options{Discovery: source.Options{NodeName: "node-1"}, KubeClient: client, Fabric: FabricOptions{Labels: true, LeafLabel: "volcano.sh/tor"}}
	require.NoError(t, applyFabricLabels(ctx, o, "7", nil))
	// The admin takes the node out of its leaf: the agent's leaf label goes.
	node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	delete(node.Labels, "volcano.sh/tor")
	_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{FieldManager: "admin"})
	require.NoError(t, err)
	require.NoError(t, applyFabricLabels(ctx, o, "7", nil))
	node, err = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{fabric.LabelSuperPod: "sp-7"}, node.Labels)
}

func TestFabricOptionsThatCannotWorkAreRefused(t *testing.T) {
	tests := []struct {
		f   FabricOptions
		err string
	}{
		{FabricOptions{Labels: true, SuperPodScope: "hall 2"}, `--superpod-scope: label accel-dra.dev/superpod value "hall 2.sp-0"`},
		{FabricOptions{Labels: true, LeafLabel: "not a key"}, `--fabric-leaf-label "not a key": not a label key`},
		{FabricOptions{Labels: true, LevelConfigMap: "fabric"}, `--fabric-level-configmap "fabric": want namespace/name`},
		{FabricOptions{SuperPodScope: "hall 2"}, ""},
	}
	for _, tc := range tests {
		err := tc.f.check()
		if tc.err == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.err)
	}
}

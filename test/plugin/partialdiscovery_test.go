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

package plugin_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/accel-dra/accel-dra/pkg/nodeagent"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// A mixed node whose npu-smi fails (its recorded output is missing, as a
// tool that errors out) still serves its MLUs: the Cambricon driver
// publishes and /readyz names the failed Ascend discovery. Once npu-smi
// answers, the agent stops with a cause saying so, for the kubelet to
// restart it serving both vendors.
func TestOneVendorsFailedDiscoveryDoesNotStopTheOthersDriver(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := t.TempDir()
	root, tools := filepath.Join(dir, "root"), filepath.Join(dir, "tools")
	require.NoError(t, os.CopyFS(root, os.DirFS("../../pkg/vendors/ascend/testdata/atlas-800t-a2/root")))
	require.NoError(t, os.CopyFS(root, os.DirFS("../../pkg/vendors/cambricon/testdata/mlu370-x8/root")))
	require.NoError(t, os.CopyFS(tools, os.DirFS("../../pkg/vendors/cambricon/testdata/mlu370-x8/cnmon")))
	sockets, err := os.MkdirTemp("", "adra-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	client := newFakeClient(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
	o := nodeagent.Options{
		Discovery:  source.Options{Registry: registry, Root: root, ToolOutput: tools, NodeName: nodeName},
		Plugin:     nodeagent.PluginOptions{RegistrarDir: filepath.Join(sockets, "reg"), PluginDir: filepath.Join(sockets, "plugins"), StateDir: filepath.Join(dir, "state")},
		CDI:        nodeagent.CDIOptions{Dir: filepath.Join(dir, "cdi")},
		KubeClient: client,
		Health:     nodeagent.HealthOptions{Interval: 50 * time.Millisecond},
	}
	addr, done := runWithProbes(ctx, t, o)

	require.Eventually(t, func() bool {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range list.Items {
			require.Equal(t, cambricon.Driver, s.Spec.Driver, "only the Cambricon driver publishes")
		}
		return len(list.Items) > 0
	}, 30*time.Second, 20*time.Millisecond, "the Cambricon driver publishes its slices")

	resp, err := http.Get("http://" + addr.String() + "/readyz")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, string(body), "not serving every vendor: discovering ascend chips: ")
	require.Contains(t, string(body), "npu-smi info")
	select {
	case err := <-done:
		t.Fatalf("the agent stopped while npu-smi still fails: %v", err)
	case <-time.After(200 * time.Millisecond):
	}

	require.NoError(t, os.CopyFS(tools, os.DirFS("../../pkg/vendors/ascend/testdata/atlas-800t-a2/npu-smi")))
	select {
	case err := <-done:
		require.EqualError(t, err, "the chips of ["+string(ascend.Vendor)+"] can be read now: restarting to serve them")
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not notice that npu-smi answers")
	}
}

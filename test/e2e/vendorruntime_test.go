//go:build e2e

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

package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// TestAClaimedContainerUnderTheAscendRuntimeGetsEachChipOnce runs pods
// through a stand-in for ascend-docker-runtime (hack/e2e/ascend-runtime,
// RuntimeClass ascend: it appends /dev/davinciN for every id of
// ASCEND_VISIBLE_DEVICES to the container's spec, as the real runtime
// does) on a node where the runtime is installed. With the default
// --visible-devices-env=auto the agent sets the variable to the runtime's
// neutral empty value in its CDI specs, so the runtime adds nothing and
// the spec lists each chip once, even in a pod that sets the variable
// itself to every chip of the node (CDI env edits replace the pod's
// value); with set, the runtime lists them a second time, which is what
// auto avoids.
func TestAClaimedContainerUnderTheAscendRuntimeGetsEachChipOnce(t *testing.T) {
	real := cluster.RealNode()
	agent := cluster.RealAgent()
	_, err := cluster.Admin.NodeV1().RuntimeClasses().Create(t.Context(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "ascend"}, Handler: "ascend"}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The installer's default path (run_main.sh INSTALL_PATH), which auto
	// looks for under the agent's root.
	marker := filepath.Join(agent.Root, "usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime")
	require.NoError(t, os.MkdirAll(filepath.Dir(marker), 0o755))
	require.NoError(t, os.WriteFile(marker, []byte("#!/bin/sh\n"), 0o755))
	args := cluster.AgentArgs(real)
	restart := func(extra ...string) {
		t.Helper()
		require.NoError(t, cluster.StopAgent(real))
		cluster.SetAgentArgs(real, append(append([]string(nil), args...), extra...))
		require.NoError(t, cluster.RestartAgent(t.Context(), real))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = os.RemoveAll(filepath.Join(agent.Root, "usr/local/Ascend/Ascend-Docker-Runtime"))
		_ = cluster.Admin.NodeV1().RuntimeClasses().Delete(ctx, "ascend", metav1.DeleteOptions{})
		_ = cluster.StopAgent(real)
		cluster.SetAgentArgs(real, args)
		if err := cluster.RestartAgent(ctx, real); err != nil {
			t.Errorf("restarting the agent of %s: %v", real, err)
		}
	})
	restart() // auto, now with the runtime on the node
	ns := newNamespace(t)
	createTemplate(t, template(ns, "two-npus", exactly("npus", "ascend.accel-dra.dev", 2)))

	run := func(name string, env ...corev1.EnvVar) (logs string, davinci map[string]int, devs []device) {
		t.Helper()
		pod := realNodePod(ns, name, "two-npus")
		pod.Spec.RuntimeClassName = ptr.To("ascend")
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, env...)
		pod = waitForPodRunning(t, ns, createPod(t, pod).Name)
		devs = allocated(t, podClaims(t, pod)[0])
		logs = podLogs(t, pod)
		raw, err := cluster.ContainerSpec(pod.Status.ContainerStatuses[0].ContainerID)
		require.NoError(t, err)
		var spec struct {
			Linux struct {
				Devices []struct {
					Path string `json:"path"`
				} `json:"devices"`
			} `json:"linux"`
		}
		require.NoError(t, json.Unmarshal(raw, &spec))
		davinci = map[string]int{}
		for _, d := range spec.Linux.Devices {
			davinci[d.Path]++
		}
		return logs, davinci, devs
	}

	// The pod names every Ascend chip of the node itself.
	var every []string
	for _, c := range realInventory(t).ChipsOf(ascend.Vendor) {
		every = append(every, strconv.Itoa(c.Index))
	}
	require.Greater(t, len(every), 2, "the real node has Ascend chips the claim does not get")
	own := corev1.EnvVar{Name: ascend.EnvVisibleDevices, Value: strings.Join(every, ",")}
	logs, spec, devs := run("auto", own)
	v, _ := envOf(logs, "ASCEND_DOCKER_RUNTIME")
	assert.Equal(t, "True", v, "the runtime stand-in ran")
	got, set := envOf(logs, ascend.EnvVisibleDevices)
	assert.True(t, set, "auto sets ASCEND_VISIBLE_DEVICES where the runtime is installed")
	assert.Empty(t, got, "to the runtime's neutral value, over the pod's own %q", own.Value)
	assert.Equal(t, expectedDevNodes(t, devs), extraDev(logs), "the container has the claimed chips' nodes and no other")
	claimed := map[int]bool{}
	for _, d := range devs {
		c := realChip(t, d)
		claimed[c.Index] = true
		assert.Equal(t, 1, spec["/dev/davinci"+strconv.Itoa(c.Index)], "%s is in the container's spec once: %v", framework.Registry.ChipDeviceName(c), spec)
		u, _ := envOf(logs, cdi.DeviceEnvKey(framework.Registry.ChipDeviceName(c))+"_UUID")
		assert.Equal(t, c.UUID, u, "the chip's facts are in the DRA_DEVICE_* variables")
	}
	for _, c := range realInventory(t).ChipsOf(ascend.Vendor) {
		if !claimed[c.Index] {
			assert.Zero(t, spec["/dev/davinci"+strconv.Itoa(c.Index)], "the runtime injected unclaimed %s named by the pod's own variable: %v", framework.Registry.ChipDeviceName(c), spec)
		}
	}
	deletePod(t, ns, "auto")

	restart("--visible-devices-env=set")
	logs, spec, devs = run("set")
	got, _ = envOf(logs, ascend.EnvVisibleDevices)
	assert.ElementsMatch(t, indicesOf(devs, ascend.Driver), strings.Split(got, ","))
	for _, d := range devs {
		c := realChip(t, d)
		assert.Equal(t, 2, spec["/dev/davinci"+strconv.Itoa(c.Index)], "with set the runtime adds %s again: %v", framework.Registry.ChipDeviceName(c), spec)
	}
}

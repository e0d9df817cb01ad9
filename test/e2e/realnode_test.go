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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
	"github.com/accel-dra/accel-dra/test/e2e/framework"
)

// driverMounts are the read-only host files each driver's CDI spec
// mounts, as far as the fake device tree of the real node has them (no
// /usr/local/sbin/npu-smi there).
var driverMounts = map[string][]string{
	ascend.Driver: {
		"/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/include", "/usr/local/Ascend/driver/version.info",
		"/etc/ascend_install.info", "/usr/local/dcmi", "/usr/local/bin/npu-smi",
	},
	cambricon.Driver: {"/usr/bin/cnmon"},
}

// assertContainerSees checks the probe output of a pod on the real node
// against its allocated devices: /dev holds exactly their device nodes
// and the vendors' shared ones, the visible-devices variables list their
// indices, and the driver files are mounted read-only.
func assertContainerSees(t *testing.T, logs string, devs []device) {
	t.Helper()
	assert.Equal(t, expectedDevNodes(t, devs), extraDev(logs), "/dev beyond runc's standard entries:\n%s", strings.Join(section(logs, "dev"), " "))
	mounts := mountOptions(logs)
	for driver, key := range visibleEnv {
		want := indicesOf(devs, driver)
		got, ok := envOf(logs, key)
		if len(want) == 0 {
			assert.False(t, ok, "%s=%s without a %s device", key, got, driver)
			for _, m := range driverMounts[driver] {
				assert.NotContains(t, mounts, m, "%s mounted without a %s device", m, driver)
			}
			continue
		}
		require.True(t, ok, "no %s in the container's environment:\n%s", key, strings.Join(section(logs, "env"), "\n"))
		assert.ElementsMatch(t, want, strings.Split(got, ","), "%s", key)
		for _, m := range driverMounts[driver] {
			require.Contains(t, mounts, m, "%s is not mounted", m)
			assert.Contains(t, mounts[m], "ro", "%s is mounted %v", m, mounts[m])
		}
	}
	for _, line := range section(logs, "write") {
		assert.True(t, strings.HasSuffix(line, " read-only"), "driver file writable in the container: %s", line)
	}
	driver, ok := envOf(logs, "DRA_DRIVER")
	assert.True(t, ok && driver != "", "DRA_DRIVER is set")
}

// TestAPodOnTheRealNodeSeesExactlyItsAllocatedChips runs real containers
// (containerd + runc, CDI) on the real node with claims for Ascend chips,
// a Cambricon chip and one of each, reads what the container sees
// through the kubelet's log endpoint, then deletes the pod: the kubelet
// has the agent unprepare the claim, which removes its CDI spec.
func TestAPodOnTheRealNodeSeesExactlyItsAllocatedChips(t *testing.T) {
	cases := []struct {
		name      string
		templates []*resourceapi.ResourceClaimTemplate
	}{
		{name: "two Ascend 910B3 chips in one HCCS group", templates: []*resourceapi.ResourceClaimTemplate{
			template("", "npus", exactly("npus", "ascend.accel-dra.dev", 2), resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(names.AttrLinkGroup))}),
		}},
		{name: "one Cambricon MLU370 chip", templates: []*resourceapi.ResourceClaimTemplate{
			template("", "mlu", exactly("mlu", "cambricon.accel-dra.dev", 1, `device.attributes["accel-dra.dev"].model == "MLU370-X8"`)),
		}},
		{name: "one chip of each vendor in two claims", templates: []*resourceapi.ResourceClaimTemplate{
			template("", "npu", exactly("npu", "ascend.accel-dra.dev", 1)),
			template("", "mlu", exactly("mlu", "accelerator.accel-dra.dev", 1, `device.attributes["accel-dra.dev"].vendor == "cambricon"`)),
		}},
		{name: "every chip of the node", templates: []*resourceapi.ResourceClaimTemplate{
			template("", "all", resourceapi.DeviceRequest{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "accelerator.accel-dra.dev", AllocationMode: resourceapi.DeviceAllocationModeAll}}),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			var tmplNames []string
			for _, tmpl := range tc.templates {
				tmpl.Namespace = ns
				createTemplate(t, tmpl)
				tmplNames = append(tmplNames, tmpl.Name)
			}
			pod := createPod(t, realNodePod(ns, "probe", tmplNames...))
			pod = waitForPodRunning(t, ns, pod.Name)
			require.Equal(t, cluster.RealNode(), pod.Spec.NodeName)
			claims := podClaims(t, pod)
			require.Len(t, claims, len(tc.templates))
			var devs []device
			for _, c := range claims {
				devs = append(devs, allocated(t, c)...)
				assert.NotEmpty(t, cdiSpecs(t, c), "claim %s has a CDI spec in %s while its pod runs", c.Name, cluster.CDIDir())
			}
			require.Equal(t, cluster.RealNode(), nodeOf(t, devs))
			logs := podLogs(t, pod)
			t.Logf("devices %v; container /dev: %v", devs, extraDev(logs))
			assertContainerSees(t, logs, devs)

			deletePod(t, ns, pod.Name)
			for _, c := range claims {
				waitForCDISpecsGone(t, c)
				waitForClaimGone(t, c)
			}
		})
	}
}

// TestALegacyPodWithAnAscend910CountRunsOnTheRealNode applies the
// unchanged device-plugin-era pod of demo/manifests/08 (limits
// huawei.com/Ascend910: 1, no claim), pinned to the real node: the
// scheduler makes a claim of the extended-resource DeviceClass
// ascend910.accel-dra.dev for it and the kubelet has the agent prepare
// it, so the container gets one /dev/davinciN.
func TestALegacyPodWithAnAscend910CountRunsOnTheRealNode(t *testing.T) {
	ns := newNamespace(t)
	objs, err := framework.ReadObjects(repoPath("demo", "manifests", "08-legacy-extended-resource.yaml"))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	pod := objs[0]
	pod.SetNamespace(ns)
	require.NoError(t, unstructured.SetNestedField(pod.Object, map[string]any{"kubernetes.io/hostname": cluster.RealNode()}, "spec", "nodeSelector"))
	_, err = cluster.Apply(t.Context(), "kubectl", pod)
	require.NoError(t, err)

	running := waitForPodRunning(t, ns, pod.GetName())
	require.NotNil(t, running.Status.ExtendedResourceClaimStatus, "the scheduler made no claim for huawei.com/Ascend910")
	claims := podClaims(t, running)
	require.Len(t, claims, 1)
	devs := allocated(t, claims[0])
	require.Len(t, devs, 1)
	assertAll(t, devs, ascend.Driver, "Ascend910")
	require.Equal(t, cluster.RealNode(), nodeOf(t, devs))
	assertDemoContainerSees(t, running, devs)

	deletePod(t, ns, pod.GetName())
	waitForCDISpecsGone(t, claims[0])
}

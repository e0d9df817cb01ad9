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

package chart_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/accel-dra/accel-dra/hack/gen-deviceclasses/vendortable"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// chartWithVendor is a copy of the chart whose vendor table and
// accelerator class package vendortable wrote for the code's vendors and
// the test vendor ACME, as make generate would with ACME's line in
// pkg/vendors/all.
func chartWithVendor(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "accel-dra")
	src := chartDir(t)
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	}))
	reg, err := all.Registry().With(vendortest.Acme{})
	require.NoError(t, err)
	table, err := vendortable.Render(reg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, vendortable.Path), table, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deviceclasses", vendortable.AcceleratorClass+".yaml"), vendortable.Accelerator(reg), 0o644))
	return dir
}

// acmeValues enable ACME in a node group of its own beside the default
// ones, with its tool, its driver directory and an extra per-model class.
const acmeValues = `
vendors:
  acme:
    enabled: true
    acmeSmi: /host/usr/bin/acme-smi
    hostPaths: [{path: /usr/lib/acme, type: Directory}]
nodeGroups:
- {name: ascend, vendors: [ascend], nodeSelector: {accelerator: huawei-ascend}}
- {name: cambricon, vendors: [cambricon], nodeSelector: {accelerator: cambricon-mlu}}
- {name: acme, vendors: [acme], nodeSelector: {accelerator: acme-xpu}}
modelDeviceClasses:
  extra: [{vendor: acme, model: ACME-2}]
`

const acmeDriver = vendortest.Driver

// The recipe in docs/architecture.md ("How to add a vendor"): the
// vendor's package and its line in pkg/vendors/all, then make generate,
// which writes the chart's vendor table. With nothing else of the chart
// changed, the vendor gets its node group's DaemonSet, its RBAC, the
// admission policy's and the webhook's rules.
func TestAThirdVendorInTheVendorTableIsAVendorOfTheChart(t *testing.T) {
	out, err := helm(t, "template", release, chartWithVendor(t), "--namespace", namespace, "--values", valuesFile(t, acmeValues))
	require.NoError(t, err)
	r, err := decodeRendering(out)
	require.NoError(t, err)

	t.Run("its node group's DaemonSet", func(t *testing.T) {
		var ds *appsv1.DaemonSet
		for _, d := range objectsOf[*appsv1.DaemonSet](r) {
			if d.Name == fullname+"-kubeletplugin-acme" {
				ds = d
			}
		}
		require.NotNil(t, ds, "a DaemonSet for node group acme")
		require.Len(t, objectsOf[*appsv1.DaemonSet](r), 3)
		ctr := agentContainer(t, ds)
		require.Equal(t, args(commonArgs, realArgs("acme", "Whole", "auto", "--acme-smi=/host/usr/bin/acme-smi")), ctr.Args)
		require.Equal(t, mounts(kubeletMounts, discoveryMounts, map[string]hostMount{
			"/var/lib/kubelet/plugins/" + acmeDriver: {"/var/lib/kubelet/plugins/" + acmeDriver, corev1.HostPathDirectoryOrCreate, false},
			"/host/usr/bin/acme-smi":                 {"/usr/bin/acme-smi", corev1.HostPathFile, true},
			"/host/usr/lib/acme":                     {"/usr/lib/acme", corev1.HostPathDirectory, true},
		}), hostMountsOf(t, ds))
		require.Equal(t, "acme-xpu", ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0])
	})

	t.Run("its RBAC", func(t *testing.T) {
		var names []string
		for _, rule := range r.clusterRole(t).Rules {
			if slices.Contains(rule.Resources, "resourceclaims/driver") {
				names = rule.ResourceNames
			}
		}
		require.Equal(t, []string{acmeDriver, ascendDriver, cambriconDriver}, names)
	})

	t.Run("the admission policy lets the agent write its slices", func(t *testing.T) {
		cp := compilePolicy(t, r.policy(t))
		agent := &user.DefaultInfo{Name: "system:serviceaccount:" + namespace + ":" + fullname + "-kubeletplugin",
			Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}}}
		for driver, allowed := range map[string]bool{acmeDriver: true, ascendDriver: true, "gpu.example.com": false} {
			matched, denied := cp.admit(t, request{user: agent, operation: admission.Create, object: of(slice("node-a"), driver, "node-a")})
			require.True(t, matched)
			require.Equal(t, allowed, len(denied) == 0, "a slice of %s: %v", driver, denied)
		}
	})

	t.Run("the webhook gets its configs", func(t *testing.T) {
		vwc := r.webhookConfiguration(t)
		for _, obj := range []string{
			claimWith(opaqueConfig(acmeDriver, vendortest.ConfigKind, "")),
			templateWith(opaqueConfig(acmeDriver, vendortest.ConfigKind, "")),
			classWith(opaqueConfig(acmeDriver, vendortest.ConfigKind, "")),
		} {
			require.True(t, sentBy(t, vwc, obj), obj)
		}
		require.False(t, sentBy(t, vwc, claimWith(opaqueConfig("gpu.example.com", "GpuConfig", ""))))
	})

	t.Run("its classes", func(t *testing.T) {
		classes := r.deviceClasses()
		doc, ok := classes["acme-2.accel-dra.dev"]
		require.True(t, ok, "the extra class of ACME-2")
		dc := doc.object.(*resourcev1.DeviceClass)
		require.True(t, strings.HasPrefix(dc.Spec.Selectors[0].CEL.Expression, `device.driver == "`+acmeDriver+`"`), dc.Spec.Selectors[0].CEL.Expression)
		dc = classes[vendortable.AcceleratorClass].object.(*resourcev1.DeviceClass)
		require.Contains(t, dc.Spec.Selectors[0].CEL.Expression, `"`+acmeDriver+`"`, "a whole chip of any vendor")
	})
}

// A vendor of the table that the values do not enable is off, so the
// default values render with it unchanged; enabled, it needs a node group
// and, on real hardware, its tool's path.
func TestAThirdVendorIsOffUntilEnabledAndThenNeedsItsGroupAndTool(t *testing.T) {
	chart := chartWithVendor(t)
	template := func(values string) (string, error) {
		return helm(t, "template", release, chart, "--namespace", namespace, "--values", valuesFile(t, values))
	}
	out, err := template("")
	require.NoError(t, err)
	r, err := decodeRendering(out)
	require.NoError(t, err)
	require.Len(t, objectsOf[*appsv1.DaemonSet](r), 2)
	_, err = template("vendors: {acme: {enabled: true, acmeSmi: /host/usr/bin/acme-smi}}")
	require.ErrorContains(t, err, "vendors.acme is enabled but no nodeGroups entry serves it")
	_, err = template("vendors: {acme: {enabled: true}}\nnodeGroups: [{name: acme, vendors: [acme, ascend, cambricon]}]")
	require.ErrorContains(t, err, "vendors.acme.acmeSmi: the path of acme-smi on the node under /host")
	_, err = template("vendors: {acme: {enabled: true}}\nnodeGroups: [{name: acme, vendors: [acme, ascend, cambricon]}]\nsimulation: {profile: mixed-910b-mlu370}")
	require.NoError(t, err, "a simulated node runs no tool")
	_, err = template("modelDeviceClasses: {extra: [{vendor: acme, model: ACME-1, template: half}]}")
	require.ErrorContains(t, err, `modelDeviceClasses.extra: vendor "acme" has no partitions, so no template "half"`)
}

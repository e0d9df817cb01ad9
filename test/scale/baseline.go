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

package scale

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The baseline is the scheduler_perf test driver's shape, as kube-scheduler's
// own DRA benchmark SchedulingWithResourceClaimTemplate publishes and
// claims it (k8s.io/kubernetes v1.37.2,
// test/integration/scheduler_perf/dra/performance-config.yaml, with
// templates/resourceslice-basic-devices.yaml, deviceclass.yaml,
// resourceclaimtemplate.yaml and pod-with-claim-template.yaml): one
// ResourceSlice per node with 10 devices of 13 attributes and 2
// capacities (numDevices 10, numPCIRoots 2), a class selecting the driver
// and a template of one request of that class without selectors.
const (
	BaselineDriver   = "test-driver.cdi.k8s.io"
	BaselineClass    = "test-class"
	BaselineTemplate = "test-claim-template"
	baselineDevices  = 10
	baselinePCIRoots = 2
)

// BaselineSlice is templates/resourceslice-basic-devices.yaml for node
// name, the i-th node.
func BaselineSlice(name string, i int) *resourceapi.ResourceSlice {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("resourceslice-%d", i)},
		Spec: resourceapi.ResourceSliceSpec{
			Pool:     resourceapi.ResourcePool{Name: fmt.Sprintf("resourceslice-%d", i), Generation: 1, ResourceSliceCount: 1},
			Driver:   BaselineDriver,
			NodeName: ptr.To(name),
		},
	}
	for d := range baselineDevices {
		root := d % baselinePCIRoots
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("basic-device-%d", d),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"driver":                          str("xe"),
				"driverVersion":                   {VersionValue: ptr.To("1.2.3")},
				"resource.k8s.io/pciRoot":         str(fmt.Sprint(root)),
				"family":                          str("Arc Pro B-Series"),
				"health":                          str("Healthy"),
				"model":                           str("B60"),
				"pciAddress":                      str(fmt.Sprintf("0000:0%d:00.0", d)),
				"pciId":                           str("0xe211"),
				"pciRoot":                         str(fmt.Sprintf("0%d", root)),
				"resource.kubernetes.io/pciBusID": str(fmt.Sprintf("0000:0%d:00.0", d)),
				"resource.kubernetes.io/pciRoot":  str(fmt.Sprintf("pci0000:0%d", root)),
				"sriov":                           {BoolValue: ptr.To(true)},
				"type":                            str("gpu"),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory":     {Value: resource.MustParse("24480Mi")},
				"millicores": {Value: resource.MustParse("1k")},
			},
		})
	}
	return s
}

// BaselineWorkload is deviceclass.yaml and resourceclaimtemplate.yaml
// (numRequests 1, no selectors, no constraints).
func BaselineWorkload() Workload {
	return Workload{
		Classes: []*resourceapi.DeviceClass{{
			ObjectMeta: metav1.ObjectMeta{Name: BaselineClass},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + BaselineDriver + `"`},
			}}},
		}},
		Templates: []*resourceapi.ResourceClaimTemplate{{
			ObjectMeta: metav1.ObjectMeta{Name: BaselineTemplate},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "req-0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: BaselineClass}}},
			}}},
		}},
	}
}

// CreateBaselineSlices creates the baseline slice of every node, as
// scheduler_perf's createAny does: directly, without a controller.
func CreateBaselineSlices(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node) error {
	idx := make([]int, len(nodes))
	for i := range idx {
		idx[i] = i
	}
	return parallel(ctx, idx, func(ctx context.Context, i int) error {
		if _, err := client.ResourceV1().ResourceSlices().Create(ctx, BaselineSlice(nodes[i].Name, i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the baseline ResourceSlice of node %s: %w", nodes[i].Name, err)
		}
		return nil
	})
}

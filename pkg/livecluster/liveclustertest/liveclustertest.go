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

// Package liveclustertest gives the views' tests a livecluster.Connection
// backed by client-go's fake clientset, with discovery answering as a 1.37
// API server does for resource.k8s.io.
package liveclustertest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
)

// PodGroups is Volcano's PodGroup resource, which the fake dynamic client
// serves.
var PodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// Connection is a connection to a fake cluster holding objs, in namespace:
// the typed objects in the clientset, the unstructured ones (Volcano's
// PodGroups) in the dynamic client. The clientset is returned too, for
// reactors (errors, counted requests).
func Connection(namespace string, objs ...runtime.Object) (*livecluster.Connection, *fake.Clientset) {
	var typed, other []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			other = append(other, o)
		} else {
			typed = append(typed, o)
		}
	}
	c := fake.NewClientset(typed...)
	SetResourceVersions(c, "v1", "v1beta2", "v1beta1")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{PodGroups: "PodGroupList"}, other...)
	return &livecluster.Connection{Client: c, Dynamic: dyn, Namespace: namespace, Server: "https://fake.test"}, c
}

// SetResourceVersions makes discovery serve resource.k8s.io in these
// versions, the first preferred; none serves no such group.
func SetResourceVersions(c *fake.Clientset, versions ...string) {
	d := c.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{{GroupVersion: "v1"}}
	for _, v := range versions {
		d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: "resource.k8s.io/" + v})
	}
}

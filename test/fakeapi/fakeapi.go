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

// Package fakeapi is client-go's fake clientset with the API server
// behaviours the upstream resourceslice controller depends on, for the
// tests that run that controller without an API server (test/plugin,
// test/scale).
package fakeapi

import (
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// NewClient is the fake clientset with the two API server behaviours
// the resourceslice controller depends on and the fake lacks: generated
// names, and field selectors on ResourceSlices (spec.driver,
// spec.nodeName, spec.pool.name). Without them two drivers on one node
// would collide on the empty name, or each see and take over the other's
// slices.
func NewClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := action.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj.SetName(obj.GetGenerateName() + rand.String(5))
		}
		return false, nil, nil
	})
	gvr := resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	gvk := resourceapi.SchemeGroupVersion.WithKind("ResourceSlice")
	c.PrependReactor("list", "resourceslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sel := action.(k8stesting.ListAction).GetListRestrictions().Fields
		obj, err := c.Tracker().List(gvr, gvk, "")
		if err != nil || sel == nil || sel.Empty() {
			return true, obj, err
		}
		list := obj.(*resourceapi.ResourceSliceList)
		var keep []resourceapi.ResourceSlice
		for _, s := range list.Items {
			if sel.Matches(sliceFields(&s)) {
				keep = append(keep, s)
			}
		}
		list.Items = keep
		return true, list, nil
	})
	c.PrependWatchReactor("resourceslices", func(action k8stesting.Action) (bool, watch.Interface, error) {
		sel := action.(k8stesting.WatchAction).GetWatchRestrictions().Fields
		w, err := c.Tracker().Watch(gvr, "")
		if err != nil || sel == nil || sel.Empty() {
			return true, w, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			s, ok := e.Object.(*resourceapi.ResourceSlice)
			return e, !ok || sel.Matches(sliceFields(s))
		}), nil
	})
	return c
}

func sliceFields(s *resourceapi.ResourceSlice) fields.Set {
	set := fields.Set{"spec.driver": s.Spec.Driver, "spec.pool.name": s.Spec.Pool.Name}
	if s.Spec.NodeName != nil {
		set["spec.nodeName"] = *s.Spec.NodeName
	}
	return set
}

// CheapStatusApply answers the claim status applies of the node agent's
// background status writer from the tracker, without the fake's
// server-side apply: that runs a field manager with a REST mapper rebuilt
// per call (2.2 MB per call, docs/benchmarks.md), which would make the
// fake, not the agent, what a prepare benchmark measures. The agent's side
// of the apply (building and sending it) is unchanged.
func CheapStatusApply(c *fake.Clientset) {
	c.PrependReactor("patch", "resourceclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(action.GetResource(), action.GetNamespace(), action.(k8stesting.PatchAction).GetName())
		return true, obj, err
	})
}

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

package livecluster

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kinds says which objects Read lists. ResourceSlices are always read.
type Kinds struct {
	Claims, Classes, Pods, Nodes bool
}

// Snapshot is the cluster's DRA state at one moment, as the views see it.
// Lists are read one after another, so an object that changed in between
// may show in two states; the views are for people, not for decisions.
type Snapshot struct {
	Slices  []resourceapi.ResourceSlice
	Claims  []resourceapi.ResourceClaim
	Classes []resourceapi.DeviceClass
	Pods    []v1.Pod
	Nodes   []v1.Node
}

// APIVersion is the resource.k8s.io version the views read and the
// upstream allocator they run understands.
const APIVersion = "v1"

// Read lists the ResourceSlices and the kinds asked for, cluster-wide (a
// claim on a node can belong to any namespace), in pages of 500 as kubectl
// does. First it checks that the cluster serves resource.k8s.io/v1 and
// prefers no newer version: slices written in a newer version can carry
// fields this build would silently drop, and the allocator would then
// answer wrongly.
func (c *Connection) Read(ctx context.Context, kinds Kinds) (*Snapshot, error) {
	if err := c.checkResourceAPI(); err != nil {
		return nil, err
	}
	s := &Snapshot{}
	err := list(ctx, c, "list resourceslices.resource.k8s.io", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.Client.ResourceV1().ResourceSlices().List(ctx, o)
	}, func(o runtime.Object) { s.Slices = append(s.Slices, o.(*resourceapi.ResourceSliceList).Items...) })
	if err != nil {
		return nil, err
	}
	if kinds.Claims {
		err = list(ctx, c, "list resourceclaims.resource.k8s.io at cluster scope", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.Client.ResourceV1().ResourceClaims("").List(ctx, o)
		}, func(o runtime.Object) { s.Claims = append(s.Claims, o.(*resourceapi.ResourceClaimList).Items...) })
		if err != nil {
			return nil, err
		}
	}
	if kinds.Classes {
		err = list(ctx, c, "list deviceclasses.resource.k8s.io", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.Client.ResourceV1().DeviceClasses().List(ctx, o)
		}, func(o runtime.Object) { s.Classes = append(s.Classes, o.(*resourceapi.DeviceClassList).Items...) })
		if err != nil {
			return nil, err
		}
	}
	if kinds.Pods {
		err = list(ctx, c, "list pods at cluster scope", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.Client.CoreV1().Pods("").List(ctx, o)
		}, func(o runtime.Object) { s.Pods = append(s.Pods, o.(*v1.PodList).Items...) })
		if err != nil {
			return nil, err
		}
	}
	if kinds.Nodes {
		err = list(ctx, c, "list nodes", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.Client.CoreV1().Nodes().List(ctx, o)
		}, func(o runtime.Object) { s.Nodes = append(s.Nodes, o.(*v1.NodeList).Items...) })
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// listFunc lists one page of a kind.
type listFunc func(context.Context, metav1.ListOptions) (runtime.Object, error)

// maxListPages bounds the pages of one kind: 2000 pages of 500 are a
// million objects, more than any cluster has of one kind. A server (or a
// proxy in front of it) that never ends a list stops the view with an
// error instead of growing its memory until it is killed.
const maxListPages = 2000

// list pages through one kind, 500 objects a request as kubectl does, so a
// large cluster is not one huge response. A continue token the server
// already gave, which would page in a loop, and more than maxListPages
// pages are errors naming the kind.
func list(ctx context.Context, c *Connection, what string, fn listFunc, add func(runtime.Object)) error {
	opts := metav1.ListOptions{Limit: 500}
	seen := map[string]bool{}
	for page := 1; ; page++ {
		obj, err := fn(ctx, opts)
		if err != nil {
			return c.explain(what, err)
		}
		add(obj)
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		next := lm.GetContinue()
		switch {
		case next == "":
			return nil
		case seen[next]:
			return fmt.Errorf("%s: the server returned continue token %.40q again on page %d; it would page forever", what, next, page)
		case page >= maxListPages:
			return fmt.Errorf("%s: more than %d pages of %d; refusing to read more", what, maxListPages, opts.Limit)
		}
		seen[next] = true
		opts.Continue = next
	}
}

// checkResourceAPI refuses a cluster without resource.k8s.io/v1, and one
// whose preferred version is newer than what this build reads.
func (c *Connection) checkResourceAPI() error {
	groups, err := c.Client.Discovery().ServerGroups()
	if err != nil {
		return c.explain("read the API groups the cluster serves", err)
	}
	for _, g := range groups.Groups {
		if g.Name != resourceapi.GroupName {
			continue
		}
		served := slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == APIVersion })
		if !served {
			return fmt.Errorf("the cluster at %s does not serve %s/%s, which DRA views need (Kubernetes 1.34 or newer)", c.Server, resourceapi.GroupName, APIVersion)
		}
		if pref := g.PreferredVersion.Version; pref != APIVersion && newerVersion(pref) {
			return fmt.Errorf("the cluster at %s prefers %s/%s, newer than the %s this accel-dra reads: ResourceSlices may carry fields it would drop; use the accel-dra release for this Kubernetes version", c.Server, resourceapi.GroupName, pref, APIVersion)
		}
		return nil
	}
	return fmt.Errorf("the cluster at %s does not serve the %s API group: DRA needs Kubernetes 1.34 or newer", c.Server, resourceapi.GroupName)
}

// newerVersion says whether a preferred version of resource.k8s.io is a
// later GA version than v1 (v2, v3, ...). Alpha and beta versions are
// never preferred over a GA one by the API server.
func newerVersion(v string) bool {
	var major int
	var rest string
	n, _ := fmt.Sscanf(v, "v%d%s", &major, &rest)
	return n >= 1 && major > 1 && rest == ""
}

// IsNotFound says whether err is the API server's not-found answer.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

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

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Nodes lists the cluster's Nodes alone, for views of node labels (the
// fabric) that need no DRA object.
func (c *Connection) Nodes(ctx context.Context) ([]v1.Node, error) {
	var nodes []v1.Node
	err := list(ctx, c, "list nodes", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.Client.CoreV1().Nodes().List(ctx, o)
	}, func(o runtime.Object) { nodes = append(nodes, o.(*v1.NodeList).Items...) })
	return nodes, err
}

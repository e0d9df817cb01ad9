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
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The CLI's cluster views (accel-dra chips, accel-dra why) list these
// kinds cluster-wide (pkg/livecluster) and read events; their error for a
// refused list names the role accel-dra-viewer. The e2e tier runs chips as
// a user bound to it.
func TestTheViewerRoleGrantsReadingWhatTheViewsReadAndIsBoundToNobody(t *testing.T) {
	// No watch: the views list once per run.
	read := []string{"get", "list"}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices", "resourceclaims", "deviceclasses"}, Verbs: read},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaimtemplates"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"podgroups"}, Verbs: []string{"get"}},
	}
	for _, tc := range []struct {
		name   string
		values string
		// role is the ClusterRole's name; "" for none.
		role string
	}{
		{name: "by default", values: "", role: "accel-dra-viewer"},
		{name: "renamed", values: "viewerRole:\n  name: chips-reader\n", role: "chips-reader"},
		{name: "turned off", values: "viewerRole:\n  enabled: false\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderValues(t, "viewer role "+tc.name, tc.values)
			roles := r.viewerRoles()
			for _, b := range objectsOf[*rbacv1.ClusterRoleBinding](r) {
				for _, role := range roles {
					require.NotEqual(t, role.Name, b.RoleRef.Name, "the chart binds the viewer role to nobody")
				}
			}
			if tc.role == "" {
				require.Empty(t, roles)
				return
			}
			require.Len(t, roles, 1)
			require.Equal(t, tc.role, roles[0].Name)
			require.Equal(t, want, roles[0].Rules)
		})
	}
}

func TestAnEmptyViewerRoleNameStopsTheRendering(t *testing.T) {
	_, err := helmTemplate(t, "viewerRole:\n  name: \"\"\n")
	require.ErrorContains(t, err, "/viewerRole/name': minLength")
}

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

package webhook_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// shareClaim is a v1 claim (or template) of one request of class with
// the capacity requests in YAML flow style, exactly or as the first of
// firstAvailable.
func shareClaim(kind, class, capacity string, sub bool) string {
	indent := "    "
	head := "apiVersion: resource.k8s.io/v1\nkind: " + kind + "\nmetadata: {name: share, namespace: default}\nspec:\n"
	if kind == "ResourceClaimTemplate" {
		head += "  spec:\n"
		indent += "  "
	}
	way := fmt.Sprintf("deviceClassName: %s\n%s    capacity: {requests: %s}\n", class, indent, capacity)
	if sub {
		return head + indent[2:] + "devices:\n" + indent + "requests:\n" + indent + "- name: npu\n" + indent + "  firstAvailable:\n" + indent + "  - name: vnpu\n" + indent + "    " + way
	}
	return head + indent[2:] + "devices:\n" + indent + "requests:\n" + indent + "- name: npu\n" + indent + "  exactly:\n" + indent + "    " + way
}

// TestASizeNoTemplateHasIsRefusedWhereTheClassNamesTheModel: a claim whose
// DeviceClass selects one model whose Shared chips make each share a vNPU
// template may ask only for the templates' units or the whole chip's, and
// not for cores or memory beside them; a generic class's claim is left to
// the slices' request policy, and a model of no such templates to the
// accounting shares.
func TestASizeNoTemplateHasIsRefusedWhereTheClassNamesTheModel(t *testing.T) {
	const b3 = "1 (vir05_1c_16g: 5 cores, 16384Mi), 2 (vir10_3c_32g: 10 cores, 32768Mi) or 4 (the whole chip)"
	tests := []struct {
		name   string
		object string
		// denied is what the message says; empty: allowed.
		denied []string
	}{
		{name: "a template's units", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/shareUnits: "2"}`, false)},
		{name: "the whole chip's units", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/shareUnits: "4"}`, false)},
		{name: "memory alone: an accounting share, where vNPUs are off", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/memory: 24Gi}`, false)},
		{name: "a generic class: the slices' request policy rounds it", object: shareClaim("ResourceClaim", "ascend.accel-dra.dev", `{accel-dra.dev/shareUnits: "3"}`, false)},
		{name: "a model whose templates are no multiples of one unit", object: shareClaim("ResourceClaim", "ascend910a.accel-dra.dev", `{accel-dra.dev/shareUnits: "3"}`, false)},
		{name: "units no template has", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/shareUnits: "3"}`, false),
			denied: []string{`ResourceClaim.resource.k8s.io "share" is invalid: spec.devices.requests[0].exactly.capacity.requests[accel-dra.dev/shareUnits]: Invalid value: "3": ` +
				"class ascend910b3.accel-dra.dev: a share of a Shared Ascend910B3 chip is one of its templates, in units: " + b3}},
		{name: "a fraction of a unit", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/shareUnits: 500m}`, false),
			denied: []string{`Invalid value: "500m"`, "in units: " + b3}},
		{name: "memory beside the units", object: shareClaim("ResourceClaim", "ascend910b3.accel-dra.dev", `{accel-dra.dev/shareUnits: "1", accel-dra.dev/memory: 16Gi}`, false),
			denied: []string{`spec.devices.requests[0].exactly.capacity.requests[accel-dra.dev/memory]: Invalid value: "16Gi": ` +
				"class ascend910b3.accel-dra.dev: a share of a Shared Ascend910B3 chip asks for accel-dra.dev/shareUnits only; its cores and memory follow from them"}},
		{name: "a subrequest of a template, 310P3", object: shareClaim("ResourceClaimTemplate", "ascend310p3.accel-dra.dev", `{accel-dra.dev/shareUnits: "3"}`, true),
			denied: []string{`ResourceClaimTemplate.resource.k8s.io "share" is invalid: spec.spec.devices.requests[0].firstAvailable[0].capacity.requests[accel-dra.dev/shareUnits]: Invalid value: "3"`,
				"a share of a Shared Ascend310P3 chip is one of its templates, in units: 1 (vir02_1c: 2 cores, 6144Mi), 2 (vir04_3c: 4 cores, 12288Mi) or 4 (the whole chip)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := webhook.Review(context.Background(), configs, admissionRequest(t, admissionv1.Create, tt.object, ""))
			if len(tt.denied) == 0 {
				require.True(t, resp.Allowed, "%v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			for _, d := range tt.denied {
				require.Contains(t, resp.Result.Message, d)
			}
		})
	}
}

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
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claim is a ResourceClaim of apiVersion with a request "npus" (exactly)
// and a request "mlus" with the subrequests "mlu590" and "mlu370", and the
// given spec.devices.config entries (YAML, indented for the list).
func claim(apiVersion, config string) string {
	npus := "    - name: npus\n      exactly:\n        deviceClassName: ascend.accel-dra.dev\n        count: 2\n"
	if apiVersion == "resource.k8s.io/v1beta1" {
		npus = "    - name: npus\n      deviceClassName: ascend.accel-dra.dev\n      count: 2\n"
	}
	return fmt.Sprintf(`apiVersion: %s
kind: ResourceClaim
metadata:
  name: train
  namespace: default
spec:
  devices:
    requests:
%s    - name: mlus
      firstAvailable:
      - name: mlu590
        deviceClassName: cambricon.accel-dra.dev
      - name: mlu370
        deviceClassName: cambricon.accel-dra.dev
    config:
%s`, apiVersion, npus, config)
}

// template is a ResourceClaimTemplate with the same requests.
func template(config string) string {
	return `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: serve
  namespace: ml
spec:
  spec:
    devices:
      requests:
      - name: npus
        exactly:
          deviceClassName: ascend.accel-dra.dev
      config:
` + indent(config, "  ")
}

func class(config string) string {
	return `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: ascend-hccl.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "ascend.accel-dra.dev"
  config:
` + indent(config, "  ")
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// cfg is one config entry for driver with the given requests (YAML flow
// list, "" for none) and parameters (YAML mapping lines after apiVersion).
func cfg(driver, requests, kind, rest string) string {
	s := "    - "
	if requests != "" {
		s += "requests: " + requests + "\n      "
	}
	s += "opaque:\n        driver: " + driver + "\n        parameters:\n          apiVersion: accel-dra.dev/v1alpha1\n          kind: " + kind + "\n"
	for _, l := range strings.Split(rest, "\n") {
		if l != "" {
			s += "          " + l + "\n"
		}
	}
	return s
}

const (
	ascend    = "ascend.accel-dra.dev"
	cambricon = "cambricon.accel-dra.dev"
	envHCCL   = "env:\n  HCCL_CONNECT_TIMEOUT: \"1200\""

	envNameMsg   = `a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')`
	requestMsg   = `must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`
	decodeSuffix = `(want apiVersion accel-dra.dev/v1alpha1, kind AscendConfig)`
)

func TestTheWebhookAllowsGoodConfigsAndDeniesBadOnesWithThePluginsMessages(t *testing.T) {
	ts := startServer(t)
	type cause struct{ field, message string }
	tests := []struct {
		name   string
		object string
		// message is the whole status message of a denial; empty: allowed.
		message string
		causes  []cause
	}{
		{
			name:   "a claim with a good Ascend config for one request is allowed",
			object: claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", envHCCL)),
		},
		{
			name: "a claim with good configs for both drivers, a subrequest and all requests is allowed",
			object: claim("resource.k8s.io/v1", cfg(ascend, "", "AscendConfig", envHCCL)+
				cfg(cambricon, "[mlus/mlu590, mlus]", "CambriconConfig", "env:\n  CNCL_DEBUG: WARN")),
		},
		{
			name: "another driver's config is not looked at, even when it would not decode for us",
			object: claim("resource.k8s.io/v1", cfg("gpu.example.com", "[nonexistent]", "GpuConfig", "envs: {}")+
				"    - opaque:\n        driver: nic.example.com\n        parameters: {anything: [1, 2]}\n"),
		},
		{
			name:    "an unknown field is denied naming it",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", "envs:\n  A: \"1\"")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs" ` + decodeSuffix,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", `decoding: strict decoding error: unknown field "envs" ` + decodeSuffix}},
		},
		{
			name:    "the other vendor's kind is denied",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "", "CambriconConfig", "")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: kind CambriconConfig is not for this driver: want AscendConfig`,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", "kind CambriconConfig is not for this driver: want AscendConfig"}},
		},
		{
			name:    "a variable the driver sets itself is denied",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", "env:\n  ASCEND_VISIBLE_DEVICES: 0-7")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: AscendConfig: env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices`,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", "AscendConfig: env[ASCEND_VISIBLE_DEVICES]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices"}},
		},
		{
			name:    "a NUL byte in a value, which the node agent refuses at prepare, is denied at apply",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", "env:\n  HCCL_IF_IP: \"10.0.0.1\\0\"")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: AscendConfig: env[HCCL_IF_IP]: Invalid value: "10.0.0.1\x00": must not contain a NUL byte`,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", `AscendConfig: env[HCCL_IF_IP]: Invalid value: "10.0.0.1\x00": must not contain a NUL byte`}},
		},
		{
			name:    "a bad variable name is denied",
			object:  claim("resource.k8s.io/v1", cfg(cambricon, "[mlus]", "CambriconConfig", "env:\n  1X: x")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: CambriconConfig: env[1X]: Invalid value: "1X": ` + envNameMsg,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", `CambriconConfig: env[1X]: Invalid value: "1X": ` + envNameMsg}},
		},
		{
			name:    "a config for a request the claim does not have is denied",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "[npus, nups]", "AscendConfig", "")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].requests[1]: Invalid value: "nups": ` + requestMsg,
			causes:  []cause{{"spec.devices.config[0].requests[1]", `Invalid value: "nups": ` + requestMsg}},
		},
		{
			name:    "a config for a subrequest the request does not have is denied",
			object:  claim("resource.k8s.io/v1", cfg(cambricon, "[mlus/mlu270, npus/x]", "CambriconConfig", "")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: [spec.devices.config[0].requests[0]: Invalid value: "mlus/mlu270": ` + requestMsg + `, spec.devices.config[0].requests[1]: Invalid value: "npus/x": ` + requestMsg + `]`,
			causes: []cause{
				{"spec.devices.config[0].requests[0]", `Invalid value: "mlus/mlu270": ` + requestMsg},
				{"spec.devices.config[0].requests[1]", `Invalid value: "npus/x": ` + requestMsg},
			},
		},
		{
			name: "every bad field is listed, not only the first",
			object: claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", envHCCL)+
				cfg(ascend, "[gpus]", "AscendConfig", "env:\n  DRA_CLAIM_UID: x\n  1X: \"y\"")+
				cfg("gpu.example.com", "", "GpuConfig", "")+
				cfg(cambricon, "", "AscendConfig", "")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: [` +
				`spec.devices.config[1].requests[0]: Invalid value: "gpus": ` + requestMsg + `, ` +
				`spec.devices.config[1].opaque.parameters: AscendConfig: [env[1X]: Invalid value: "1X": ` + envNameMsg + `, env[DRA_CLAIM_UID]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices], ` +
				`spec.devices.config[3].opaque.parameters: kind AscendConfig is not for this driver: want CambriconConfig]`,
			causes: []cause{
				{"spec.devices.config[1].requests[0]", `Invalid value: "gpus": ` + requestMsg},
				{"spec.devices.config[1].opaque.parameters", `AscendConfig: [env[1X]: Invalid value: "1X": ` + envNameMsg + `, env[DRA_CLAIM_UID]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices]`},
				{"spec.devices.config[3].opaque.parameters", "kind AscendConfig is not for this driver: want CambriconConfig"},
			},
		},
		{
			name:   "a v1beta2 claim is read in its own version",
			object: claim("resource.k8s.io/v1beta2", cfg(ascend, "[npus]", "AscendConfig", envHCCL)),
		},
		{
			name:    "a bad v1beta2 claim is denied",
			object:  claim("resource.k8s.io/v1beta2", cfg(ascend, "[mlus/mlu590]", "AscendConfig", "envs: {}")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs" ` + decodeSuffix,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", `decoding: strict decoding error: unknown field "envs" ` + decodeSuffix}},
		},
		{
			name:   "a v1beta1 claim is read in its own version",
			object: claim("resource.k8s.io/v1beta1", cfg(ascend, "[npus]", "AscendConfig", envHCCL)+cfg(cambricon, "[mlus/mlu370]", "CambriconConfig", "")),
		},
		{
			name:    "a bad v1beta1 claim is denied",
			object:  claim("resource.k8s.io/v1beta1", cfg(cambricon, "[npu]", "CambriconConfig", "env:\n  CAMBRICON_VISIBLE_DEVICES: all")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: [spec.devices.config[0].requests[0]: Invalid value: "npu": ` + requestMsg + `, spec.devices.config[0].opaque.parameters: CambriconConfig: env[CAMBRICON_VISIBLE_DEVICES]: Forbidden: CAMBRICON_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices]`,
			causes: []cause{
				{"spec.devices.config[0].requests[0]", `Invalid value: "npu": ` + requestMsg},
				{"spec.devices.config[0].opaque.parameters", "CambriconConfig: env[CAMBRICON_VISIBLE_DEVICES]: Forbidden: CAMBRICON_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices"},
			},
		},
		{
			name:   "a template with a good config is allowed",
			object: template(cfg(ascend, "[npus]", "AscendConfig", envHCCL)),
		},
		{
			name:    "a template with a bad config is denied with the template's paths",
			object:  template(cfg(ascend, "[mlus]", "AscendConfig", "envs: {}")),
			message: `ResourceClaimTemplate.resource.k8s.io "serve" is invalid: [spec.spec.devices.config[0].requests[0]: Invalid value: "mlus": ` + requestMsg + `, spec.spec.devices.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs" ` + decodeSuffix + `]`,
			causes: []cause{
				{"spec.spec.devices.config[0].requests[0]", `Invalid value: "mlus": ` + requestMsg},
				{"spec.spec.devices.config[0].opaque.parameters", `decoding: strict decoding error: unknown field "envs" ` + decodeSuffix},
			},
		},
		{
			name:   "a DeviceClass with a good config is allowed",
			object: class(cfg(ascend, "", "AscendConfig", envHCCL)),
		},
		{
			name:   "a DeviceClass's config may be enforced",
			object: class(cfg(ascend, "", "AscendConfig", "enforced: true\n"+envHCCL)),
		},
		{
			name:    "a claim's config may not be enforced",
			object:  claim("resource.k8s.io/v1", cfg(ascend, "[npus]", "AscendConfig", "enforced: true")),
			message: `ResourceClaim.resource.k8s.io "train" is invalid: spec.devices.config[0].opaque.parameters: enforced: Forbidden: only a DeviceClass's config can be enforced, not a claim's`,
			causes:  []cause{{"spec.devices.config[0].opaque.parameters", "enforced: Forbidden: only a DeviceClass's config can be enforced, not a claim's"}},
		},
		{
			name:    "a DeviceClass with a bad config is denied",
			object:  class(cfg(ascend, "", "AscendConfig", "env:\n  DRA_DRIVER: x")),
			message: `DeviceClass.resource.k8s.io "ascend-hccl.example.com" is invalid: spec.config[0].opaque.parameters: AscendConfig: env[DRA_DRIVER]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices`,
			causes:  []cause{{"spec.config[0].opaque.parameters", "AscendConfig: env[DRA_DRIVER]: Forbidden: ASCEND_VISIBLE_DEVICES and DRA_* are set by the driver to the allocated devices"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.review(t, admissionRequest(t, admissionv1.Create, tt.object, ""))
			if tt.message == "" {
				require.True(t, resp.Allowed, "denied: %+v", resp.Result)
				require.Nil(t, resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			require.Equal(t, tt.message, resp.Result.Message)
			require.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
			require.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
			require.Equal(t, metav1.StatusFailure, resp.Result.Status)
			require.NotNil(t, resp.Result.Details)
			require.Equal(t, "resource.k8s.io", resp.Result.Details.Group)
			var got []cause
			for _, c := range resp.Result.Details.Causes {
				require.Equal(t, metav1.CauseTypeFieldValueInvalid, c.Type)
				got = append(got, cause{c.Field, c.Message})
			}
			require.Equal(t, tt.causes, got)
		})
	}
}

func TestUpdatesAreJudgedOnlyWhenTheyChangeTheConfigs(t *testing.T) {
	ts := startServer(t)
	bad := class(cfg(ascend, "", "AscendConfig", "envs: {}"))
	good := class(cfg(ascend, "", "AscendConfig", envHCCL))
	relabelled := strings.Replace(bad, "  name: ascend-hccl.example.com\n", "  name: ascend-hccl.example.com\n  labels: {team: ml}\n", 1)

	t.Run("an update that leaves a bad config alone is allowed, so old objects stay editable and deletable", func(t *testing.T) {
		resp := ts.review(t, admissionRequest(t, admissionv1.Update, relabelled, bad))
		require.True(t, resp.Allowed, "%+v", resp.Result)
	})
	t.Run("an update that makes a good config bad is denied", func(t *testing.T) {
		resp := ts.review(t, admissionRequest(t, admissionv1.Update, bad, good))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, `spec.config[0].opaque.parameters: decoding: strict decoding error: unknown field "envs"`)
	})
	t.Run("an update that fixes a bad config is allowed", func(t *testing.T) {
		resp := ts.review(t, admissionRequest(t, admissionv1.Update, good, bad))
		require.True(t, resp.Allowed, "%+v", resp.Result)
	})
	t.Run("a delete is allowed without looking", func(t *testing.T) {
		req := admissionRequest(t, admissionv1.Delete, bad, bad)
		req.Object.Raw = nil
		resp := ts.review(t, req)
		require.True(t, resp.Allowed, "%+v", resp.Result)
	})
}

func TestObjectsTheWebhookCannotJudgeAreDeniedWithTheReason(t *testing.T) {
	ts := startServer(t)
	tests := []struct {
		name string
		req  func(t *testing.T) *admissionv1.AdmissionRequest
		want string
	}{
		{
			name: "a kind the configuration should not send",
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				return admissionRequest(t, admissionv1.Create, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n", "")
			},
			want: "the accel-dra webhook validates ResourceClaims, ResourceClaimTemplates and DeviceClasses of resource.k8s.io (v1, v1beta2, v1beta1), not v1 Pod: check the rules of its ValidatingWebhookConfiguration",
		},
		{
			name: "an object that does not decode",
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				req := admissionRequest(t, admissionv1.Create, claim("resource.k8s.io/v1", cfg(ascend, "", "AscendConfig", "")), "")
				req.Object.Raw = []byte(`{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","spec":{"devices":{"requests":"npus"}}}`)
				return req
			},
			want: "decoding the ResourceClaim of the AdmissionReview: ",
		},
		{
			name: "a create without an object",
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				req := admissionRequest(t, admissionv1.Create, claim("resource.k8s.io/v1", cfg(ascend, "", "AscendConfig", "")), "")
				req.Object.Raw = nil
				return req
			},
			want: "decoding the ResourceClaim of the AdmissionReview: object is missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.review(t, tt.req(t))
			require.False(t, resp.Allowed)
			require.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
			require.Equal(t, metav1.StatusReasonBadRequest, resp.Result.Reason)
			require.Contains(t, resp.Result.Message, tt.want)
		})
	}
}

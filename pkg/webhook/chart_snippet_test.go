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

// The Kubernetes objects that run this webhook are rendered by the Helm
// chart, deployments/helm/accel-dra/templates/webhook-*.yaml, and tested
// there (test/chart/webhook_test.go). Those tests decode every object
// strictly, check the Service, path, port, probes and flags against this
// package and cmd/accel-dra-webhook, evaluate the matchConditions with the
// API server's matcher against Review, and serve the chart's certificate
// with this package's server. This file keeps what the server side must
// accept from the chart and the demo.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
)

type demoObject struct{ source, kind, yaml string }

// demoObjects are the claims, templates and DeviceClasses users start
// from: demo/ and the chart's DeviceClasses.
func demoObjects(t *testing.T) []demoObject {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../demo/*/*.yaml", "../../demo/*.yaml", "../../deployments/helm/accel-dra/deviceclasses/*.yaml"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	var out []demoObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---") {
			var head struct{ APIVersion, Kind string }
			if yaml.Unmarshal([]byte(doc), &head) != nil || head.APIVersion != "resource.k8s.io/v1" {
				continue
			}
			switch head.Kind {
			case "ResourceClaim", "ResourceClaimTemplate", "DeviceClass":
				out = append(out, demoObject{source: f, kind: head.Kind, yaml: doc})
			}
		}
	}
	require.NotEmpty(t, out, "no demo claims found")
	return out
}

func TestTheDemoClaimsAndTheChartsDeviceClassesAreAllowed(t *testing.T) {
	ts := startServer(t)
	for _, obj := range demoObjects(t) {
		resp := ts.review(t, admissionRequest(t, admissionv1.Create, obj.yaml, ""))
		require.True(t, resp.Allowed, "%s: %+v", obj.source, resp.Result)
	}
}

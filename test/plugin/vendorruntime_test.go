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

package plugin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// On a node migrating from the device plugins the vendor's runtime may
// still be containerd's default; it injects chips for any container whose
// spec carries its visible-devices variable (pkg/cdi/vendorruntime.go).
// Whatever the mode, a claimed container gets each chip's node once and
// the per-device facts; only the variable follows the mode.
func TestVisibleDevicesEnvOnNodesWithAndWithoutTheVendorRuntime(t *testing.T) {
	tests := []struct {
		name          string
		profile       string
		vendor        inventory.Vendor
		mode          string
		ascendRuntime bool
		// visible is the variable and, if wantVisible, its value; if
		// neutral, it is set to "" (ascend-docker-runtime injects nothing
		// for it), else it is left out.
		visible     string
		wantVisible bool
		neutral     bool
	}{
		{name: "ascend, auto, no vendor runtime: set", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			mode: cdi.VisibleDevicesAuto, visible: ascend.EnvVisibleDevices, wantVisible: true},
		{name: "ascend, auto, ascend-docker-runtime installed: neutral", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			mode: cdi.VisibleDevicesAuto, ascendRuntime: true, visible: ascend.EnvVisibleDevices, neutral: true},
		{name: "ascend, set, ascend-docker-runtime installed: set", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			mode: cdi.VisibleDevicesSet, ascendRuntime: true, visible: ascend.EnvVisibleDevices, wantVisible: true},
		{name: "ascend, omit: neutral", profile: "atlas-800t-a2", vendor: ascend.Vendor,
			mode: cdi.VisibleDevicesOmit, visible: ascend.EnvVisibleDevices, neutral: true},
		{name: "cambricon, auto: set", profile: "mlu370-x8", vendor: cambricon.Vendor,
			mode: cdi.VisibleDevicesAuto, ascendRuntime: true, visible: cambricon.EnvVisibleDevices, wantVisible: true},
		{name: "cambricon, omit: left out", profile: "mlu370-x8", vendor: cambricon.Vendor,
			mode: cdi.VisibleDevicesOmit, visible: cambricon.EnvVisibleDevices},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := startNode(t, nodeOptions{Profile: tt.profile, Vendor: tt.vendor, Setup: func(n *node) {
				n.visibleDevicesEnv = tt.mode
				if tt.ascendRuntime {
					p := filepath.Join(n.root, "usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime")
					require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
					require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
				}
			}})
			prefix := "npu"
			if tt.vendor == cambricon.Vendor {
				prefix = "mlu"
			}
			c := n.claim("job", chipNames(prefix, 2))
			ctr := n.container(n.mustPrepare(c))

			paths := devicePaths(ctr)
			seen := map[string]bool{}
			for _, p := range paths {
				require.False(t, seen[p], "%s is in the container twice", p)
				seen[p] = true
			}
			require.True(t, sort.StringsAreSorted(paths))
			env := envMap(ctr)
			switch {
			case tt.wantVisible:
				require.Equal(t, "0,1", env[tt.visible])
			case tt.neutral:
				v, ok := env[tt.visible]
				require.True(t, ok, "%s is set", tt.visible)
				require.Empty(t, v)
			default:
				require.NotContains(t, env, tt.visible)
			}
			for i := 0; i < 2; i++ {
				chip := n.inv.ChipsOf(tt.vendor)[i]
				require.Equal(t, chip.UUID, env[fmt.Sprintf("DRA_DEVICE_%s_%d_UUID", map[string]string{"npu": "NPU", "mlu": "MLU"}[prefix], i)])
			}
			n.unprepare(c)
		})
	}
}

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

package cdi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/cdi"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// On a node two node groups serve, the chart mounts /usr/local/Ascend
// (where ascend-docker-runtime's marker is) only into the Ascend group's
// agent. The Cambricon agent learns of the runtime from the finding the
// Ascend agent records in the state directory they share, at every spec it
// writes, so a Cambricon pod cannot name Ascend chips for the runtime.
func TestAnotherGroupsAgentSetsTheNeutralValueOfARuntimeItCannotSee(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	stateDir := t.TempDir()
	// What each group's agent sees of the node: the Ascend agent has
	// /usr/local/Ascend, the Cambricon agent does not.
	ascendView, cambriconView := t.TempDir(), t.TempDir()
	marker := filepath.Join(ascendView, "usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime")
	require.NoError(t, os.MkdirAll(filepath.Dir(marker), 0o755))
	require.NoError(t, os.WriteFile(marker, []byte("#!/bin/sh\n"), 0o755))

	startAgent := func(view string, served inventory.Vendor) (*cdi.Writer, string) {
		t.Helper()
		specDir := t.TempDir()
		w, err := cdi.NewWriter(context.Background(), cdi.Config{Registry: registry, SpecDir: specDir, HostRoot: n.root, VisibleRoot: view,
			Served: []inventory.Vendor{served}, FindingsDir: stateDir, LDCacheHook: testHook})
		require.NoError(t, err)
		return w, specDir
	}
	// The Ascend variable a Cambricon claim's container ends up with when
	// the pod sets it to every chip itself.
	podEnv := []string{ascend.EnvVisibleDevices + "=0-7"}
	ascendVarOfACambriconPod := func(w *cdi.Writer, specDir string) []string {
		t.Helper()
		c := n.claim(types.UID("0a1b2c3d-0000-4000-8000-000000000003"), cambricon.Vendor, 0)
		ids, err := w.Write(context.Background(), c)
		require.NoError(t, err)
		var got []string
		for _, e := range injectWithEnv(t, specDir, podEnv, flatten(c, ids)...).Process.Env {
			if k, v, _ := strings.Cut(e, "="); k == ascend.EnvVisibleDevices {
				got = append(got, v)
			}
		}
		return got
	}

	cw, cdir := startAgent(cambriconView, cambricon.Vendor)
	require.Equal(t, []string{"0-7"}, ascendVarOfACambriconPod(cw, cdir),
		"before the Ascend agent ever started on the node nothing is known: the pod's own value stays (docs/security.md)")

	startAgent(ascendView, ascend.Vendor)
	require.Equal(t, []string{""}, ascendVarOfACambriconPod(cw, cdir),
		"the Ascend agent found the runtime: the Cambricon agent, already running, sets the neutral value")

	require.NoError(t, os.Remove(marker))
	startAgent(ascendView, ascend.Vendor)
	require.Equal(t, []string{"0-7"}, ascendVarOfACambriconPod(cw, cdir),
		"the runtime was removed and the Ascend agent restarted: nothing to neutralize")

	finding := filepath.Join(stateDir, "vendor-runtimes", "ascend.json")
	require.FileExists(t, finding)
	require.NoError(t, os.WriteFile(finding, []byte("{not json"), 0o644))
	require.Equal(t, []string{""}, ascendVarOfACambriconPod(cw, cdir),
		"a finding that cannot be read counts as installed: the neutral value is the safe side")
}

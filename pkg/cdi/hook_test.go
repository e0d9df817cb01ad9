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
	"github.com/accel-dra/accel-dra/pkg/cdihook"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// An Ascend claim's container keeps the image's LD_LIBRARY_PATH (CDI env
// edits replace a variable) and gets a createContainer hook that adds the
// driver's library directories present on the node to its ld.so cache.
// Cambricon mounts no libraries, so its specs have no hook.
func TestAscendSpecsLeaveTheImagesLDLibraryPathAndAddTheDriverLibrariesToTheLDCache(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	require.NoError(t, os.RemoveAll(filepath.Join(n.root, "usr/local/Ascend/driver/lib64/common")))
	w, dir := n.writerWith(t, cdi.VisibleDevicesAuto)
	uid := types.UID("0a1b2c3d-0000-4000-8000-000000000003")

	a := n.claim(uid, ascend.Vendor, 0)
	ids, err := w.Write(context.Background(), a)
	require.NoError(t, err)
	spec := injectWithEnv(t, dir, []string{"LD_LIBRARY_PATH=/opt/app/lib"}, flatten(a, ids)...)
	var ld []string
	for _, e := range spec.Process.Env {
		if v, ok := strings.CutPrefix(e, "LD_LIBRARY_PATH="); ok {
			ld = append(ld, v)
		}
	}
	require.Equal(t, []string{"/opt/app/lib"}, ld, "the image's LD_LIBRARY_PATH is left as it was")
	require.NotNil(t, spec.Hooks)
	require.Len(t, spec.Hooks.CreateContainer, 1)
	h := spec.Hooks.CreateContainer[0]
	require.Equal(t, testHook, h.Path)
	// lib64/common is not on this node: only the directories present.
	require.Equal(t, []string{testHook, cdihook.Subcommand, cdihook.ActionUpdateLDCache, "--ldconfig=/sbin/ldconfig",
		"--folder=/usr/local/Ascend/driver/lib64/driver"}, h.Args)
	require.NotNil(t, h.Timeout)
	// The hook's environment is its own, never the container's: the
	// container asked for LD_LIBRARY_PATH, and the hook does not get it.
	require.Equal(t, cdihook.Env, h.Env)

	m := n.claim(uid, cambricon.Vendor, 0)
	ids, err = w.Write(context.Background(), m)
	require.NoError(t, err)
	spec = inject(t, dir, flatten(m, ids)...)
	require.True(t, spec.Hooks == nil || len(spec.Hooks.CreateContainer) == 0, "no hook for Cambricon: %+v", spec.Hooks)
}

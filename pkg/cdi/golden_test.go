package cdi_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenRoot stands for the temporary host root in golden files.
const goldenRoot = "/host"

func TestClaimSpecsMatchTheGoldenYAML(t *testing.T) {
	tests := []struct {
		golden  string
		profile string
		adjust  func(*inventory.Inventory)
		vendor  inventory.Vendor
		indices []int
		env     map[string]string
	}{
		{golden: "ascend-910b-1-chip", profile: "atlas-800t-a2", vendor: inventory.VendorHuawei, indices: []int{3}},
		{golden: "ascend-910a-4-chips-one-ring", profile: "atlas-800-910a", vendor: inventory.VendorHuawei, indices: []int{4, 5, 6, 7},
			env: map[string]string{"HCCL_CONNECT_TIMEOUT": "1200"}},
		{golden: "ascend-910b-8-chips", profile: "atlas-800t-a2", vendor: inventory.VendorHuawei, indices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{golden: "cambricon-mlu370-1-chip", profile: "mlu370-x8", vendor: inventory.VendorCambricon, indices: []int{2}},
		{golden: "cambricon-mlu590-4-chips", profile: "mlu590", adjust: withMLU590Nodes, vendor: inventory.VendorCambricon, indices: []int{0, 1, 2, 3},
			env: map[string]string{"CNCL_LOG_LEVEL": "WARNING"}},
		{golden: "cambricon-mlu370-8-chips", profile: "mlu370-x8", vendor: inventory.VendorCambricon, indices: []int{0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			n := newNode(t, tt.profile, tt.adjust)
			w, dir := n.writer(t)
			c := n.claim("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", tt.vendor, tt.indices...)
			for i := range c.Devices {
				c.Devices[i].Env = tt.env
			}
			_, err := w.Write(context.Background(), c)
			require.NoError(t, err)
			requireValidSpecs(t, dir)

			files := specFiles(t, dir)
			require.Len(t, files, 1)
			data, err := os.ReadFile(filepath.Join(dir, files[0]))
			require.NoError(t, err)
			got := strings.ReplaceAll(string(data), n.root, goldenRoot)

			golden := filepath.Join("testdata", "golden", tt.golden+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./pkg/cdi -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}

func TestSpecFilesAreNamedByVendorAndClaimUID(t *testing.T) {
	n := newNode(t, "mixed-910b-mlu370", nil)
	w, dir := n.writer(t)
	uid := types.UID("0a1b2c3d-0000-4000-8000-000000000001")
	for _, v := range []inventory.Vendor{inventory.VendorHuawei, inventory.VendorCambricon} {
		_, err := w.Write(context.Background(), n.claim(uid, v, 0))
		require.NoError(t, err)
	}
	require.Equal(t, []string{
		"accel-dra.dev-ascend_" + string(uid) + ".yaml",
		"accel-dra.dev-cambricon_" + string(uid) + ".yaml",
	}, specFiles(t, dir))
}

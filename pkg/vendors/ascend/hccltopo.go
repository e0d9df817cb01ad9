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

package ascend

// The HCCL topology file of an Ascend 950 node. Huawei's device plugin
// sets HCCL_TOPO_FILE_PATH in every container of a 950 (and no other
// chip) to the file of the node's product: an Atlas 350 card by its board
// and mainboard ids, anything else by the super-pod type of its first chip
// (Ascend/mind-cluster@22bb3d98 component/ascend-device-plugin
// pkg/server/plugin_v2.go:26-65, npu_base_v2.go:38-46,
// manager_v2.go:53-74, pkg/common/constants_v2.go:31-44, 57-105). The
// driver installs those files in /usr/local/Ascend/driver/topo/950 (CANN
// driver source scripts/package/custom/driver/ascend950/driver.xml:103-119,
// scripts/package/custom/driver/common/topo/*.json), and both Huawei's
// container runtime and its CDI specs give a container that directory
// (ascend-docker-runtime hook/process/process.go:53, 516-535;
// ascend-common/cdi/mount/provider.go:55-66).

import (
	"context"
	"os"
	"path"
	"strings"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// EnvHCCLTopoFile is the variable that names the file (mind-cluster
// HcclTopoFilePathKey).
const EnvHCCLTopoFile = "HCCL_TOPO_FILE_PATH"

// HCCLTopoDir is the driver's directory of topology files, which
// containers get (cdi.go).
const HCCLTopoDir = "/usr/local/Ascend/driver/topo"

// hcclTopo950Dir holds the 950's files.
const hcclTopo950Dir = HCCLTopoDir + "/950"

// ExtraHCCLTopoFile is the chip attribute that carries the node's file, so
// prepare can set the variable (Ascend.CDI ChipEnv); only 950 chips have it.
const ExtraHCCLTopoFile = "hcclTopoFile"

// hcclTopoByProduct is the device plugin's table (hcclTopoFilePathMap), by
// its product key: the super_pod_type of SPOD_INFO (ProductTypeServer 0 …
// ProductType32PServer 4) or an Atlas 350 card's (5, 6).
var hcclTopoByProduct = map[uint32]string{
	0: "atlas_850_1.json", // 8P server
	1: "atlas_950_1.json", // 1D super pod
	2: "atlas_950_2.json", // 2D super pod
	3: "atlas_850_2.json", // 16P server
	4: "atlas_850_3.json", // 32P server
	5: "atlas_350_1.json", // Atlas 350 card, one chip
	6: "atlas_350_3.json", // Atlas 350 card, four chips
}

// The Atlas 350 card: its board ids (A5300IBoardId, 2 and 3) and, by
// mainboard id, the card's product key (A5300IMainBoardId 0x68,
// ProductType1PCard; A5300I4PMainBoardId 0x6c, ProductType4PCard). Other
// mainboards of such a board fall through to the super-pod type, as in
// the device plugin.
var (
	atlas350Boards      = map[uint32]bool{0x1a: true, 0x1b: true, 0x1c: true}
	atlas350ByMainboard = map[uint32]uint32{0x68: 5, 0x6c: 6}
)

// is950 says whether a chip name is an Ascend 950's (Ascend950PR,
// Ascend950DT; mind-cluster api.Ascend910A5Prefix "Ascend950").
func is950(name string) bool { return strings.HasPrefix(name, "Ascend950") }

// hcclTopoFile decides the node's file from its board, mainboard and super
// pod type, as the device plugin does; "" where it decides none.
func hcclTopoFile(board, mainboard uint32, boardErr error, superPodType uint32, spodErr error) string {
	if boardErr == nil && atlas350Boards[board] {
		if key, ok := atlas350ByMainboard[mainboard]; ok {
			return path.Join(hcclTopo950Dir, hcclTopoByProduct[key])
		}
	}
	if spodErr != nil {
		return ""
	}
	if f, ok := hcclTopoByProduct[superPodType]; ok {
		return path.Join(hcclTopo950Dir, f)
	}
	return ""
}

// setHCCLTopology gives every 950 chip read through DCMI v2 the node's
// file (ExtraHCCLTopoFile), asking the first chip, as the device plugin
// does. A file the node lacks is still named, as the device plugin names
// it, with a log line: HCCL then says which file it misses.
func (b *Backend) setHCCLTopology(ctx context.Context, found []found, chips []inventory.Chip) {
	if b.lib == nil || b.lib.v2 == nil || len(found) == 0 || found[0].dcmi == nil || !is950(found[0].info.Name) {
		return
	}
	first := *found[0].dcmi
	board, mainboard, boardErr := b.lib.v2Board(first)
	spod, spodErr := b.lib.v2SpodInfo(first)
	file := hcclTopoFile(board, mainboard, boardErr, spod.SuperPodType, spodErr)
	if file == "" {
		b.logOnce(ctx, "hccl-topo", "Cannot tell which HCCL topology file this Ascend 950 node has, setting no HCCL_TOPO_FILE_PATH",
			"boardID", board, "mainboardID", mainboard, "boardErr", boardErr, "superPodType", spod.SuperPodType, "spodErr", spodErr)
		return
	}
	if _, err := os.Stat(b.hostPath(file)); err != nil {
		b.logOnce(ctx, "hccl-topo-missing:"+file, "The node lacks the HCCL topology file of its product, naming it anyway as Huawei's device plugin does",
			"file", file, "err", err)
	}
	for i := range chips {
		if is950(found[i].info.Name) {
			chips[i].Extra[ExtraHCCLTopoFile] = inventory.StringValue(file)
		}
	}
	klog.FromContext(ctx).V(2).Info("The node's HCCL topology file", "file", file)
}

// hcclTopoEnv is what a container of chip c gets besides the claim's
// variables: HCCL_TOPO_FILE_PATH on a 950 whose node has a file.
func hcclTopoEnv(c inventory.Chip) map[string]string {
	v, ok := c.Extra[ExtraHCCLTopoFile]
	if !ok || v.String == nil || *v.String == "" {
		return nil
	}
	return map[string]string{EnvHCCLTopoFile: *v.String}
}

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

package cambricon

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// ProfileNodeCommand implements vendors.Partitions: cnmon's
// sMLU commands as PartitionTool runs them (smlu -c N -l, -p, -C, -D) in
// the layouts of testdata/smlu.
// long: one switch over the simulated sMLU sub-commands, each a few lines;
// vendor-internal, reworked separately (issue 42).
func (SMLUs) ProfileNodeCommand(n vendors.ProfileNodePartitions, cmd string, args []string) ([]byte, error) {
	fl := vendors.ToolFlags(args)
	if len(args) == 0 || args[0] != "smlu" {
		return nil, vendors.ToolError(cmd, "unsupported command")
	}
	card, err := strconv.Atoi(fl["-c"])
	if err != nil {
		return nil, vendors.ToolError(cmd, "invalid card")
	}
	c, ok := n.Chip(card)
	if !ok {
		return nil, vendors.ToolError(cmd, "card %d does not exist", card)
	}
	m, ok := vendors.PartitionModelOf(Cambricon{}, c)
	if !ok {
		return nil, vendors.ToolError(cmd, "card %d (%s) does not support sMLU", card, c.Model)
	}
	st, err := n.Load()
	if err != nil {
		return nil, err
	}
	list := st.Partitions[vendors.PartitionKey(c)]
	_, create := fl["-C"]
	_, destroy := fl["-D"]
	_, listing := fl["-l"]
	_, profiles := fl["-p"]
	switch {
	case profiles:
		var b strings.Builder
		fmt.Fprintf(&b, "Card: %d\n%-12s%-15s%s\n", card, "Profile ID", "Profile Name", "Total")
		for i := len(m.Templates) - 1; i >= 0; i-- {
			t := m.Templates[i]
			fmt.Fprintf(&b, "%-12d%-15s%d\n", profileID(c, t.Name), t.Name, c.MemoryBytes/t.MemoryBytes)
		}
		return []byte(b.String()), nil
	case listing:
		var b strings.Builder
		fmt.Fprintf(&b, "Card: %d\n", card)
		fmt.Fprintf(&b, "%-13s%-13s%-16s%-42s%s\n", "Instance ID", "Profile ID", "Profile Name", "UUID", "Device Node")
		for _, p := range list {
			fmt.Fprintf(&b, "%-13d%-13d%-16s%-42s%s\n", p.ID, profileID(c, p.Template), p.Template, p.UUID, p.DeviceNode)
		}
		return []byte(b.String()), nil
	case create:
		pid, err := strconv.Atoi(fl["-C"])
		if err != nil {
			return nil, vendors.ToolError(cmd, "invalid profile id")
		}
		var t vendors.Template
		ok := false
		for _, tt := range m.Templates {
			if profileID(c, tt.Name) == pid {
				t, ok = tt, true
			}
		}
		if !ok {
			return nil, vendors.ToolError(cmd, "profile %d does not exist on card %d", pid, card)
		}
		if err := m.FitsNextTo(c, list, t); err != nil {
			return nil, vendors.ToolError(cmd, "%v", err)
		}
		// Instance ids start at 1 (mi0 is the physical function).
		used := map[int]bool{}
		for _, p := range list {
			used[p.ID] = true
		}
		id := 1
		for used[id] {
			id++
		}
		inst := vendors.Instance{Type: PartitionType, Chip: card, Template: t.Name, ID: id,
			DeviceNode: fmt.Sprintf("/dev/cambricon-caps/cap_dev%d_mi%d", card, id),
			UUID:       fmt.Sprintf("MLU-%08x-%04x-0000-0000-000000000000", card+1, id)}
		if err := n.Mknod(inst.DeviceNode); err != nil {
			return nil, err
		}
		st.Partitions[vendors.PartitionKey(c)] = append(list, inst)
		if err := n.Save(st); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("Successfully created smlu instance ID %d on card %d, using profile ID %d\n", id, card, pid)), nil
	case destroy:
		id, err := strconv.Atoi(fl["-D"])
		if err != nil {
			return nil, vendors.ToolError(cmd, "invalid instance")
		}
		rest, removed := vendors.WithoutInstance(list, id)
		if removed == nil {
			return nil, vendors.ToolError(cmd, "sMLU instance %d does not exist on card %d", id, card)
		}
		st.Partitions[vendors.PartitionKey(c)] = rest
		if err := n.Save(st); err != nil {
			return nil, err
		}
		if err := n.Rmnod(removed.DeviceNode); err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("Successfully destroyed smlu instance ID %d on card %d\n", id, card)), nil
	}
	return nil, vendors.ToolError(cmd, "unsupported command")
}

// profileID numbers the default profiles as the driver does: 0 the whole
// chip, 1 the half, 2 the quarter.
func profileID(c inventory.Chip, name string) int {
	m, _ := vendors.PartitionModelOf(Cambricon{}, c)
	for i, t := range m.Templates {
		if t.Name == name {
			return len(m.Templates) - i
		}
	}
	return 0
}

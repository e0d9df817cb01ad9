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

package chipview

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/pkg/names"
	"github.com/accel-dra/accel-dra/pkg/partitions"
)

// PrintTable writes the chips one per line, then the pools of other
// drivers; wide adds the driver, index, mode and cores, and full taints.
func PrintTable(w io.Writer, v *View, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if len(v.Chips) > 0 {
		if wide {
			fmt.Fprintln(tw, "NODE\tDRIVER\tDEVICE\tINDEX\tMODEL\tMODE\tMEMORY\tCORES\tLINK GROUP\tHEALTH\tSTATE\tHOLDERS\tADMIN ACCESS\tIN USE / LEFT")
		} else {
			fmt.Fprintln(tw, "NODE\tDEVICE\tMODEL\tMEMORY\tLINK GROUP\tHEALTH\tSTATE\tHOLDERS\tADMIN ACCESS\tIN USE / LEFT")
		}
	}
	for _, c := range v.Chips {
		if wide {
			index := "-"
			if c.Index != nil {
				index = fmt.Sprint(*c.Index)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(c.Node), c.Driver, c.Device, index, dash(c.Model), modeName(c.Mode),
				quantity(c.Memory), quantity(c.Cores), dash(c.LinkGroup), health(c.Taints, true), c.State,
				holders(c.Holders, true), holders(c.AdminHolders, true), usage(c))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(c.Node), c.Device, dash(c.Model), quantity(c.Memory),
			dash(c.LinkGroup), health(c.Taints, false), c.State, holders(c.Holders, false), holders(c.AdminHolders, false), usage(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.OtherDrivers) == 0 {
		return nil
	}
	if len(v.Chips) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "OTHER DRIVERS (not interpreted)")
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDRIVER\tPOOL\tSLICES\tDEVICES")
	for _, o := range v.OtherDrivers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", dash(o.Node), o.Driver, o.Pool, o.Slices, o.Devices)
	}
	return tw.Flush()
}

// PrintSummary writes the per-model counts; wide adds the node column
// (the rows are then per node, see Summarize).
func PrintSummary(w io.Writer, rows []ModelSummary, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	// The super pod column shows only in clusters with super pods.
	superPods := slices.ContainsFunc(rows, func(r ModelSummary) bool { return r.SuperPod != "" })
	var head []string
	if wide {
		head = append(head, "NODE")
	}
	if superPods {
		head = append(head, "SUPER POD")
	}
	fmt.Fprintln(tw, strings.Join(append(head, "MODEL", "TOTAL", "ALLOCATED", "FREE", "UNHEALTHY"), "\t"))
	for _, r := range rows {
		if wide {
			fmt.Fprintf(tw, "%s\t", dash(r.Node))
		}
		if superPods {
			fmt.Fprintf(tw, "%s\t", dash(r.SuperPod))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", dash(r.Model), r.Total, r.Allocated, r.Free, r.Unhealthy)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

// health is "ok" or the taints as key=value:effect; the short form gives
// our taints as value:effect, as the value (the reason, e.g.
// DeviceFileMissing, HealthWarning) names the cause its key stands for,
// and drops our domain from other keys.
func health(taints []resourceapi.DeviceTaint, full bool) string {
	if len(taints) == 0 {
		return "ok"
	}
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		if !full {
			switch key, ours := strings.CutPrefix(t.Key, names.Domain+"/"); {
			case ours && t.Value != "":
				s = t.Value
			case ours:
				s = key
			}
		}
		out = append(out, s+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

// holders are claim(pod,pod) per distinct claim, space separated; wide
// adds the partition device or share a claim holds (claim@device).
func holders(hs []Holder, wide bool) string {
	if len(hs) == 0 {
		return "-"
	}
	var out []string
	for _, h := range hs {
		s := h.ClaimName()
		if wide && (h.Template != "" || h.ShareID != "") {
			s += "@" + h.Device
			if h.ShareID != "" {
				s += "/" + h.ShareID
			}
		}
		if len(h.Pods) > 0 {
			s += "(" + strings.Join(h.Pods, ",") + ")"
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// usage is, for a partitioned chip, the partitions held by template, for
// a shared chip the number of shares, and for both the capacity left:
// e.g. "vir05_1c_16g×2, left cores=10 memory=32Gi".
func usage(c Chip) string {
	var use string
	switch c.Mode {
	case partitions.ModePartitioned:
		counts := map[string]int{}
		var templates []string
		for _, h := range c.Holders {
			t := h.Template
			if t == "" {
				t = "whole chip"
			}
			if counts[t] == 0 {
				templates = append(templates, t)
			}
			counts[t]++
		}
		var parts []string
		for _, t := range templates {
			parts = append(parts, fmt.Sprintf("%s×%d", t, counts[t]))
		}
		use = strings.Join(parts, " ")
		if use == "" {
			use = "no partitions"
		}
	case partitions.ModeShared:
		use = fmt.Sprintf("%d shares", len(c.Holders))
		if len(c.Holders) == 1 {
			use = "1 share"
		}
		if c.ShareEnforcement == partitions.EnforcementHardware {
			use += " (hardware-enforced)"
		}
	default:
		return "-"
	}
	if len(c.Left) == 0 {
		return use
	}
	keys := make([]string, 0, len(c.Left))
	for k := range c.Left {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	left := make([]string, 0, len(keys))
	for _, k := range keys {
		q := c.Left[k]
		left = append(left, k+"="+ptr.To(q).String())
	}
	return use + ", left " + strings.Join(left, " ")
}

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

// Package cli implements the accel-dra command line: discover shows the
// chips of a node (real root or simulated profile) and the ResourceSlices
// the node agent would publish for them.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/profile"
	"github.com/accel-dra/accel-dra/pkg/resourceslices"
	"github.com/accel-dra/accel-dra/pkg/source"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// NewRootCommand returns the accel-dra command with its subcommands.
// NewRootCommand is the accel-dra command for the vendors of reg.
func NewRootCommand(reg vendors.Registry) *cobra.Command {
	root := &cobra.Command{
		Use:           "accel-dra",
		Short:         "Inspect Ascend and Cambricon accelerators as Kubernetes DRA devices",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDiscoverCommand(reg), newSimulateCommand(reg), newChipsCommand(reg), newWhyCommand(reg), newTopologyCommand(), newRankTableCommand(reg))
	return root
}

func newDiscoverCommand(reg vendors.Registry) *cobra.Command {
	var rootDir, profileName, nodeName, output, toolOutput, chipModes string
	libraries := map[string]string{}
	cmd := &cobra.Command{
		Use:   "discover [--root DIR | --profile NAME] [--chip-modes MODES] [-o table|yaml|json]",
		Short: "Show the node's chips, or the ResourceSlices the node agent would publish",
		Long: `discover finds the accelerator chips of this node and prints them.

With --root (default /) it reads device files, sysfs and vendor tool output
(npu-smi for Ascend, cnmon for Cambricon; --tool-output replays recorded
output instead) under that directory, detecting which vendors are present; with --profile it simulates a node with a bundled
hardware profile (` + strings.Join(profile.Names(), ", ") + `) or a profile file.

--chip-modes takes the node agent's setting (same syntax): chips are
published Whole unless it asks for partitions or shares.

-o table prints one chip per line, followed by its partitions where they are
published; -o yaml and -o json print the resource.k8s.io/v1 ResourceSlices
the node agent publishes for them; -o sources prints, per chip and fact,
what read it (libdcmi.so and the call, an npu-smi command, sysfs, a file).`,
		Example: `  # the chips of an Atlas 800T A2 as the agent publishes them by default: whole
  accel-dra discover --profile atlas-800t-a2

  # the same node with vNPUs offered on every chip, as slices
  accel-dra discover --profile atlas-800t-a2 --chip-modes Partitioned -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			policy, err := partitions.ParsePolicy(reg, chipModes)
			if err != nil {
				return fmt.Errorf("--chip-modes: %w", err)
			}
			if profileName == "" {
				// A mistyped --root would otherwise read as a node without
				// chips.
				if st, err := os.Stat(rootDir); err != nil {
					return fmt.Errorf("--root %s: %w", rootDir, err)
				} else if !st.IsDir() {
					return fmt.Errorf("--root %s: not a directory", rootDir)
				}
			}
			inv, err := source.Discover(cmd.Context(), source.Options{Registry: reg, Root: rootDir, Profile: profileName, NodeName: nodeName, ToolOutput: toolOutput, Libraries: libraries})
			if err != nil {
				return err
			}
			if toolOutput != "" {
				// As the node agent: a node read from recorded tool output
				// cannot make partitions, so it publishes none.
				for _, c := range inv.Chips {
					if policy.ModeOf(c) == partitions.ModePartitioned {
						fmt.Fprintln(cmd.ErrOrStderr(), "note: with --tool-output no partitions are published (nothing can make them); Partitioned chips are shown Whole")
						break
					}
				}
				policy.NoPartitions = true
			}
			return printInventory(cmd.OutOrStdout(), reg, output, nodeName, inv, resourceslices.Options{Policy: policy})
		},
	}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&rootDir, "root", "/", "host root directory to read /dev, /sys and driver files from")
	cmd.Flags().StringVar(&profileName, "profile", "", "simulate a node with this hardware profile (bundled name or file path) instead of reading --root")
	cmd.Flags().StringVar(&toolOutput, "tool-output", "", "read recorded npu-smi/cnmon output from this directory instead of running the tools")
	cmd.Flags().StringVar(&nodeName, "node-name", host, "node name used for the pool and slice names")
	cmd.Flags().StringVar(&chipModes, "chip-modes", "", partitions.PolicyHelp+" (the node agent's --chip-modes)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml, json, or sources (which backend read each fact of each chip: the vendor's library, its tool, sysfs)")
	source.AddLibraryFlags(cmd.Flags(), reg, libraries, false, " (the node agent's flag of the same name; none with --tool-output)")
	cmd.MarkFlagsMutuallyExclusive("root", "profile")
	return cmd
}

func printInventory(w io.Writer, reg vendors.Registry, format, nodeName string, inv inventory.Inventory, opts resourceslices.Options) error {
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DEVICE\tVENDOR\tMODEL\tMEMORY\tCORES\tLINK GROUP\tNUMA\tPCI\tHEALTHY")
		for _, v := range inv.Vendors() {
			for _, c := range inv.ChipsOf(v) {
				numa := "-"
				if c.NUMANode != nil {
					numa = fmt.Sprint(*c.NUMANode)
				}
				row := func(device string, memory, cores int64) {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%dMi\t%d\t%s\t%s\t%s\t%t\n", device, c.Vendor, c.Model,
						memory>>20, cores, c.LinkGroup, numa, c.PCIBusID, c.Healthy)
				}
				row(reg.ChipDeviceName(c), c.MemoryBytes, int64(c.Cores))
				// The partition devices the slices hold (resourceslices
				// publishes the same slots), with their own memory and cores.
				if opts.Policy.ModeOf(c) == partitions.ModePartitioned {
					for _, s := range partitions.Slots(reg, c) {
						row(reg.PartitionDeviceName(c, s), s.Template.MemoryBytes, s.Template.Cores)
					}
				}
			}
		}
		return tw.Flush()
	case "sources":
		return printSources(w, reg, inv)
	case "yaml":
		for _, s := range resourceslices.SlicesFor(reg, nodeName, inv, opts) {
			b, err := yaml.Marshal(s)
			if err != nil {
				return fmt.Errorf("encoding ResourceSlice %s: %w", s.Name, err)
			}
			fmt.Fprintf(w, "---\n%s", b)
		}
		return nil
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": resourceslices.SlicesFor(reg, nodeName, inv, opts)})
	}
	return fmt.Errorf("--output %q: must be table, yaml or json", format)
}

// printSources prints which backend read each fact of each chip
// (inventory.Chip.Sources), facts sorted by name; a chip whose backend
// records none (a simulated node) says so.
func printSources(w io.Writer, reg vendors.Registry, inv inventory.Inventory) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tFACT\tREAD BY")
	for _, v := range inv.Vendors() {
		for _, c := range inv.ChipsOf(v) {
			device := reg.ChipDeviceName(c)
			if len(c.Sources) == 0 {
				fmt.Fprintf(tw, "%s\t*\tnot recorded (simulated node)\n", device)
				continue
			}
			for _, fact := range slices.Sorted(maps.Keys(c.Sources)) {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", device, fact, c.Sources[fact])
			}
		}
	}
	return tw.Flush()
}

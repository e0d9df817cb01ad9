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

package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/chipview"
	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

func newChipsCommand(reg vendors.Registry) *cobra.Command {
	var node, output string
	var summary bool
	cmd := &cobra.Command{
		Use:     "chips [--node NAME] [--summary] [-o table|wide|json|yaml]",
		Short:   "Show every chip of a live cluster: its state and the claims and pods that hold it",
		Long:    chipsLong,
		Example: chipsExample,
		Args:    cobra.NoArgs,
	}
	conn := livecluster.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&node, "node", "", "Show only the chips of this node")
	cmd.Flags().BoolVar(&summary, "summary", false, "Count chips per model and super pod (per node too with -o wide)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table, wide, json or yaml")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch output {
		case "table", "wide", "json", "yaml":
		default:
			return fmt.Errorf("--output %q: must be table, wide, json or yaml", output)
		}
		c, err := connect(conn)
		if err != nil {
			return err
		}
		snap, err := c.Read(cmd.Context(), livecluster.Kinds{Claims: true})
		if err != nil {
			return err
		}
		view, err := chipview.Build(snap, chipview.Options{Registry: reg, Node: node})
		if err != nil {
			return err
		}
		if len(view.Chips) == 0 && len(view.OtherDrivers) == 0 && (output == "table" || output == "wide") {
			_, err := fmt.Fprintln(cmd.ErrOrStderr(), "No chips found: no DRA driver publishes ResourceSlices in this cluster.")
			return err
		}
		wide := output == "wide"
		if summary {
			rows := chipview.Summarize(view.Chips, wide)
			if output == "table" || output == "wide" {
				return chipview.PrintSummary(cmd.OutOrStdout(), rows, wide)
			}
			return printStructured(cmd.OutOrStdout(), output, struct {
				Models []chipview.ModelSummary `json:"models"`
			}{rows})
		}
		if output == "table" || output == "wide" {
			return chipview.PrintTable(cmd.OutOrStdout(), view, wide)
		}
		return printStructured(cmd.OutOrStdout(), output, view)
	}
	return cmd
}

const chipsLong = `chips reads the ResourceSlices and ResourceClaims of the cluster your
kubeconfig points at (as kubectl does: --kubeconfig, KUBECONFIG, --context)
and prints one line per chip of the ascend.accel-dra.dev and
cambricon.accel-dra.dev drivers: node, device, model, memory, link group,
health (the device's taints), state, the claims holding it with the pods in
their reservedFor, admin-access claims apart (they see the chip but hold
nothing), and for partitioned and shared chips the partitions or shares in
use and the capacity left.

State is free (no claim holds the chip or a part of it), allocated (the
scheduler gave it to a claim the node agent has not prepared yet) or
prepared (the node agent prepared it for every claim holding it: each
claim's status.devices has the device's entry with condition Ready).

--summary counts chips per model, and per super pod in clusters with
super pods (per node too with -o wide): total,
allocated (whole or in part), free (held by nothing and untainted) and
unhealthy (tainted). Pools of other drivers are listed, not interpreted.

It is cluster-wide (-n and -A change nothing), makes one list request per
kind and never writes to the cluster. The ClusterRole accel-dra-viewer of
the chart grants what it reads.`

const chipsExample = `  # every chip of the cluster
  accel-dra chips

  # the chips of one node, with driver, mode and full taints
  accel-dra chips --node a2-0 -o wide

  # chips per model, and per node and model
  accel-dra chips --summary
  accel-dra chips --summary -o wide

  # as a kubectl plugin (the binary installed as kubectl-accel_dra)
  kubectl accel-dra chips --context prod`

// printStructured writes v as indented JSON or as YAML.
func printStructured(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the output as YAML: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

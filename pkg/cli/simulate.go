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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/inputfile"
	"github.com/accel-dra/accel-dra/pkg/partitions"
	"github.com/accel-dra/accel-dra/pkg/simulate"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/webhook"
)

// simulateFlags are the flags of accel-dra simulate.
type simulateFlags struct {
	clusterFile, output, chipModes string
	files                          []string
	explainAll                     bool
}

func newSimulateCommand(reg vendors.Registry) *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:     "simulate --cluster FILE -f FILE_OR_DIR... [--chip-modes MODES] [-o table|json|yaml] [--explain]",
		Short:   "Dry-run ResourceClaims against a simulated cluster with the upstream DRA allocator",
		Long:    simulateLong,
		Example: simulateExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runSimulate(cmd.Context(), reg, f)
			if err != nil {
				return err
			}
			return printSimulation(cmd.OutOrStdout(), f.output, res)
		},
	}
	cmd.Flags().StringVar(&f.clusterFile, "cluster", "", "SimulatedCluster file (nodes with a profile and a count)")
	cmd.Flags().StringVar(&f.chipModes, "chip-modes", "", partitions.PolicyHelp+"; for the nodes whose entry in the cluster file sets no chipModes")
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "DeviceClass / ResourceClaim / ResourceClaimTemplate file or directory (repeatable)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().BoolVar(&f.explainAll, "explain", false, "print, for every claim, the candidate device counts per request (always shown for claims that cannot be allocated)")
	_ = cmd.MarkFlagRequired("cluster")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

const simulateLong = `simulate builds the ResourceSlices every node of the cluster file would
publish (same code as the node agent), loads DeviceClasses, ResourceClaims
and ResourceClaimTemplates from -f (files, or directories with their subdirectories; multi-document
YAML as for kubectl), and allocates the claims in order with the upstream
structured allocator, so later claims see what earlier ones took. Nodes are
tried in cluster-file order, except that a node where a claim gets its
first firstAvailable choice wins over one that needs a fallback; each
template stands for one claim.

Each node publishes its chips in the modes its chipModes field in the
cluster file gives (the node agent's --chip-modes syntax); nodes without it
take --chip-modes, by default every chip Whole, as the agent. So a vNPU or
sMLU claim fits only on nodes whose chips are Partitioned.

A claim that cannot be allocated is reported with the reason: per request,
how many devices its DeviceClass matched, how many passed the request's
selectors, how many were still free, and for matchAttribute constraints the
largest free group on one node. --explain prints the same counts for every
claim. Invalid input (bad YAML, unknown profile or DeviceClass, CEL that
does not compile, malformed chipModes) exits non-zero naming the file and
object or node.`

const simulateExample = `  # the bundled mixed cluster and demo claims (what "make demo" runs)
  accel-dra simulate --cluster demo/cluster.yaml -f deployments/helm/accel-dra/deviceclasses -f demo/workloads

  # your own claim, with the candidate counts for each request, as JSON
  accel-dra simulate --cluster demo/cluster.yaml -f deployments/helm/accel-dra/deviceclasses -f my-claim.yaml --explain -o json

  # a vNPU and an sMLU claim, with partitions offered on every node that sets no chipModes
  accel-dra simulate --cluster demo/cluster.yaml --chip-modes Partitioned -f deployments/helm/accel-dra/deviceclasses -f pkg/simulate/testdata/partition-claims.yaml`

// runSimulate builds the cluster, loads the objects and allocates the
// claims as f says.
func runSimulate(ctx context.Context, reg vendors.Registry, f simulateFlags) (*simulate.Result, error) {
	policy, err := partitions.ParsePolicy(reg, f.chipModes)
	if err != nil {
		return nil, fmt.Errorf("--chip-modes: %w", err)
	}
	data, err := inputfile.Read("cluster file", f.clusterFile)
	if err != nil {
		return nil, err
	}
	c, err := v1alpha1.ParseSimulatedCluster(f.clusterFile, data)
	if err != nil {
		return nil, err
	}
	cluster, err := simulate.BuildCluster(ctx, c, simulate.ClusterOptions{Registry: reg, Policy: policy})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.clusterFile, err)
	}
	configs, err := reg.ConfigDecoder()
	if err != nil {
		return nil, err
	}
	// A claim whose config the webhook would refuse is an error,
	// in the webhook's words, not a claim simulated as allocated.
	in, err := simulate.LoadChecked(f.files, func(obj runtime.Object, name string) error {
		return webhook.Validate(configs, obj, name)
	})
	if err != nil {
		return nil, err
	}
	if f.output != "table" && f.output != "json" && f.output != "yaml" {
		return nil, fmt.Errorf("--output %q: must be table, json or yaml", f.output)
	}
	return simulate.Run(ctx, cluster, in, simulate.Options{Explain: f.explainAll})
}

// printSimulation writes res in output's format.
func printSimulation(w io.Writer, output string, res *simulate.Result) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case "yaml":
		b, err := yaml.Marshal(res)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CLAIM\tNODE\tREQUEST\tDEVICE\tMODEL\tLINK GROUP")
		for _, cr := range res.Claims {
			if !cr.Allocated {
				fmt.Fprintf(tw, "%s/%s\t-\t-\t-\t-\t-\n  not allocated: %s\n", cr.Namespace, cr.Name, cr.Reason)
				continue
			}
			for _, d := range cr.Devices {
				fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s/%s\t%v\t%v\n", cr.Namespace, cr.Name, cr.Node, d.Request, d.Driver, d.Device,
					d.Attributes["accel-dra.dev/model"], d.Attributes["accel-dra.dev/linkGroup"])
			}
			for _, e := range cr.Explanation {
				fmt.Fprintf(tw, "  candidates: %s\n", e)
			}
		}
		return tw.Flush()
	}
	return fmt.Errorf("--output %q: must be table, json or yaml", output)
}

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
	"fmt"

	"github.com/spf13/cobra"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/topology"
)

func newTopologyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "The fabric above the nodes, as the placement engines read it",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTopologyExportCommand())
	return cmd
}

func newTopologyExportCommand() *cobra.Command {
	var engine string
	var levels []string
	cmd := &cobra.Command{
		Use:     "export --for volcano|kueue|podgroup [--levels spine,leaf,superpod]",
		Short:   "Print the engine configuration that keeps a gang in one fabric domain, from the live nodes' labels",
		Long:    topologyLong,
		Example: topologyExample,
		Args:    cobra.NoArgs,
	}
	conn := livecluster.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&engine, "for", "", "The engine: volcano (label discovery of HyperNodes), kueue (a Topology) or podgroup (kube-scheduler's topology constraint)")
	cmd.Flags().StringSliceVar(&levels, "levels", nil, "The levels to use, highest first (spine, leaf, superpod); default: every level some node has")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		want, err := topology.ParseLevels(levels)
		if err != nil {
			return err
		}
		if err := topology.CheckEngine(engine); err != nil {
			return err
		}
		c, err := connect(conn)
		if err != nil {
			return err
		}
		nodes, err := c.Nodes(cmd.Context())
		if err != nil {
			return err
		}
		f, err := topology.Read(nodes, want)
		if err != nil {
			return fmt.Errorf("the fabric of the cluster at %s: %w", c.Server, err)
		}
		out, err := topology.Export(f, engine)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprint(cmd.ErrOrStderr(), topology.Summary(f)); err != nil {
			return err
		}
		_, err = fmt.Fprint(cmd.OutOrStdout(), out)
		return err
	}
	return cmd
}

const topologyLong = `topology export reads the Nodes of the cluster your kubeconfig points at
(as kubectl does) and prints, from their fabric labels
(accel-dra.dev/fabric-spine, accel-dra.dev/fabric-leaf,
accel-dra.dev/superpod, which the node agents write), the configuration
that lets an engine keep a gang inside one domain:

  volcano   the label discovery of Volcano's controller (v1.13 or newer),
            which builds one HyperNode per domain
  kueue     Kueue's Topology (kueue.x-k8s.io/v1beta2) for topology-aware
            scheduling, levels ending at kubernetes.io/hostname
  podgroup  the schedulingConstraints of a PodGroup for kube-scheduler's
            topology-aware workload scheduling (alpha), in the smallest domain

The levels are those some node has, highest first; they must nest (every
node of a domain in one domain of each level above). It prints how many
domains and nodes each level has on stderr, and never writes to the
cluster: it only lists Nodes.`

const topologyExample = `  # Volcano's label discovery; merge into volcano-controller-configmap
  accel-dra topology export --for volcano

  # Kueue's Topology, applied as it is
  accel-dra topology export --for kueue | kubectl apply -f -

  # A3 super pods whose leaf switches span super pods: leave the leaf out
  accel-dra topology export --for kueue --levels spine,superpod`

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
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/why"
)

func newWhyCommand(reg vendors.Registry) *cobra.Command {
	var agentSelector string
	var allocatorTimeout time.Duration
	var conn *livecluster.Flags
	cmd := &cobra.Command{
		Use:   "why pod/NAME | claim/NAME [-n NAMESPACE | -A]",
		Short: "Explain, on a live cluster, why a pod or ResourceClaim waits for its chips",
		Long: `why reads the cluster with your kubeconfig, as kubectl does, and never
writes to it.

For each claim that is not allocated it runs the upstream structured
allocator (the scheduler's code, with kube-scheduler 1.37's default DRA
features) over every ResourceSlice, the DeviceClasses and every allocated
claim, on the nodes the pod may go to (its nodeName, nodeSelector and
required node affinity, node taints against its tolerations). Per request
it prints how many devices the class matched, how many pass the request's
selectors, how many of those are free and untainted, the largest free
matchAttribute group on one node, and the nearest node with what it lacks;
then whether one allocated claim's going away would make room, naming it
and its pods. These are the counts of simulate --explain.

For an allocated claim it prints its devices and node; for a pod on a
node that stays in ContainerCreating, the kubelet's prepare error
(` + why.PrepareFailedReason + ` events) and the node agent pod whose log
says more.

An unknown pod or claim, one in another namespace (use -n, or -A to look
in all), a claim of another DRA driver, or a claim naming a DeviceClass
that does not exist is an error of one line; so is a cluster that cannot
be reached or refuses the read (bind the ClusterRole ` + livecluster.ViewerRole + `).`,
		Example: `  # why does the pod wait?
  accel-dra why pod/trainer -n team-a

  # the same, as a kubectl plugin, for a claim found in any namespace
  kubectl accel-dra why claim/trainer-npus-x7k2q -A`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one argument, pod/NAME or claim/NAME; got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := why.ParseTarget(args[0])
			if err != nil {
				return err
			}
			c, err := connect(conn)
			if err != nil {
				return err
			}
			lines, err := why.Explain(cmd.Context(), c, target, why.Options{Namespace: c.Namespace, AllNamespaces: conn.AllNamespaces, AgentSelector: agentSelector, Registry: reg, AllocatorTimeout: allocatorTimeout})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), strings.Join(lines, "\n"))
			return err
		},
	}
	conn = livecluster.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&agentSelector, "agent-selector", why.DefaultAgentSelector, "label selector of the node agent's pods (the chart's DaemonSet)")
	cmd.Flags().DurationVar(&allocatorTimeout, "allocator-timeout", why.DefaultAllocatorTimeout, "how long the allocator may search for a place for the claims before why gives up")
	return cmd
}

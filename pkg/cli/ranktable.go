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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/accel-dra/accel-dra/pkg/livecluster"
	"github.com/accel-dra/accel-dra/pkg/ranktable"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// rankTableOptions are the flags of accel-dra ranktable.
type rankTableOptions struct {
	selector, output string
	pods             int
	timeout          time.Duration
}

func newRankTableCommand(reg vendors.Registry) *cobra.Command {
	var o rankTableOptions
	cmd := &cobra.Command{
		Use:     "ranktable -l SELECTOR --pods N [-o FILE] [--timeout D]",
		Short:   "Wait until every pod of a job has its chips, then write the job's HCCL rank table",
		Long:    rankTableLong,
		Example: rankTableExample,
		Args:    cobra.NoArgs,
	}
	conn := livecluster.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "Label selector of the job's pods (e.g. job-name=train)")
	cmd.Flags().IntVar(&o.pods, "pods", 0, "How many pods the job has: the table waits for all of them")
	cmd.Flags().StringVarP(&o.output, "output", "o", "-", "File to write the rank table to (written whole, by rename); - for stdout")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long to wait for the pods' claims to be prepared")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.selector == "" || o.pods <= 0 {
			return errors.New("--selector and --pods (at least 1) are required: they say which pods make up the job")
		}
		c, err := connect(conn)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
		defer cancel()
		members, err := ranktable.Collect(ctx, ranktable.Job{Client: c.Client, Namespace: c.Namespace, Selector: o.selector, Pods: o.pods, Drivers: drivers(reg)})
		if err != nil {
			return err
		}
		table, err := ranktable.Build(members)
		if err != nil {
			return err
		}
		data, err := json.MarshalIndent(table, "", "    ")
		if err != nil {
			return fmt.Errorf("encoding the rank table: %w", err)
		}
		return writeOutput(cmd, o.output, append(data, '\n'))
	}
	return cmd
}

// drivers are the DRA drivers of reg's vendors.
func drivers(reg vendors.Registry) []string {
	var out []string
	for _, v := range reg.All() {
		out = append(out, v.Names().Driver)
	}
	return out
}

// writeOutput writes data to stdout ("-") or, through a temporary file
// renamed over it, to path: a launcher reading the file never sees half a
// table.
func writeOutput(cmd *cobra.Command, path string, data []byte) error {
	if path == "-" {
		_, err := cmd.OutOrStdout().Write(data)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ranktable-*")
	if err != nil {
		return fmt.Errorf("writing the rank table to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the rank table to %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the rank table to %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the rank table to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the rank table to %s: %w", path, err)
	}
	return nil
}

const rankTableLong = `ranktable writes the HCCL rank table (hccl.json) of a multi-node job on
Ascend chips, as mind-cluster's ascend-operator does, from what the
accel-dra node agents write into each claim's status when they prepare
it: every chip's index, RoCE address (deviceIP) and, on super pod chips
(Atlas A3), its super pod and SDID.

It waits until the --pods pods matching --selector in the namespace (-n,
else the kubeconfig's or, in a pod, its own) are on their nodes and every
claim of theirs is prepared, then writes version 1.0 (chips without a
super pod, 910B) or 1.2 with super_pod_list (super pod chips). Ranks
follow the pods' completion index (an indexed Job), else their names,
then each pod's chips by index.

It exits non-zero, saying which pod, claim or device, on a pod without
chips of accel-dra, chips of two generations in one job, a chip without
a device IP, two pods on one node, or when --timeout passes first. As an
init container of each pod (from the accel-dra image, /usr/bin/accel-dra)
it needs get and list on pods and get on resourceclaims in the namespace;
it never writes to the cluster.`

const rankTableExample = `  # in an init container: the table of the 4 pods of Job train
  accel-dra ranktable -l job-name=train --pods 4 -o /etc/hccl/hccl.json`

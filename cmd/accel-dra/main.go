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

// Command accel-dra discovers local Ascend and Cambricon chips and shows
// them as Kubernetes DRA devices, simulates allocation, and shows the chips
// of a live cluster. Installed as kubectl-accel_dra it is the kubectl
// plugin `kubectl accel-dra`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/accel-dra/accel-dra/pkg/cli"
	"github.com/accel-dra/accel-dra/pkg/logflags"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "accel-dra:", err)
		os.Exit(1)
	}
}

// newCommand is the CLI with Kubernetes' logging flags (-v,
// --logging-format, ...) on every subcommand: discovery logs what it
// skips or finds unhealthy on stderr, apart from the output on stdout.
func newCommand() *cobra.Command {
	cmd := cli.NewRootCommand(all.Registry())
	cli.SetInvokedAs(cmd, os.Args[0])
	logging := logflags.Add(cmd.PersistentFlags(), "")
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		return logging.Apply(cmd.ErrOrStderr())
	}
	return cmd
}

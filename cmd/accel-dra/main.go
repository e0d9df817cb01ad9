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

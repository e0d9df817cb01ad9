// Command accel-dra discovers local Ascend and Cambricon chips and shows
// them as Kubernetes DRA devices.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/accel-dra/accel-dra/pkg/cli"
	// Every vendor accel-dra supports (pkg/vendors).
	_ "github.com/accel-dra/accel-dra/pkg/vendors/all"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.NewRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "accel-dra:", err)
		os.Exit(1)
	}
}

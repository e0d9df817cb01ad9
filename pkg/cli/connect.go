package cli

import "github.com/accel-dra/accel-dra/pkg/livecluster"

// connect opens the connection the flags describe, for the cluster-facing
// commands (chips, why); tests put a fake cluster behind it.
var connect = (*livecluster.Flags).Connect

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

// Command accel-dra-cdi-hook is the createContainer hook that accel-dra's
// Ascend CDI specs name: the container runtime runs it as root on the
// node, with the container's OCI state on stdin, and it adds the driver's
// library directories to the container's ld.so cache (pkg/cdihook).
//
//	accel-dra-cdi-hook cdi-hook update-ldcache [--ldconfig=PATH] --folder=DIR...
//
// It is a static binary of its own, not the node agent's (which loads the
// vendor libraries through a dynamic loader): nothing of the container's
// environment can change what runs as root.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/accel-dra/accel-dra/pkg/cdihook"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != cdihook.Subcommand {
		fmt.Fprintf(os.Stderr, "usage: %s %s %s [--ldconfig=PATH] --folder=DIR...\n(run by the container runtime as a CDI createContainer hook, the container's state on stdin)\n",
			cdihook.File, cdihook.Subcommand, cdihook.ActionUpdateLDCache)
		os.Exit(2)
	}
	if err := cdihook.Run(context.Background(), os.Args[2:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, cdihook.File+":", err)
		os.Exit(1)
	}
}

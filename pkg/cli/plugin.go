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
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// PluginBinary is the name kubectl finds the CLI by as a plugin: installed
// (or symlinked) as kubectl-accel_dra on PATH, it runs as `kubectl
// accel-dra ...` (kubectl maps the dash of a plugin's command to an
// underscore in the file name).
const PluginBinary = "kubectl-accel_dra"

// SetInvokedAs names the root command after how the binary was invoked
// (argv0, os.Args[0]): as kubectl-accel_dra, usage and help say `kubectl
// accel-dra`; otherwise accel-dra.
func SetInvokedAs(root *cobra.Command, argv0 string) {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if base != PluginBinary {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl accel-dra"
}

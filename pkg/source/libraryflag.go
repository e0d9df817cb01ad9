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

package source

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// AddLibraryFlags adds to fs the flag of every vendor of reg with a
// management library (vendors.Names.LibraryFlag: --dcmi-library,
// --cndev-library), each setting that vendor's entry of m. With env, each
// usage names its environment variable (ACCEL_DRA_DCMI_LIBRARY) for
// pkg/flagenv, as the node agent's flags do; suffix is appended to the
// usage before it.
func AddLibraryFlags(fs *pflag.FlagSet, reg vendors.Registry, m map[string]string, env bool, suffix string) {
	for _, v := range reg.All() {
		n := v.Names()
		if n.LibraryFlag == "" {
			continue
		}
		usage := n.LibraryHelp + suffix
		if env {
			usage += " " + envOf(n.LibraryFlag)
		}
		fs.Var(LibraryFlag(m, n.Option), n.LibraryFlag, usage)
	}
}

// AddToolFlags adds to fs the flag of every tool of a vendor of reg
// (vendors.Names.Tool: --npu-smi, --cnmon), each setting that tool's entry
// of m (Options.Tools). With env, each usage names its environment
// variable (ACCEL_DRA_NPU_SMI) for pkg/flagenv.
func AddToolFlags(fs *pflag.FlagSet, reg vendors.Registry, m map[string]string, env bool) {
	for _, v := range reg.All() {
		n := v.Names()
		usage := n.ToolHelp
		if env {
			usage += " " + envOf(n.Tool)
		}
		fs.Var(mapFlag{m: m, key: n.Tool, typ: "string"}, n.Tool, usage)
	}
}

// VendorsHelp is the usage of a --vendors flag selecting among the
// vendors of reg (by their option names), without its environment
// variable.
func VendorsHelp(reg vendors.Registry) string {
	return "serve only these vendors' chips: " + strings.Join(reg.Options(), ", ") + " (comma list); default: every vendor found"
}

// NoChipsError is the error of a node where discovery of the vendors
// options select (all of reg's when empty) found no chip under root.
func NoChipsError(reg vendors.Registry, options []string, root string) error {
	if len(options) == 0 {
		options = reg.Options()
	}
	return fmt.Errorf("no %s chips found under %s: nothing to serve", strings.Join(options, " or "), root)
}

// envOf is the environment variable pkg/flagenv reads for flag name, in
// brackets.
func envOf(name string) string {
	return "[ACCEL_DRA_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "]"
}

// LibraryFlag is a flag (--dcmi-library, --cndev-library) that sets one
// vendor's entry of Options.Libraries: m[option], "" leaving the vendor's
// default paths.
func LibraryFlag(m map[string]string, option string) pflag.Value {
	return mapFlag{m: m, key: option, typ: "path"}
}

// mapFlag is a flag that sets one entry of a map.
type mapFlag struct {
	m        map[string]string
	key, typ string
}

func (f mapFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m[f.key]
}

func (f mapFlag) Set(v string) error {
	f.m[f.key] = v
	return nil
}

func (f mapFlag) Type() string { return f.typ }

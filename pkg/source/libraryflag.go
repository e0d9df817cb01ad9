package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// AddLibraryFlags adds to fs the flag of every registered vendor with a
// management library (vendors.Names.LibraryFlag: --dcmi-library,
// --cndev-library), each setting that vendor's entry of m. With env, each
// usage names its environment variable (ACCEL_DRA_DCMI_LIBRARY) for
// pkg/flagenv, as the node agent's flags do; suffix is appended to the
// usage before it.
func AddLibraryFlags(fs *pflag.FlagSet, m map[string]string, env bool, suffix string) {
	for _, v := range vendors.All() {
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

// AddToolFlags adds to fs the flag of every registered vendor's tool
// (vendors.Names.Tool: --npu-smi, --cnmon), each setting that tool's entry
// of m (Options.Tools). With env, each usage names its environment
// variable (ACCEL_DRA_NPU_SMI) for pkg/flagenv.
func AddToolFlags(fs *pflag.FlagSet, m map[string]string, env bool) {
	for _, v := range vendors.All() {
		n := v.Names()
		usage := n.ToolHelp
		if env {
			usage += " " + envOf(n.Tool)
		}
		fs.Var(mapFlag{m: m, key: n.Tool, typ: "string"}, n.Tool, usage)
	}
}

// VendorsHelp is the usage of a --vendors flag selecting among vs (by
// their option names), without its environment variable.
func VendorsHelp(vs []vendors.Vendor) string {
	return "serve only these vendors' chips: " + strings.Join(optionsOf(vs), ", ") + " (comma list); default: every vendor found"
}

// optionsOf lists the --vendors values of vs, sorted.
func optionsOf(vs []vendors.Vendor) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Names().Option)
	}
	sort.Strings(out)
	return out
}

// NoChipsError is the error of a node where discovery of the vendors
// options select (all of vs when empty) found no chip under root.
func NoChipsError(vs []vendors.Vendor, options []string, root string) error {
	if len(options) == 0 {
		options = optionsOf(vs)
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

package source

import (
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
			usage += " [ACCEL_DRA_" + strings.ToUpper(strings.ReplaceAll(n.LibraryFlag, "-", "_")) + "]"
		}
		fs.Var(LibraryFlag(m, n.Option), n.LibraryFlag, usage)
	}
}

// LibraryFlag is a flag (--dcmi-library, --cndev-library) that sets one
// vendor's entry of Options.Libraries: m[option], "" leaving the vendor's
// default paths.
func LibraryFlag(m map[string]string, option string) pflag.Value {
	return libraryFlag{m: m, option: option}
}

type libraryFlag struct {
	m      map[string]string
	option string
}

func (f libraryFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m[f.option]
}

func (f libraryFlag) Set(v string) error {
	f.m[f.option] = v
	return nil
}

func (libraryFlag) Type() string { return "path" }

package source

import "github.com/spf13/pflag"

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

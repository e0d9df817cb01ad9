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

// Package flagenv lets every flag of a command be set by an environment
// variable too, as a DaemonSet or Deployment sets them. A flag names its
// variable at the end of its usage text, in brackets: "... [ACCEL_DRA_ROOT]"
// (or "[ACCEL_DRA_FAKE_DEVICES=true]" to show a value), so --help and the
// behaviour cannot disagree.
package flagenv

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/pflag"
)

// varInUsage is the bracketed variable at the end of a usage text.
var varInUsage = regexp.MustCompile(`\[([A-Z][A-Z0-9_]*)(=[^\]]*)?\]$`)

// Var returns the environment variable a flag's usage names, or "".
func Var(f *pflag.Flag) string {
	m := varInUsage.FindStringSubmatch(f.Usage)
	if m == nil {
		return ""
	}
	return m[1]
}

// Apply sets every flag that was not given on the command line from its
// variable, where that is set: the command line beats the environment,
// which beats the default. A value that does not parse is an error naming
// the variable and the flag; all of them are reported at once.
func Apply(fs *pflag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		name := Var(f)
		if name == "" || f.Changed {
			return
		}
		v, ok := os.LookupEnv(name)
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s (--%s): %w", name, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

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

package ascend

// The driver version comes from the driver package's version file,
// /usr/local/Ascend/driver/version.info, "key=value" lines led by the
// driver's own version:
//
//	Version=24.1.rc2.2
//	ascendhal_version=7.35.23
//	…
//
// It is the file every Ascend container mounts read-only
// (docs/hardware.md#what-a-container-gets); the recordings of its layout
// are in testdata/README.md.

import (
	"fmt"

	"github.com/accel-dra/accel-dra/pkg/discovery"
)

// VersionInfoPath is where the driver package records its version, relative
// to the host root.
const VersionInfoPath = "/usr/local/Ascend/driver/version.info"

// ParseVersionInfo returns the "Version=" entry of a driver version.info in
// semantic-version form (23.0.rc3 → 23.0.0-rc3). source names the file, for
// errors.
func ParseVersionInfo(source string, data []byte) (string, error) {
	perr := func(line int, text, format string, args ...any) error {
		return &discovery.ParseError{Source: source, Line: line, Text: text, Msg: fmt.Sprintf(format, args...)}
	}
	version, versionLine := "", 0
	for l := range keyValueLines(data, "=") {
		if !l.HasSep {
			return "", perr(l.No, l.Text, `expected a "key=value" line`)
		}
		if l.Key != "Version" {
			continue
		}
		if versionLine > 0 {
			return "", perr(l.No, l.Text, "Version is given twice (first on line %d)", versionLine)
		}
		v, err := discovery.SemverFromVendor(l.Value)
		if err != nil {
			return "", perr(l.No, l.Text, "%v", err)
		}
		version, versionLine = v, l.No
	}
	if versionLine == 0 {
		return "", &discovery.ParseError{Source: source, Msg: `no "Version=" line`}
	}
	return version, nil
}

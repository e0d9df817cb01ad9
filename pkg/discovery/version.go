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

package discovery

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

var (
	// 23.0.rc3, 24.1.RC2 (Ascend release candidates)
	rcVersion = regexp.MustCompile(`(?i)^(\d+)\.(\d+)\.rc(\d+)(?:\.(.+))?$`)
	// 23.0.3.1, 7.0.0.5 (four-part Ascend patch versions)
	fourPart = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)\.(\d+)$`)
)

// SemverFromVendor turns a vendor driver version (Ascend 23.0.3, 23.0.rc3,
// 24.1.RC2.b030, 23.0.3.1; Cambricon v4.20.18) into semantic-version form
// (23.0.3, 23.0.0-rc3, 24.1.0-rc2+b030, 23.0.3+1, 4.20.18), because the
// accel-dra.dev/driverVersion attribute is of type version and CEL compares
// it with semver rules.
func SemverFromVendor(s string) (string, error) {
	in := strings.TrimSpace(s)
	v := strings.TrimPrefix(strings.TrimPrefix(in, "v"), "V")
	if m := rcVersion.FindStringSubmatch(v); m != nil {
		v = fmt.Sprintf("%s.%s.0-rc%s", m[1], m[2], m[3])
		if m[4] != "" {
			v += "+" + strings.ToLower(m[4])
		}
	} else if m := fourPart.FindStringSubmatch(v); m != nil {
		v = fmt.Sprintf("%s.%s.%s+%s", m[1], m[2], m[3], m[4])
	}
	parsed, err := version.ParseSemantic(v)
	if err != nil {
		return "", fmt.Errorf("driver version %q is not a version accel-dra understands: %w", in, err)
	}
	return parsed.String(), nil
}

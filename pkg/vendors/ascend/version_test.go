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

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/discovery/discoverytest"
)

func TestParseVersionInfoReadsTheDriverVersion(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{name: "a release", text: "Version=23.0.3\nascendhal_version=7.35.19\nInnerversion=V100R001C15SPC003B220\n", want: "23.0.3"},
		{name: "a release candidate", text: "Version=24.1.rc1\nascendhal_version=7.35.19\n", want: "24.1.0-rc1"},
		{name: "a patched release candidate, CRLF and blank lines", text: "\r\nVersion=24.1.rc2.2\r\n\r\npackage_version=24.1.rc2.2\r\n", want: "24.1.0-rc2+2"},
		{name: "a Version line after the others", text: "aicpu_version=1.0\n Version = 25.2.0 \n", want: "25.2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVersionInfo("version.info", []byte(tc.text))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseVersionInfoRejectsGarbledFilesNamingFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		line int
		msg  string
	}{
		{name: "a line without key and value", text: "Version=23.0.3\nascendhal 7.35.19\n", line: 2, msg: `expected a "key=value" line`},
		{name: "a version that is not a version", text: "Version=unknown\n", line: 1, msg: `driver version "unknown" is not a version accel-dra understands`},
		{name: "two versions", text: "Version=23.0.3\nVersion=24.1.0\n", line: 2, msg: "Version is given twice (first on line 1)"},
		{name: "no version", text: "package_version=23.0.3\n", line: 0, msg: `no "Version=" line`},
		{name: "an empty file", text: "", line: 0, msg: `no "Version=" line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseVersionInfo("/usr/local/Ascend/driver/version.info", []byte(tc.text))
			discoverytest.RequireParseError(t, err, "/usr/local/Ascend/driver/version.info", tc.line, tc.msg)
		})
	}
}

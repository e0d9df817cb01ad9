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

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// run runs the CLI with args and returns its stdout and stderr.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// Logging is process-wide: put the defaults back for the next test.
	t.Cleanup(func() { require.NoError(t, logsapi.ResetForTest(nil)) })
	var out, errOut bytes.Buffer
	cmd := newCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// Discovery on a root without chips logs, at -v 4, that it skips each
// vendor's tool: with --logging-format=json every such line on stderr is a
// JSON object, and the table still goes to stdout.
func TestJSONLogsGoToStderrApartFromTheOutput(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "dev"), 0o755))
	stdout, stderr, err := run(t, "discover", "--root", root, "--node-name", "n", "-v=4", "--logging-format=json")
	require.NoError(t, err)
	require.Contains(t, stdout, "DEVICE")
	require.NotEmpty(t, stderr, "discovery logs at -v 4")
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var entry struct {
			Msg string `json:"msg"`
			V   int    `json:"v"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "not a JSON line: %s", line)
		require.NotEmpty(t, entry.Msg)
	}
}

func TestABadLoggingFormatIsAClearError(t *testing.T) {
	_, _, err := run(t, "discover", "--profile", "mlu270", "--logging-format=xml")
	require.EqualError(t, err, `logging flags: format: Invalid value: "xml": Unsupported log format`)
}

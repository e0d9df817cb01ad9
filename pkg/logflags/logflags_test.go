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

package logflags_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/logflags"
)

// logWith parses args (and the environment, as the binaries do), applies
// the logging flags and logs one line at -v 0, one at -v 2, one at -v 3
// and one error; it returns what was written, or the Apply error.
func logWith(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// Logging is process-wide: put the defaults back for the next test.
	t.Cleanup(func() { require.NoError(t, logsapi.ResetForTest(nil)) })
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	cfg := logflags.Add(fs, "ACCEL_DRA_LOGGING_FORMAT")
	require.NoError(t, fs.Parse(args))
	require.NoError(t, flagenv.Apply(fs))
	var out bytes.Buffer
	if err := cfg.Apply(&out); err != nil {
		return "", err
	}
	logger := klog.Background()
	logger.Info("Serving", "address", ":51515")
	logger.V(2).Info("Chip added", "device", "npu-0")
	logger.V(3).Info("Not shown at -v 2")
	logger.Error(errors.New("npu-smi timed out"), "Cannot re-read the chips", "vendor", "huawei")
	logs.FlushLogs()
	return out.String(), nil
}

func TestJSONFormatWritesOneJSONObjectPerLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{name: "flag", args: []string{"--logging-format=json", "-v=2"}},
		{name: "environment variable", args: []string{"-v=2"}, env: "json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("ACCEL_DRA_LOGGING_FORMAT", tc.env)
			}
			out, err := logWith(t, tc.args...)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, 3, "the -v 3 line is left out:\n%s", out)
			var entries []map[string]any
			for _, l := range lines {
				var e map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &e), "not a JSON line: %s", l)
				entries = append(entries, e)
			}
			require.Equal(t, "Serving", entries[0]["msg"])
			require.Equal(t, ":51515", entries[0]["address"])
			require.Equal(t, "Chip added", entries[1]["msg"])
			require.Equal(t, "npu-0", entries[1]["device"])
			require.EqualValues(t, 2, entries[1]["v"])
			require.Equal(t, "Cannot re-read the chips", entries[2]["msg"])
			require.Equal(t, "npu-smi timed out", entries[2]["err"])
		})
	}
}

func TestTextFormatIsTheDefault(t *testing.T) {
	out, err := logWith(t, "-v=2")
	require.NoError(t, err)
	require.Contains(t, out, `"Serving" address=":51515"`)
	require.Contains(t, out, `"Chip added" device="npu-0"`)
	require.Contains(t, out, `"Cannot re-read the chips" err="npu-smi timed out" vendor="huawei"`)
	require.NotContains(t, out, "Not shown")
	require.NotContains(t, out, "{")
}

func TestBadLoggingFlagsAreClearErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown format", args: []string{"--logging-format=xml"},
			want: `logging flags: format: Invalid value: "xml": Unsupported log format`},
		{name: "vmodule is text only", args: []string{"--logging-format=json", "--vmodule=driver=4"},
			want: `logging flags: vmodule: Forbidden: Only supported for text log format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := logWith(t, tc.args...)
			require.EqualError(t, err, tc.want)
		})
	}
}

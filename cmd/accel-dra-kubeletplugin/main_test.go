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
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/flagenv"
	"github.com/accel-dra/accel-dra/pkg/logflags"
)

// Every flag of ours can be set by the variable its usage names, as the
// chart's DaemonSet sets them; of Kubernetes' logging flags only
// --logging-format is.
func TestEveryFlagNamesItsEnvironmentVariable(t *testing.T) {
	logging := pflag.NewFlagSet("logging", pflag.ContinueOnError)
	logflags.Add(logging, "")
	seen := map[string]string{}
	newCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if logging.Lookup(f.Name) != nil && f.Name != "logging-format" {
			return
		}
		env := flagenv.Var(f)
		require.NotEmpty(t, env, "--%s names no environment variable in its usage", f.Name)
		require.NotContains(t, seen, env, "--%s and --%s share %s", f.Name, seen[env], env)
		seen[env] = f.Name
	})
}

// A bad value from the environment stops the agent before it does
// anything, naming the variable and the flag.
func TestBadEnvironmentValuesAreErrors(t *testing.T) {
	t.Setenv("ACCEL_DRA_FAKE_DEVICES", "yes please")
	cmd := newCommand()
	cmd.SetArgs(nil)
	require.EqualError(t, cmd.Execute(), `environment variable ACCEL_DRA_FAKE_DEVICES (--fake-devices): invalid argument "yes please" for "--fake-devices" flag: strconv.ParseBool: parsing "yes please": invalid syntax`)
}

// Durations are flag.Duration values: a bad one is pflag's error naming
// the flag (and the variable it came from), zero is refused where it makes
// no sense, and the command line beats the environment. A partition mode
// is one of the declared modes.
func TestFlagValuesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "not a duration, from the environment", env: map[string]string{"ACCEL_DRA_TOOL_TIMEOUT": "soon"},
			want: `environment variable ACCEL_DRA_TOOL_TIMEOUT (--tool-timeout): invalid argument "soon" for "--tool-timeout" flag: time: invalid duration "soon"`},
		{name: "not a duration, on the command line", args: []string{"--health-interval=often"},
			want: `invalid argument "often" for "--health-interval" flag: time: invalid duration "often"`},
		{name: "the command line beats the variable", env: map[string]string{"ACCEL_DRA_TOOL_TIMEOUT": "soon"}, args: []string{"--tool-timeout=0s"},
			want: `--tool-timeout 0s: want a positive duration such as 30s`},
		{name: "a negative tool timeout", env: map[string]string{"ACCEL_DRA_TOOL_TIMEOUT": "-5s"},
			want: `--tool-timeout -5s: want a positive duration such as 30s`},
		{name: "no library call timeout", args: []string{"--library-call-timeout=0s"},
			want: `--library-call-timeout 0s: want a positive duration such as 10s`},
		{name: "a hang limit shorter than the call timeout", env: map[string]string{"ACCEL_DRA_LIBRARY_HANG_LIMIT": "5s"},
			want: `--library-hang-limit 5s: want at least --library-call-timeout (10s): a call is hung only after its deadline`},
		{name: "a partition mode the agent does not have, from the environment", env: map[string]string{"ACCEL_DRA_PARTITION_MODE": "docker"},
			want: `--partition-mode: partition mode "docker" is not one of auto, on, off`},
		{name: "a partition mode the agent does not have", args: []string{"--partition-mode=On"},
			want: `--partition-mode: partition mode "On" is not one of auto, on, off`},
		{name: "a bad logging format, from the environment", env: map[string]string{"ACCEL_DRA_LOGGING_FORMAT": "xml"},
			want: `logging flags: format: Invalid value: "xml": Unsupported log format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cmd := newCommand()
			cmd.SetArgs(tc.args)
			require.EqualError(t, cmd.Execute(), tc.want)
		})
	}
}

// The agent's client is not held to client-go's 5 requests per second:
// each prepare makes three requests.
func TestClientConfigRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600))
	cfg, err := clientConfig(path)
	require.NoError(t, err)
	require.Equal(t, float32(50), cfg.QPS)
	require.Equal(t, 100, cfg.Burst)
}

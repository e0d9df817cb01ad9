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
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cannedRunner answers every command with out, or fails with err.
type cannedRunner struct {
	out   string
	err   error
	lines []string
}

func (r *cannedRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.lines = append(r.lines, CommandLine(name, args...))
	return []byte(r.out), r.err
}

func parseNumber(source string, data []byte) (int, error) {
	n, err := strconv.Atoi(string(data))
	if err != nil {
		return 0, &ParseError{Source: source, Line: 1, Text: string(data), Msg: "not a number"}
	}
	return n, nil
}

func TestQueryRunsTheToolAndParsesItsOutput(t *testing.T) {
	r := &cannedRunner{out: "42"}
	n, err := Query(context.Background(), r, "counting chips", parseNumber, "tool", "count", "-a")
	require.NoError(t, err)
	require.Equal(t, 42, n)
	require.Equal(t, []string{"tool count -a"}, r.lines)
}

func TestQuerySaysWhatItWasForWhenTheToolFails(t *testing.T) {
	boom := errors.New("running tool count: exit status 1")
	n, err := Query(context.Background(), &cannedRunner{out: "42", err: boom}, "counting chips", parseNumber, "tool", "count")
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "counting chips: running tool count: exit status 1")
	require.Zero(t, n)
}

func TestQueryNamesTheCommandLineInParseErrors(t *testing.T) {
	n, err := Query(context.Background(), &cannedRunner{out: "many"}, "counting chips", parseNumber, "tool", "count", "-a")
	var perr *ParseError
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, "tool count -a", perr.Source)
	require.EqualError(t, err, `counting chips: parsing tool count -a: line 1: not a number: "many"`)
	require.Zero(t, n)
}

func TestExecRunnerRunsTheToolAndBoundsItsTime(t *testing.T) {
	tools := map[string]string{"npu-smi": "testdata/tools/echo-args", "cnmon": "testdata/tools/fails", "hung": "testdata/tools/hangs"}
	tests := []struct {
		name    string
		timeout time.Duration
		cmd     []string
		want    string
		wantErr string
		timeOut bool
	}{
		{name: "output", cmd: []string{"npu-smi", "info", "-m"}, want: "info -m\n"},
		{name: "failure names the command and its stderr", cmd: []string{"cnmon", "info"},
			wantErr: "running cnmon info: exit status 3: Status : Error, Message : chip id is invalid"},
		{name: "a hanging tool is killed at the timeout", timeout: 50 * time.Millisecond, cmd: []string{"hung", "info", "-t", "topo"},
			wantErr: "running hung info -t topo: timed out after 50ms (--tool-timeout)", timeOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ExecRunner{Tools: tools, Timeout: tt.timeout}
			out, err := r.Run(context.Background(), tt.cmd[0], tt.cmd[1:]...)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Equal(t, tt.timeOut, errors.Is(err, ErrToolTimeout))
				require.Nil(t, out)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestExecRunnerDoesNotCallACancelledCallerATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ExecRunner{Tools: map[string]string{"hung": "testdata/tools/hangs"}}.Run(ctx, "hung")
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrToolTimeout), "%v", err)
	require.Contains(t, err.Error(), "running hung: ")
}

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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CommandRunner runs a vendor tool (npu-smi, cnmon) and returns its standard
// output. It is an interface so tests and fixture nodes can feed recorded
// output instead of running the tool.
type CommandRunner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// DefaultToolTimeout bounds one run of a vendor tool when ExecRunner has
// no Timeout: npu-smi and cnmon answer in well under a second, but a wedged
// driver can make them hang forever, and a hung prepare blocks every other
// claim of the driver.
const DefaultToolTimeout = 30 * time.Second

// toolWaitDelay is how long Run waits for the tool's output pipes to close
// after killing it, in case something it started holds them.
const toolWaitDelay = time.Second

// ExecRunner runs the real tools. Tools maps a command name to the path of
// the binary; names not in it are looked up in PATH.
type ExecRunner struct {
	Tools map[string]string
	// Timeout bounds each run (default DefaultToolTimeout); the tool and
	// everything it started are killed when it passes.
	Timeout time.Duration
}

// Run implements CommandRunner.
func (r ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := name
	if p, ok := r.Tools[name]; ok {
		path = p
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	// Its own process group, so a tool that is a script kills its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(context.Cause(ctx), errToolTimeout) {
		return nil, fmt.Errorf("running %s: %w after %s (--tool-timeout)", CommandLine(name, args...), ErrToolTimeout, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("running %s: %w: %s", CommandLine(name, args...), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ErrToolTimeout is wrapped by ExecRunner when a tool ran past its timeout.
var ErrToolTimeout = errors.New("timed out")

var errToolTimeout = fmt.Errorf("vendor tool %w", ErrToolTimeout)

// RecordedRunner answers each command with a file recorded earlier in Dir,
// named by RecordingName (e.g. "npu-smi info -t topo" → npu-smi_info_-t_topo.txt).
// A command without a recording fails like a missing tool would.
type RecordedRunner struct {
	Dir string
}

// ErrNoRecording is wrapped by RecordedRunner when a command has no file.
var ErrNoRecording = errors.New("no recorded output")

// Run implements CommandRunner.
func (r RecordedRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	path := filepath.Join(r.Dir, RecordingName(name, args...))
	out, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("running %s: %w in %s", CommandLine(name, args...), ErrNoRecording, path)
	}
	if err != nil {
		return nil, fmt.Errorf("running %s: reading recorded output: %w", CommandLine(name, args...), err)
	}
	return out, nil
}

// CommandLine renders a command for messages.
func CommandLine(name string, args ...string) string {
	return strings.Join(append([]string{name}, args...), " ")
}

// RecordingName is the file name RecordedRunner reads for a command.
func RecordingName(name string, args ...string) string {
	return strings.Join(append([]string{name}, args...), "_") + ".txt"
}

// Query runs a vendor tool query through runner and parses its output with
// parse, which is given the command line as the source to name in its
// errors. Either failure is wrapped with what the query is for (e.g.
// "listing MLU cards: running cnmon info: …").
func Query[T any](ctx context.Context, runner CommandRunner, what string, parse func(source string, data []byte) (T, error), name string, args ...string) (T, error) {
	out, err := runner.Run(ctx, name, args...)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	v, err := parse(CommandLine(name, args...), out)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

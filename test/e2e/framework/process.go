//go:build e2e

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

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one component process. Its stdout and stderr go to LogFile, a
// file the process writes itself, so a detached cluster keeps logging
// after the program that started it has exited.
type proc struct {
	Name    string   `json:"name"`
	PID     int      `json:"pid"`
	Args    []string `json:"args"`
	LogFile string   `json:"logFile"`

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned (own children only)
	err  error
}

// startProc runs bin with args. Attached processes (the tests) get
// SIGKILL when the test binary dies, so a panicking or timed-out test
// leaves no cluster behind; detached ones (demo-cluster up) get their own
// session and outlive the starter.
func startProc(name, logDir string, detached bool, env []string, bin string, args ...string) (*proc, error) {
	logFile := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &proc{Name: name, PID: cmd.Process.Pid, Args: append([]string{bin}, args...), LogFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	if p.done != nil {
		select {
		case <-p.done:
			return true, p.err
		default:
			return false, nil
		}
	}
	return !sameProcess(p.PID, p.Args), nil
}

// exitErr is nil while p runs, else how it ended, with its last log lines.
func (p *proc) exitErr() error {
	if done, err := p.exited(); done {
		return fmt.Errorf("%s exited (%s); last log lines:\n%s", p.Name, fmt.Sprint(err), p.logTail(30))
	}
	return nil
}

// sameProcess reports whether pid is still the process started with args
// (and not a zombie), so a recycled pid is never signalled.
func sameProcess(pid int, args []string) bool {
	if pid <= 0 || len(args) == 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return len(argv) > 0 && argv[0] == args[0]
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (p *proc) stop(grace time.Duration) error {
	if done, _ := p.exited(); done {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.wait(grace) {
		return nil
	}
	return p.kill()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() error {
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID, err)
	}
	if !p.wait(15 * time.Second) {
		return fmt.Errorf("%s (pid %d) still running 15s after SIGKILL", p.Name, p.PID)
	}
	return nil
}

func (p *proc) wait(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if done, _ := p.exited(); done {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTail returns the last n lines of the process's log.
func (p *proc) logTail(n int) string {
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pidsWithArg lists processes whose command line contains arg as one of
// its arguments, e.g. the containerd shims of one containerd socket.
func pidsWithArg(arg string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// output is what a command printed.
type output struct{ stdout, stderr string }

// run runs a short command and returns its combined output.
func run(timeout time.Duration, bin string, args ...string) (string, error) {
	out, err := runContext(context.Background(), timeout, bin, args...)
	return out.stdout + out.stderr, err
}

// runContext runs a command with a timeout; the error includes stderr.
func runContext(ctx context.Context, timeout time.Duration, bin string, args ...string) (output, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := output{stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s %s: timed out after %s", filepath.Base(bin), strings.Join(args, " "), timeout)
	}
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(out.stderr+out.stdout))
	}
	return out, nil
}

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
	"time"
)

// UserKubeconfig writes a kubeconfig for user, authenticated by a client
// certificate of the cluster's CA with common name user and the given
// groups: an ordinary user with only the rights RBAC gives that name.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, error) {
	kp, err := c.pki.client("user-"+user, user, groups...)
	if err != nil {
		return "", fmt.Errorf("issuing a client certificate for user %s: %w", user, err)
	}
	return c.kubeconfig("user-"+user, &kp, "")
}

// CLIResult is what a command line run printed and how it ended.
type CLIResult struct {
	Stdout, Stderr string
	// ExitCode is the process's exit status.
	ExitCode int
}

// RunCLI runs the accel-dra CLI of the e2e build (bin/accel-dra) with
// args against the cluster as kubeconfig (see UserKubeconfig, Kubeconfig)
// says. A non-zero exit is a result, not an error; err is for a CLI that
// could not be run.
func (c *Cluster) RunCLI(ctx context.Context, kubeconfig string, args ...string) (CLIResult, error) {
	return runCLI(ctx, c.bin("accel-dra"), []string{"KUBECONFIG=" + kubeconfig}, args...)
}

// RunKubectlPlugin runs `kubectl args...` (kubectl of the e2e build) with
// the CLI installed as the kubectl plugin kubectl-accel_dra, a symlink in a
// directory on PATH, as a user installs it (docs/cli.md), so kubectl finds
// it through its own plugin lookup.
func (c *Cluster) RunKubectlPlugin(ctx context.Context, kubeconfig string, args ...string) (CLIResult, error) {
	dir, err := c.dir("kubectl-plugins")
	if err != nil {
		return CLIResult{}, err
	}
	link := filepath.Join(dir, "kubectl-accel_dra")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(c.bin("accel-dra"), link); err != nil {
			return CLIResult{}, fmt.Errorf("installing the kubectl plugin: %w", err)
		}
	}
	// Only the plugin's directory and the system's: no other plugin can
	// shadow it.
	return runCLI(ctx, c.bin("kubectl"), []string{"KUBECONFIG=" + kubeconfig, "PATH=" + dir + ":/usr/bin:/bin", "HOME=" + dir}, args...)
}

// runCLI runs bin with env added to the test's environment.
func runCLI(ctx context.Context, bin string, env []string, args ...string) (CLIResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := CLIResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: exitCode(cmd)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("%s: timed out", filepath.Base(bin))
	}
	var exited *exec.ExitError
	if err != nil && !errors.As(err, &exited) {
		return res, fmt.Errorf("running %s: %w", bin, err)
	}
	return res, nil
}

// exitCode is the exit status of a command that ran, -1 if it did not.
func exitCode(cmd *exec.Cmd) int {
	if cmd.ProcessState == nil {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

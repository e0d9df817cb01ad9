//go:build failpoint

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

package failpoint_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/failpoint"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    failpoint.Points
		wantErr string
	}{
		{in: "", want: failpoint.Points{}},
		{in: "prepare-before-cdi=kill, unprepare-after-cdi=error", want: failpoint.Points{
			failpoint.PrepareBeforeCDI: failpoint.Kill, failpoint.UnprepareAfterCDI: failpoint.Error}},
		{in: "prepare-before-cdi", wantErr: `ACCEL_DRA_FAILPOINTS entry 1 "prepare-before-cdi": want point=action`},
		{in: "a=kill,b=panic", wantErr: `ACCEL_DRA_FAILPOINTS entry 2 "b=panic": action "panic" is not one of kill, error, pause`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := failpoint.Parse(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestInjectError(t *testing.T) {
	p := failpoint.Points{"x": failpoint.Error}
	require.EqualError(t, p.Inject("x"), "failpoint x")
	require.NoError(t, p.Inject("y"), "an unarmed point does nothing")
	require.NoError(t, failpoint.Inject("x"), "nothing is armed without the environment variable")
}

// TestInjectKill re-runs this test binary with the point armed: the child
// must die by SIGKILL at the point and never return from Inject.
func TestInjectPause(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(failpoint.PauseDirEnv, dir)
	p := failpoint.Points{"x": failpoint.Pause}
	done := make(chan error, 1)
	go func() { done <- p.Inject("x") }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "x.paused"))
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the point says it is reached")
	select {
	case err := <-done:
		t.Fatalf("Inject returned before the release: %v", err)
	default:
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.release"), nil, 0o600))
	require.NoError(t, <-done)
}

func TestInjectKill(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		_ = failpoint.Inject(failpoint.PrepareAfterCDI)
		os.Exit(0) // not reached when armed
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInjectKill$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", failpoint.EnvVar+"="+failpoint.PrepareAfterCDI+"=kill")
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws := exit.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "%v", err)
	require.Equal(t, syscall.SIGKILL, ws.Signal())
}

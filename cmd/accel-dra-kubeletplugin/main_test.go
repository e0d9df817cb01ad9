package main

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/flagenv"
)

// Every flag of ours can be set by the variable its usage names, as the
// chart's DaemonSet sets them; klog's verbosity flags are the exception.
func TestEveryFlagNamesItsEnvironmentVariable(t *testing.T) {
	seen := map[string]string{}
	newCommand().Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "v" || f.Name == "vmodule" {
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

func TestEnvironmentAndCommandLine(t *testing.T) {
	t.Setenv("ACCEL_DRA_TOOL_TIMEOUT", "soon")
	cmd := newCommand()
	cmd.SetArgs(nil)
	require.EqualError(t, cmd.Execute(), `--tool-timeout "soon": want a positive duration such as 30s`, "the variable reaches the flag")
	cmd = newCommand()
	cmd.SetArgs([]string{"--tool-timeout=0s"})
	require.EqualError(t, cmd.Execute(), `--tool-timeout "0s": want a positive duration such as 30s`, "the command line beats the variable")
}

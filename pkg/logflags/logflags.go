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

// Package logflags gives a command the standard Kubernetes logging flags
// of k8s.io/component-base/logs: --logging-format (text or json), -v,
// --vmodule, --log-flush-frequency and the format options, as the kubelet
// and the control plane have them, so log pipelines that parse those
// components' JSON parse ours too.
package logflags

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	// Registers the json format, which --logging-format offers.
	_ "k8s.io/component-base/logs/json/register"
)

func init() {
	// A command may run more than once in one process (its tests do):
	// applying the same configuration again is fine, a different one not.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// Config is the logging configuration the flags fill in.
type Config struct {
	c *logsapi.LoggingConfiguration
}

// Add registers the logging flags on fs. formatEnv, when not empty, is the
// environment variable that may set --logging-format (pkg/flagenv reads it
// from the usage text).
func Add(fs *pflag.FlagSet, formatEnv string) *Config {
	c := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(c, fs)
	if formatEnv != "" {
		f := fs.Lookup("logging-format")
		f.Usage += " [" + formatEnv + "]"
	}
	return &Config{c: c}
}

// Apply validates the flags' values and makes them klog's configuration,
// writing to out (the process's stderr); call it once the flags and their
// environment variables are parsed, before anything logs.
func (c *Config) Apply(out io.Writer) error {
	if err := logsapi.ValidateAndApplyWithOptions(c.c, &logsapi.LoggingOptions{ErrorStream: out, InfoStream: out}, nil); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	return nil
}

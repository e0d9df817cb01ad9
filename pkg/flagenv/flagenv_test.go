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

package flagenv

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

type values struct {
	root    string
	fake    bool
	vendors []string
	port    int
	delay   time.Duration
	klogV   string
}

func flags(v *values) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.StringVar(&v.root, "root", "/", "host root [ACCEL_DRA_ROOT]")
	fs.BoolVar(&v.fake, "fake-devices", false, "fake device nodes [ACCEL_DRA_FAKE_DEVICES=true]")
	fs.StringSliceVar(&v.vendors, "vendors", nil, "vendors, a comma list [ACCEL_DRA_VENDORS]")
	fs.IntVar(&v.port, "port", 8443, "port [ACCEL_DRA_PORT]")
	fs.DurationVar(&v.delay, "delay", time.Second, "delay [ACCEL_DRA_DELAY]")
	fs.StringVar(&v.klogV, "v", "0", "verbosity [klog]")
	return fs
}

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    values
		wantErr string
	}{
		{name: "defaults without variables", want: values{root: "/", port: 8443, delay: time.Second, klogV: "0"}},
		{
			name: "variables set what the command line does not",
			env: map[string]string{"ACCEL_DRA_ROOT": "/host", "ACCEL_DRA_FAKE_DEVICES": "true", "ACCEL_DRA_VENDORS": "ascend,cambricon",
				"ACCEL_DRA_PORT": "9443", "ACCEL_DRA_DELAY": "2m"},
			want: values{root: "/host", fake: true, vendors: []string{"ascend", "cambricon"}, port: 9443, delay: 2 * time.Minute, klogV: "0"},
		},
		{
			name: "the command line beats the environment",
			env:  map[string]string{"ACCEL_DRA_ROOT": "/host", "ACCEL_DRA_PORT": "9443"},
			args: []string{"--root=/fixture"},
			want: values{root: "/fixture", port: 9443, delay: time.Second, klogV: "0"},
		},
		{
			name: "an empty variable is a value",
			env:  map[string]string{"ACCEL_DRA_ROOT": ""},
			want: values{root: "", port: 8443, delay: time.Second, klogV: "0"},
		},
		{
			name: "a usage bracket that is not a variable name binds nothing",
			env:  map[string]string{"klog": "5"},
			want: values{root: "/", port: 8443, delay: time.Second, klogV: "0"},
		},
		{
			name: "values that do not parse are all reported, naming variable and flag",
			env:  map[string]string{"ACCEL_DRA_PORT": "https", "ACCEL_DRA_DELAY": "soon"},
			wantErr: `environment variable ACCEL_DRA_DELAY (--delay): invalid argument "soon" for "--delay" flag: time: invalid duration "soon"` + "\n" +
				`environment variable ACCEL_DRA_PORT (--port): invalid argument "https" for "--port" flag: strconv.ParseInt: parsing "https": invalid syntax`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var got values
			fs := flags(&got)
			require.NoError(t, fs.Parse(tc.args))
			err := Apply(fs)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestVar(t *testing.T) {
	var v values
	fs := flags(&v)
	for flag, want := range map[string]string{"root": "ACCEL_DRA_ROOT", "fake-devices": "ACCEL_DRA_FAKE_DEVICES", "v": ""} {
		require.Equal(t, want, Var(fs.Lookup(flag)), flag)
	}
}

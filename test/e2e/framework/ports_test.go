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
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestThePortPoolHandsOutEachFreePortOnceOutsideTheEphemeralRange(t *testing.T) {
	ephLow, ephHigh := ephemeralRange()
	pool := newPortPool(ephLow, ephHigh)
	seen := map[int]bool{}
	for range 200 {
		port, err := pool.take()
		require.NoError(t, err)
		require.False(t, seen[port], "port %d handed out twice", port)
		seen[port] = true
		require.True(t, port < ephLow || port > ephHigh, "port %d is in the ephemeral range [%d, %d]", port, ephLow, ephHigh)
	}
}

func TestThePortPoolSkipsAPortInUse(t *testing.T) {
	held, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	pool := &portPool{low: port, high: port + 1, next: port}
	_, err = pool.take()
	require.ErrorContains(t, err, fmt.Sprintf("all 1 ports of [%d, %d) are handed out or in use", port, port+1))

	pool = &portPool{low: port, high: port + 2, next: port}
	got, err := pool.take()
	if err == nil { // port+1 may be taken on a busy machine
		require.Equal(t, port+1, got)
	}
}

func TestThePortPoolLiesBelowTheEphemeralRangeOrElseAboveIt(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ephLow, ephHigh   int
		wantLow, wantHigh int
	}{
		{"Linux's default", 32768, 60999, 32768 - poolSize, 32768},
		{"a range from 2000", 2000, 60000, 60001, 65536},
		{"a range up to the top", 2000, 65535, 1024, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPortPool(tc.ephLow, tc.ephHigh)
			require.Equal(t, [2]int{tc.wantLow, tc.wantHigh}, [2]int{pool.low, pool.high})
		})
	}
}

func TestReadPortRange(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		low, high     int
		wantErr       string
	}{
		{name: "the kernel's format", content: "32768\t60999\n", low: 32768, high: 60999},
		{name: "one number", content: "32768\n", wantErr: `"32768" is not a port range "low high"`},
		{name: "reversed", content: "60999 32768\n", wantErr: `"60999 32768" is not a port range`},
		{name: "beyond 65535", content: "1024 70000\n", wantErr: `"1024 70000" is not a port range`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ip_local_port_range")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			low, high, err := readPortRange(path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, [2]int{tc.low, tc.high}, [2]int{low, high})
		})
	}
	_, _, err := readPortRange(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "reading the ephemeral port range")
}

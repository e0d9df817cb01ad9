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
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
)

// ephemeralRangeFile is where Linux keeps the range its ephemeral ports
// (those of ":0" listeners and of outgoing connections) come from.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// poolSize is how many ports below the ephemeral range the pool uses: a
// cluster takes a few dozen.
const poolSize = 8000

// portPool hands out the TCP ports the cluster's components listen on.
// A port the kernel picked for a ":0" probe comes from the ephemeral
// range, which every outgoing connection on the machine draws from too:
// between the probe closing it and the component binding it, a client's
// connection could take it ("bind: address already in use", seen in make
// test-e2e). The pool's ports lie outside that range, each is handed out
// once, and each is probed free on all addresses first.
type portPool struct {
	mu         sync.Mutex
	low, high  int // the pool is [low, high)
	next, used int
}

// ports is the pool of this process's cluster.
var ports = sync.OnceValue(func() *portPool { return newPortPool(ephemeralRange()) })

// ephemeralRange is the machine's ephemeral port range, or Linux's
// default where it cannot be read.
func ephemeralRange() (low, high int) {
	low, high, err := readPortRange(ephemeralRangeFile)
	if err != nil {
		return 32768, 60999
	}
	return low, high
}

// newPortPool is a pool next to the ephemeral range [ephLow, ephHigh]:
// below it, above the privileged ports, unless there is more room above.
func newPortPool(ephLow, ephHigh int) *portPool {
	low, high := max(1024, ephLow-poolSize), ephLow
	if aboveLow, aboveHigh := ephHigh+1, min(65536, ephHigh+1+poolSize); aboveHigh-aboveLow > high-low {
		low, high = aboveLow, aboveHigh
	}
	p := &portPool{low: low, high: max(low, high), next: low}
	// A random start: two clusters on one machine (each its own process)
	// rarely probe the same ports, and a port one holds fails the other's
	// probe anyway.
	if p.high > p.low {
		p.next += rand.IntN(p.high - p.low)
	}
	return p
}

// freePort is a port for a component to listen on.
func freePort() (int, error) { return ports().take() }

// take returns the pool's next port that no socket on the machine holds.
func (p *portPool) take() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.used < p.high-p.low {
		port := p.next
		p.next, p.used = p.low+(p.next+1-p.low)%(p.high-p.low), p.used+1
		// 0.0.0.0 conflicts with a listener on any IPv4 address, 127.0.0.1
		// or the node's.
		l, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("closing the probe of port %d: %w", port, err)
		}
		return port, nil
	}
	return 0, fmt.Errorf("finding a free port: all %d ports of [%d, %d) are handed out or in use", p.high-p.low, p.low, p.high)
}

// readPortRange reads the "low high" of an ip_local_port_range file.
func readPortRange(path string) (low, high int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the ephemeral port range: %w", err)
	}
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &low, &high); err != nil || low < 1 || high < low || high > 65535 {
		return 0, 0, fmt.Errorf("%s: %q is not a port range \"low high\"", path, strings.TrimSpace(string(b)))
	}
	return low, high, nil
}

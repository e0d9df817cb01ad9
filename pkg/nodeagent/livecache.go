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

package nodeagent

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// LiveCacheTTL is how long one liveness check answers /livez. The check
// takes the kubelet plugin helper's lock and the driver's mutex (an empty
// NodePrepareResources), and the probe port is reachable by anything on
// the pod network: one check per few seconds, however many requests come,
// keeps a flood of them from queueing in front of the kubelet's prepares.
// The kubelet probes every 10 s by default.
const LiveCacheTTL = 5 * time.Second

// liveCache runs a check at most once at a time (concurrent callers share
// the running check) and serves its result for ttl after it ends.
type liveCache struct {
	ttl   time.Duration // zero: LiveCacheTTL
	group singleflight.Group

	// now is the clock (nil: time.Now).
	now func() time.Time

	mu  sync.Mutex
	at  time.Time // when the last check ended; zero: none yet
	err error     // its result
}

func (c *liveCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// get returns the cached result if fresh, else the result of the check
// running now or of a new one. The check runs under a context of its own
// bounded by timeout: a caller that gives up does not cancel it for the
// others waiting on it.
func (c *liveCache) get(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	if err, ok := c.fresh(c.clock()); ok {
		return err
	}
	ch := c.group.DoChan("live", func() (any, error) {
		// A caller that found no fresh result before the last check
		// ended starts a flight after it: that result is still fresh.
		if err, ok := c.fresh(c.clock()); ok {
			return nil, err
		}
		checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		err := check(checkCtx)
		c.mu.Lock()
		c.at, c.err = c.clock(), err
		c.mu.Unlock()
		return nil, err
	})
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// fresh is the cached result, if it is younger than the ttl at now.
func (c *liveCache) fresh(now time.Time) (error, bool) { //nolint:revive // the result, then whether there is one
	c.mu.Lock()
	defer c.mu.Unlock()
	ttl := c.ttl
	if ttl == 0 {
		ttl = LiveCacheTTL
	}
	if c.at.IsZero() || now.Sub(c.at) >= ttl {
		return nil, false
	}
	return c.err, true
}

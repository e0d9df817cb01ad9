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
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentLivenessRequestsShareOneCheck: 400 concurrent /livez
// requests (the review's flood) run the drivers' check once; its result,
// a failure too, answers for LiveCacheTTL; after that a new check runs.
func TestConcurrentLivenessRequestsShareOneCheck(t *testing.T) {
	clock := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	c := &liveCache{now: now}
	var calls atomic.Int32
	release := make(chan struct{})
	result := errors.New("ascend.accel-dra.dev: GetInfo: unavailable")
	check := func(context.Context) error {
		calls.Add(1)
		<-release
		return result
	}
	const clients = 400
	errs := make(chan error, clients)
	var started sync.WaitGroup
	for range clients {
		started.Add(1)
		go func() {
			started.Done()
			errs <- c.get(context.Background(), time.Minute, check)
		}()
	}
	started.Wait()
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	for range clients {
		require.Equal(t, result, <-errs)
	}
	require.EqualValues(t, 1, calls.Load(), "one check for all of them")

	advance(LiveCacheTTL - time.Second)
	require.Equal(t, result, c.get(context.Background(), time.Minute, check), "the failure answers while fresh")
	require.EqualValues(t, 1, calls.Load())
	advance(time.Second)
	result = nil
	require.NoError(t, c.get(context.Background(), time.Minute, check), "a new check once the result is LiveCacheTTL old")
	require.EqualValues(t, 2, calls.Load())
}

// TestALivenessRequestThatGivesUpDoesNotCancelTheCheck: the check runs
// under its own deadline; a request that leaves returns its own cause,
// and the next request gets the check's result.
func TestALivenessRequestThatGivesUpDoesNotCancelTheCheck(t *testing.T) {
	c := &liveCache{}
	release := make(chan struct{})
	var checkErr atomic.Value
	check := func(ctx context.Context) error {
		<-release
		checkErr.Store(fmt.Sprint(ctx.Err()))
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := errors.New("the client went away")
	cancel(gone)
	require.Equal(t, gone, c.get(ctx, time.Minute, check))
	close(release)
	require.NoError(t, c.get(context.Background(), time.Minute, check))
	require.Equal(t, "<nil>", checkErr.Load(), "the check's context was not cancelled by the request that left")
}

// TestTheProbeServerBoundsItsConnections: however many clients connect,
// at most maxHTTPConnections requests are served at once; the others wait
// and are served after.
func TestTheProbeServerBoundsItsConnections(t *testing.T) {
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		_, _ = io.WriteString(w, "ok\n")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := serveHTTP(ctx, "127.0.0.1:0", h, "test")
	require.NoError(t, err)
	const clients = 4 * maxHTTPConnections
	done := make(chan error, clients)
	for range clients {
		go func() { done <- getOnce(addr) }()
	}
	require.Eventually(t, func() bool { return inFlight.Load() == maxHTTPConnections }, 10*time.Second, time.Millisecond)
	close(release)
	for range clients {
		require.NoError(t, <-done)
	}
	require.EqualValues(t, maxHTTPConnections, most.Load(), "never more requests at once than connections allowed")
}

// getOnce GETs / from addr on a connection of its own.
func getOnce(addr net.Addr) error {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr.String() + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

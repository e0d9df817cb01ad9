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

package vendors

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultLibraryCallTimeout bounds one call into a vendor library (DCMI,
// CNDev). Their calls answer in milliseconds; one that has not returned
// after this long is hung in the driver or the firmware.
const DefaultLibraryCallTimeout = 10 * time.Second

// ErrLibraryWedged is wrapped by every error of a call that did not
// return in time, and of the calls refused after it.
var ErrLibraryWedged = errors.New("vendor library wedged")

// LibraryCalls runs the calls into one loaded vendor library, one at a
// time (neither DCMI nor CNDev is documented as thread-safe), each with a
// deadline. A native call cannot be interrupted: it runs on a goroutine
// of its own, and when the deadline passes the caller gets an error and
// the library is marked wedged, so every later call fails at once
// (errors.Is ErrLibraryWedged) instead of queueing behind the hung one.
// If the hung call returns after all, the library is usable again. The
// zero value is ready, with DefaultLibraryCallTimeout.
type LibraryCalls struct {
	// Library names the library in errors (its path).
	Library string
	// Timeout bounds each call; zero: DefaultLibraryCallTimeout.
	Timeout time.Duration

	sem    atomic.Pointer[chan struct{}]
	wedged atomic.Pointer[HungCall]
}

// HungCall is a library call that has not returned since its deadline.
type HungCall struct {
	// Library is the library's path, Call the function.
	Library, Call string
	// Since is when the call was made.
	Since time.Time
}

// Wedged names the call that has not returned since its deadline; ""
// while the library answers.
func (c *LibraryCalls) Wedged() string {
	if w := c.wedged.Load(); w != nil {
		return w.Call
	}
	return ""
}

// Hung returns the call that has not returned since its deadline, nil
// while the library answers.
func (c *LibraryCalls) Hung() *HungCall {
	if w := c.wedged.Load(); w != nil {
		h := *w
		return &h
	}
	return nil
}

// LibraryWatch is implemented by a discovery backend that reads the chips
// through a vendor library: the agent's liveness asks it whether a call
// is hung (a native call cannot be interrupted: only a new process gets
// the library back).
type LibraryWatch interface {
	// HungLibraryCall returns the call into the backend's library that
	// has not returned since its deadline; nil when none is, or when the
	// library is not loaded.
	HungLibraryCall() *HungCall
}

func (c *LibraryCalls) slot() chan struct{} {
	if s := c.sem.Load(); s != nil {
		return *s
	}
	s := make(chan struct{}, 1)
	c.sem.CompareAndSwap(nil, &s)
	return *c.sem.Load()
}

// Do runs f, the native call name, and returns what it returned.
func (c *LibraryCalls) Do(name string, f func() int32) (int32, error) {
	if w := c.Wedged(); w != "" {
		return 0, fmt.Errorf("%s: %s: %w: %s has not returned", c.Library, name, ErrLibraryWedged, w)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultLibraryCallTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	sem := c.slot()
	select {
	case sem <- struct{}{}:
	case <-timer.C:
		return 0, fmt.Errorf("%s: %s: %w: waited %s for an earlier call to return", c.Library, name, ErrLibraryWedged, timeout)
	}
	token := &HungCall{Library: c.Library, Call: name, Since: time.Now()}
	done := make(chan int32, 1)
	go func() {
		defer func() { <-sem }()
		done <- f()
		// A call that returns after its deadline unwedges the library.
		c.wedged.CompareAndSwap(token, nil)
	}()
	select {
	case rc := <-done:
		return rc, nil
	case <-timer.C:
	}
	c.wedged.Store(token)
	select {
	case rc := <-done: // returned just now
		c.wedged.CompareAndSwap(token, nil)
		return rc, nil
	default:
	}
	return 0, fmt.Errorf("%s: %s: %w: no answer after %s", c.Library, name, ErrLibraryWedged, timeout)
}

// CheckCount returns n as an int when 0 <= n <= limit, and otherwise an
// error naming the call: a library that reports a count no node can have
// is broken, and the count must not size a slice or a loop.
func CheckCount(call, what string, n int64, limit int) (int, error) {
	if n < 0 || n > int64(limit) {
		return 0, fmt.Errorf("%s reports %d %s, not within 0..%d", call, n, what, limit)
	}
	return int(n), nil
}

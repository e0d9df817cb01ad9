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

package vendors_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// TestAHungLibraryCallTimesOutAndLaterCallsFailFast: a call that does
// not return gets an error after the timeout, marks the library wedged,
// and the calls after it fail at once without running; when the hung call
// returns, calls run again.
func TestAHungLibraryCallTimesOutAndLaterCallsFailFast(t *testing.T) {
	c := &vendors.LibraryCalls{Library: "libtest.so", Timeout: 50 * time.Millisecond}
	rc, err := c.Do("answers", func() int32 { return 7 })
	require.NoError(t, err)
	require.Equal(t, int32(7), rc)

	require.Nil(t, c.Hung())

	release := make(chan struct{})
	start := time.Now()
	_, err = c.Do("hangs", func() int32 { <-release; return 0 })
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.EqualError(t, err, "libtest.so: hangs: vendor library wedged: no answer after 50ms")
	require.Equal(t, "hangs", c.Wedged())
	hung := c.Hung()
	require.NotNil(t, hung)
	require.Equal(t, "libtest.so", hung.Library)
	require.Equal(t, "hangs", hung.Call)
	require.WithinRange(t, hung.Since, start, start.Add(50*time.Millisecond), "since the call was made, not its deadline")

	ran := false
	_, err = c.Do("after", func() int32 { ran = true; return 0 })
	require.ErrorIs(t, err, vendors.ErrLibraryWedged)
	require.EqualError(t, err, "libtest.so: after: vendor library wedged: hangs has not returned")
	require.False(t, ran, "a call into a wedged library is not made")

	close(release)
	require.Eventually(t, func() bool { return c.Wedged() == "" }, time.Minute, time.Millisecond, "the hung call returned")
	require.Nil(t, c.Hung())
	rc, err = c.Do("answers", func() int32 { return 3 })
	require.NoError(t, err)
	require.Equal(t, int32(3), rc)
}

// TestLibraryCallsRunOneAtATime: concurrent callers never overlap inside
// the library.
func TestLibraryCallsRunOneAtATime(t *testing.T) {
	c := &vendors.LibraryCalls{Library: "libtest.so", Timeout: time.Minute}
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := c.Do("call", func() int32 {
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				return 0
			})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, 1, most)
}

func TestCheckCount(t *testing.T) {
	n, err := vendors.CheckCount("dcmi_get_card_list", "cards", 8, 64)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	for _, bad := range []int64{-1, 65, 1 << 40} {
		_, err := vendors.CheckCount("dcmi_get_card_list", "cards", bad, 64)
		require.Error(t, err)
		require.False(t, errors.Is(err, vendors.ErrLibraryWedged))
		require.ErrorContains(t, err, "dcmi_get_card_list reports")
	}
}

// BenchmarkLibraryCallsDo is the cost the deadline adds to one library
// call (a goroutine, a timer, two channel operations), beside a direct
// call of the same function.
func BenchmarkLibraryCallsDo(b *testing.B) {
	f := func() int32 { return 0 }
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_ = f()
		}
	})
	b.Run("LibraryCalls.Do", func(b *testing.B) {
		c := &vendors.LibraryCalls{Library: "libtest.so"}
		for b.Loop() {
			if _, err := c.Do("call", f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

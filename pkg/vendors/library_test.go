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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

type hungLibrary struct{ call *vendors.HungCall }

func (h hungLibrary) HungLibraryCall() *vendors.HungCall { return h.call }

// TestALibraryLoadsOnceForAllItsUsers: discovery, the partition tool and
// telemetry each ask main's Library; only the first ask loads, and the
// liveness probe sees the one loaded library's hung call.
func TestALibraryLoadsOnceForAllItsUsers(t *testing.T) {
	var l vendors.Library
	require.Nil(t, l.HungLibraryCall(), "not loaded yet")
	hung := &vendors.HungCall{Library: "libx.so", Call: "xInit"}
	loads := 0
	load := func() vendors.LoadedLibrary {
		loads++
		return hungLibrary{call: hung}
	}
	require.Equal(t, hungLibrary{call: hung}, l.Load(load))
	require.Equal(t, hungLibrary{call: hung}, l.Load(load))
	require.Equal(t, 1, loads)
	require.Equal(t, hung, l.HungLibraryCall())

	var failed vendors.Library
	require.Nil(t, failed.Load(func() vendors.LoadedLibrary { return nil }), "a library that does not load")
	require.Nil(t, failed.Load(load), "is not tried again: its users read with the tool")
	require.Nil(t, failed.HungLibraryCall())
}

// TestLoadLibraryTurnsATypedNilIntoNone: a vendor's open returns a nil
// pointer when its library does not load; the Library holds none then,
// not a typed nil that would look loaded.
func TestLoadLibraryTurnsATypedNilIntoNone(t *testing.T) {
	var l vendors.Library
	got := vendors.LoadLibrary(&l, func() *hungPointer { return nil })
	require.Nil(t, got)
	require.Nil(t, l.Loaded())
	require.Nil(t, l.HungLibraryCall())
	want := &hungPointer{}
	require.Same(t, want, vendors.LoadLibrary(nil, func() *hungPointer { return want }), "without main's Library, open's own")
}

type hungPointer struct{}

func (*hungPointer) HungLibraryCall() *vendors.HungCall { return nil }

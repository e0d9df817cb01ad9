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
	"sync"
	"sync/atomic"
)

// Library is one vendor's management library (libdcmi.so, libcndev.so)
// as the node agent's main holds it (Registry.NewLibraries): one value per
// vendor, handed to discovery, the partition tool, telemetry
// (BackendConfig.Opened) and the liveness probe (a LibraryWatch), so none
// of them finds the library again by its path. It is loaded at its first
// use, by the first backend that finds the vendor's chips: a node without
// them never loads it. The zero value is ready.
type Library struct {
	once   sync.Once
	loaded atomic.Pointer[loadedLibrary]
}

// LoadedLibrary is a vendor's loaded library.
type LoadedLibrary interface {
	LibraryWatch
}

type loadedLibrary struct{ LoadedLibrary }

// Load returns the loaded library, loading it with load at the first call
// only; nil when load could not (it logs why, once: every user then reads
// the chips with the vendor's tool). load returns a nil interface, not a
// typed nil, for that.
func (l *Library) Load(load func() LoadedLibrary) LoadedLibrary {
	l.once.Do(func() {
		if x := load(); x != nil {
			l.loaded.Store(&loadedLibrary{x})
		}
	})
	return l.Loaded()
}

// Loaded is the library once loaded, nil before or when it could not be.
// It never waits for a load in progress: a load that hangs must not hang
// the liveness probe.
func (l *Library) Loaded() LoadedLibrary {
	if x := l.loaded.Load(); x != nil {
		return x.LoadedLibrary
	}
	return nil
}

// LoadLibrary is a vendor's library of type T loaded with open (nil when
// it cannot): through l, main's Library, where the caller has one, so it
// loads once for all its users; else open's own.
func LoadLibrary[T interface {
	comparable
	LoadedLibrary
}](l *Library, open func() T) T {
	if l == nil {
		return open()
	}
	var none T
	loaded, _ := l.Load(func() LoadedLibrary {
		if x := open(); x != none {
			return x
		}
		return nil
	}).(T)
	return loaded
}

var _ LibraryWatch = (*Library)(nil)

// HungLibraryCall implements LibraryWatch: nil until the library is
// loaded.
func (l *Library) HungLibraryCall() *HungCall {
	if x := l.Loaded(); x != nil {
		return x.HungLibraryCall()
	}
	return nil
}

// NewLibraries returns one Library per vendor of r that has a management
// library (Names.LibraryFlag), by the vendor's option: what main opens
// once and hands to the agent (source.Options.Opened).
func (r Registry) NewLibraries() map[string]*Library {
	out := map[string]*Library{}
	for _, v := range r.vendors {
		if n := v.Names(); n.LibraryFlag != "" {
			out[n.Option] = &Library{}
		}
	}
	return out
}

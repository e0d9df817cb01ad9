//go:build failpoint

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

package failpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Enabled says whether this binary was built with the failpoint tag.
const Enabled = true

// Points are the armed failpoints by name.
type Points map[string]Action

// Parse reads an ACCEL_DRA_FAILPOINTS value.
func Parse(s string) (Points, error) {
	out := Points{}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, action, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s entry %d %q: want point=action", EnvVar, i+1, entry)
		}
		switch a := Action(action); a {
		case Kill, Error:
			out[name] = a
		default:
			return nil, fmt.Errorf("%s entry %d %q: action %q is not one of %s, %s", EnvVar, i+1, entry, action, Kill, Error)
		}
	}
	return out, nil
}

// armed is parsed once; a bad value panics at the first Inject, since it
// can only come from a test that set the variable wrong.
var armed = sync.OnceValue(func() Points {
	p, err := Parse(os.Getenv(EnvVar))
	if err != nil {
		panic(err)
	}
	return p
})

// Inject runs the action armed at point name, if any.
func Inject(name string) error {
	return armed().Inject(name)
}

// Inject runs the action of point name in p, if any.
func (p Points) Inject(name string) error {
	switch p[name] {
	case Kill:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		// SIGKILL is not delivered synchronously: never go on.
		select {}
	case Error:
		return fmt.Errorf("failpoint %s", name)
	}
	return nil
}

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
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
		case Kill, Error, Pause:
			out[name] = a
		default:
			return nil, fmt.Errorf("%s entry %d %q: action %q is not one of %s, %s, %s", EnvVar, i+1, entry, action, Kill, Error, Pause)
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
	case Pause:
		return pause(name)
	}
	return nil
}

// pause says the point is reached and waits for the test to release it.
func pause(name string) error {
	dir := os.Getenv(PauseDirEnv)
	if dir == "" {
		return fmt.Errorf("failpoint %s: action %s needs %s", name, Pause, PauseDirEnv)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".paused"), nil, 0o600); err != nil {
		return fmt.Errorf("failpoint %s: %w", name, err)
	}
	release := filepath.Join(dir, name+".release")
	for {
		if _, err := os.Stat(release); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Package failpoint is a test hook: named points in the plugin's code
// where a test makes the process fail on purpose, to prove that a crash or
// an error there loses nothing. Points are armed only by the environment
// variable ACCEL_DRA_FAILPOINTS (read once, at the first Inject), e.g.
//
//	ACCEL_DRA_FAILPOINTS=prepare-before-cdi=kill,unprepare-after-cdi=error
//
// Actions:
//
//   - kill: the process sends itself SIGKILL, as the OOM killer or a node
//     reboot would end it, with no deferred function or flush run;
//   - error: Inject returns an error naming the point.
//
// Unset (production), Inject is a map lookup in an empty map.
package failpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// EnvVar arms failpoints: a comma list of point=action.
const EnvVar = "ACCEL_DRA_FAILPOINTS"

// The points the driver calls, in the order a prepare passes them.
const (
	// PartitionCreated: the vendor tool made a partition, not yet recorded anywhere.
	PartitionCreated = "prepare-partition-created"
	// PrepareBeforeCDI: the claim is checked (partitions made), no CDI spec written.
	PrepareBeforeCDI = "prepare-before-cdi"
	// PrepareAfterCDI: the CDI spec is written, the checkpoint not yet saved.
	PrepareAfterCDI = "prepare-after-cdi"
	// PrepareAfterCheckpoint: the checkpoint lists the claim, the kubelet has no answer.
	PrepareAfterCheckpoint = "prepare-after-checkpoint"
	// UnprepareAfterCDI: the CDI spec is removed, partitions and checkpoint not yet.
	UnprepareAfterCDI = "unprepare-after-cdi"
	// UnprepareBeforeCheckpoint: the partitions are destroyed, the checkpoint still lists the claim.
	UnprepareBeforeCheckpoint = "unprepare-before-checkpoint"
)

// Action is what an armed point does.
type Action string

const (
	Kill  Action = "kill"
	Error Action = "error"
)

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

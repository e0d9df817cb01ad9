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

package driver

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// transaction is one prepare's changes to the node. Each step that
// changes something registers how to undo it (onRollback) as soon as the
// change is made; rollback undoes them all, newest first, unless commit
// came first. prepare defers rollback, so whichever step fails, the
// changes before it are undone in that one place.
type transaction struct {
	logger    klog.Logger
	undos     []undo
	committed bool
}

// undo is one registered undo step: fn, and what to log if it fails;
// record, if set, notes what fn left behind (for the checkpoint).
type undo struct {
	fn            func(context.Context) error
	record        func()
	failed        string
	keysAndValues []any
}

// RollbackTimeout bounds a rollback. It runs under its own context: the
// kubelet's may be cancelled already (its deadline passed mid-create),
// and a partition made must still be destroyed.
const RollbackTimeout = time.Minute

// newTransaction starts a transaction that logs with logger (which names
// the claim).
func newTransaction(logger klog.Logger) *transaction {
	return &transaction{logger: logger}
}

// onRollback registers fn to undo the step just done. If fn fails, the
// rollback logs failed with keysAndValues and goes on: what is left
// behind must be something start-up reconciliation cleans.
func (tx *transaction) onRollback(fn func(context.Context) error, failed string, keysAndValues ...any) {
	tx.undos = append(tx.undos, undo{fn: fn, failed: failed, keysAndValues: keysAndValues})
}

// onRollbackOrRecord is onRollback, and record is called if fn fails, to
// note what is left for the next call or start-up to undo.
func (tx *transaction) onRollbackOrRecord(fn func(context.Context) error, record func(), failed string, keysAndValues ...any) {
	tx.undos = append(tx.undos, undo{fn: fn, record: record, failed: failed, keysAndValues: keysAndValues})
}

// commit makes the transaction's changes stay: rollback does nothing after it.
func (tx *transaction) commit() {
	tx.committed = true
}

// rollback undoes the registered steps, newest first, unless committed,
// under a context of its own that ctx's cancellation does not end
// (RollbackTimeout). It runs at most once, and reports whether a failed
// step recorded something left behind.
func (tx *transaction) rollback(ctx context.Context) (recorded bool) {
	if tx.committed {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
	defer cancel()
	for i := len(tx.undos) - 1; i >= 0; i-- {
		u := tx.undos[i]
		if err := u.fn(ctx); err != nil {
			tx.logger.Error(err, u.failed, u.keysAndValues...)
			if u.record != nil {
				u.record()
				recorded = true
			}
		}
	}
	tx.undos = nil
	return recorded
}

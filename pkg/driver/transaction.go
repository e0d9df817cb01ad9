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

// undo is one registered undo step: fn, and what to log if it fails.
type undo struct {
	fn            func(context.Context) error
	failed        string
	keysAndValues []any
}

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

// commit makes the transaction's changes stay: rollback does nothing after it.
func (tx *transaction) commit() {
	tx.committed = true
}

// rollback undoes the registered steps, newest first, unless committed.
// It runs at most once.
func (tx *transaction) rollback(ctx context.Context) {
	if tx.committed {
		return
	}
	for i := len(tx.undos) - 1; i >= 0; i-- {
		u := tx.undos[i]
		if err := u.fn(ctx); err != nil {
			tx.logger.Error(err, u.failed, u.keysAndValues...)
		}
	}
	tx.undos = nil
}

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
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
)

func TestATransactionRollsBackNewestFirstUnlessCommitted(t *testing.T) {
	tests := []struct {
		name    string
		steps   []string // each registers an undo; "fail:x" is one that fails
		commit  bool
		undone  []string
		logged  []string
		reverts int // rollback calls
	}{
		{name: "nothing done", reverts: 1},
		{name: "newest first", steps: []string{"partition-a", "partition-b", "cdi-spec"}, reverts: 1,
			undone: []string{"cdi-spec", "partition-b", "partition-a"}},
		{name: "a failed undo is logged and the others still run", steps: []string{"partition-a", "fail:partition-b", "cdi-spec"}, reverts: 1,
			undone: []string{"cdi-spec", "fail:partition-b", "partition-a"}, logged: []string{"undoing fail:partition-b"}},
		{name: "committed: nothing is undone", steps: []string{"partition-a", "cdi-spec"}, commit: true, reverts: 1},
		{name: "a second rollback undoes nothing again", steps: []string{"partition-a"}, reverts: 2,
			undone: []string{"partition-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			tx := newTransaction(logger)
			var undone []string
			for _, s := range tt.steps {
				tx.onRollback(func(context.Context) error {
					undone = append(undone, s)
					if strings.HasPrefix(s, "fail:") {
						return errors.New("tool failed")
					}
					return nil
				}, "undoing "+s, "step", s)
			}
			if tt.commit {
				tx.commit()
			}
			for range tt.reverts {
				tx.rollback(context.Background())
			}
			require.Equal(t, tt.undone, undone)
			var logged []string
			for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
				require.EqualError(t, e.Err, "tool failed")
				logged = append(logged, e.Message)
			}
			require.Equal(t, tt.logged, logged)
		})
	}
}

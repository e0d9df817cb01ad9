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
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"k8s.io/klog/v2"
)

// SerializeLockFile is the kubeletplugin helper's lock file in the
// plugin's data directory: with RollingUpdate the helper holds it for
// each NodePrepareResources and NodeUnprepareResources call, so the two
// pods of a rolling update never run a call at the same time
// (k8s.io/dynamic-resource-allocation v0.37 kubeletplugin/draplugin.go,
// Start: grpcLockFilePath = path.Join(dir, "serialize.lock"), and
// serializeGRPCIfEnabled).
const SerializeLockFile = "serialize.lock"

// lockStartup takes the helper's lock for start-up reconciliation, which
// removes CDI specs and partitions the checkpoint does not list: while the
// other pod of a rolling update is in a prepare, the partition it has just
// made is not listed yet. It uses the helper's own function
// (fileutil.LockFile), so both take the same kind of lock (OFD or flock,
// whichever etcd's fileutil picked) on the same file. The returned
// function releases it.
func lockStartup(ctx context.Context, dir string) (func(), error) {
	logger := klog.FromContext(ctx)
	path := filepath.Join(dir, SerializeLockFile)
	f, err := fileutil.TryLockFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		return func() { _ = f.Close() }, nil
	}
	if !errors.Is(err, fileutil.ErrLocked) {
		return nil, fmt.Errorf("locking %s for start-up reconciliation: %w", path, err)
	}
	logger.Info("Waiting for the other instance's call to finish before start-up reconciliation", "lock", path)
	type result struct {
		f   *fileutil.LockedFile
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := fileutil.LockFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		got <- result{f, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return nil, fmt.Errorf("locking %s for start-up reconciliation: %w", path, r.err)
		}
		logger.V(2).Info("Took the lock for start-up reconciliation", "lock", path)
		return func() { _ = r.f.Close() }, nil
	case <-ctx.Done():
		// The lock is released as soon as the waiting call gets it.
		go func() {
			if r := <-got; r.err == nil {
				_ = r.f.Close()
			}
		}()
		return nil, fmt.Errorf("waiting for %s for start-up reconciliation: %w", path, context.Cause(ctx))
	}
}

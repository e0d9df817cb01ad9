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

// reboot.go: a start after the node rebooted. The kubelet keeps its own
// record of prepared claims across a reboot and starts their pods' new
// containers with the CDI device IDs it has, without asking the plugin
// again (kubernetes/kubernetes#141433); but /var/run/cdi is tmpfs and the
// partitions may be gone. So before registering, the driver prepares
// every claim of its checkpoint again: partitions re-made, CDI specs
// rewritten, under the same CDI device IDs.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// BootIDFile is where Linux says which boot this is: a new random UUID at
// every boot (proc(5)).
const BootIDFile = "/proc/sys/kernel/random/boot_id"

// readBootID reads the boot id from path; "" when path is "".
func readBootID(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the node's boot id: %w", err)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" {
		return "", fmt.Errorf("reading the node's boot id: %s is empty", path)
	}
	return id, nil
}

// checkBoot records the node's boot id in the checkpoint and, when it
// differs from the recorded one, re-prepares the checkpoint's claims. A
// checkpoint without a boot id (an older format) is taken as this boot.
// Callers hold the start-up lock; reconcilePartitions has already
// forgotten the partitions that are gone.
func (d *Driver) checkBoot(ctx context.Context) error {
	boot, err := readBootID(d.bootIDFile)
	if err != nil {
		return fmt.Errorf("starting driver %s: %w", d.name, err)
	}
	if boot == "" || d.prepared.BootID == boot {
		return nil
	}
	if d.prepared.BootID != "" && len(d.prepared.Claims) > 0 {
		klog.FromContext(ctx).Info("The node rebooted since the checkpoint was saved: preparing its claims again (CDI specs, partitions)",
			"bootID", boot, "checkpointBootID", d.prepared.BootID, "claims", len(d.prepared.Claims))
		if err := d.reprepare(ctx); err != nil {
			return fmt.Errorf("starting driver %s after a reboot: %w", d.name, err)
		}
	}
	d.prepared.BootID = boot
	if err := d.store.Save(d.prepared); err != nil {
		return fmt.Errorf("starting driver %s: recording the boot id: %w", d.name, err)
	}
	return nil
}

// reprepare prepares every claim of the checkpoint again from its
// ResourceClaim (the CDI spec needs its config). A claim that is gone, or
// another one by now, is left for the kubelet's unprepare; an API error is
// retried until ctx ends, as publishing the slices waits for the API.
func (d *Driver) reprepare(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	uids := make([]types.UID, 0, len(d.prepared.Claims))
	for uid := range d.prepared.Claims {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}
	for _, uid := range uids {
		rec := d.prepared.Claims[uid]
		ref := klog.KRef(rec.Namespace, rec.Name)
		var done bool
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			claim, err := d.kube.ResourceV1().ResourceClaims(rec.Namespace).Get(ctx, rec.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				logger.Info("A prepared claim is gone; left for the kubelet's unprepare", "claim", ref, "claimUID", uid)
				return true, nil
			case err != nil:
				logger.Error(err, "Reading a prepared claim to prepare it again after the reboot; retrying", "claim", ref, "claimUID", uid)
				return false, nil
			case claim.UID != uid:
				logger.Info("A prepared claim was replaced by another of the same name; left for the kubelet's unprepare", "claim", ref, "claimUID", uid, "newUID", claim.UID)
				return true, nil
			}
			if _, _, err := d.prepare(ctx, claim); err != nil {
				// The record stays; the kubelet's next prepare or unprepare
				// of the claim acts on it.
				logger.Error(err, "Preparing a claim again after the reboot failed", "claim", ref, "claimUID", uid)
				return true, nil
			}
			done = true
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("preparing claim %s (%s) again: %w", ref, uid, errors.Join(err, context.Cause(ctx)))
		}
		if done {
			logger.Info("Prepared a claim again after the reboot", "claim", ref, "claimUID", uid)
		}
	}
	return nil
}

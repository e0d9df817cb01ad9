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
// record of prepared claims across a reboot and starts the containers of
// pods it still runs with the CDI device IDs it recorded, without asking
// the plugin again (seen in the e2e tier with kubelet 1.37; the failure
// of kubernetes/kubernetes#141433). But /var/run/cdi is tmpfs: our CDI
// specs and the helper's device metadata specs are gone, and so are the
// partitions. So after a reboot the driver prepares every claim of its
// checkpoint again through the helper's own NodePrepareResources, as the
// kubelet would: partitions re-made, CDI specs rewritten under the same
// CDI device IDs, and the helper rewrites its metadata specs.

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
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
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

// checkBoot compares the node's boot id with the checkpoint's. When the
// node rebooted and claims are prepared, it leaves the new boot id in
// d.rebootID for reprepare, which records it once the claims are prepared
// again (a crash before that re-prepares at the next start); otherwise it
// records it now. A checkpoint without a boot id (an older format) is
// taken as this boot. Callers hold the start-up lock; reconcilePartitions
// has already forgotten the partitions that are gone.
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
		d.rebootID = boot
		return nil
	}
	d.prepared.BootID = boot
	if err := d.store.Save(d.prepared); err != nil {
		return fmt.Errorf("starting driver %s: recording the boot id: %w", d.name, err)
	}
	return nil
}

// reprepare, after a reboot (d.rebootID), prepares every claim of the
// checkpoint again through the helper's DRA socket, once the helper
// serves. A claim that is gone, or another one by now, is left for the
// kubelet's unprepare; an API error is retried until ctx ends, as
// publishing the slices waits for the API. The boot id is recorded when
// every claim still there was prepared.
func (d *Driver) reprepare(ctx context.Context) error {
	if d.rebootID == "" {
		return nil
	}
	logger := klog.FromContext(ctx)
	d.mu.Lock()
	claims := make(map[types.UID]checkpoint.Claim, len(d.prepared.Claims))
	for uid, c := range d.prepared.Claims {
		claims[uid] = c
	}
	d.mu.Unlock()
	uids := make([]types.UID, 0, len(claims))
	for uid := range claims {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}
	req := &drapb.NodePrepareResourcesRequest{}
	for _, uid := range uids {
		rec := claims[uid]
		ref := klog.KRef(rec.Namespace, rec.Name)
		var found bool
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			claim, err := d.kube.ResourceV1().ResourceClaims(rec.Namespace).Get(ctx, rec.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				logger.Info("A prepared claim is gone; left for the kubelet's unprepare", "claim", ref, "claimUID", uid)
			case err != nil:
				logger.Error(err, "Reading a prepared claim to prepare it again after the reboot; retrying", "claim", ref, "claimUID", uid)
				return false, nil
			case claim.UID != uid:
				logger.Info("A prepared claim was replaced by another of the same name; left for the kubelet's unprepare", "claim", ref, "claimUID", uid, "newUID", claim.UID)
			default:
				found = true
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("preparing claim %s (%s) again after the reboot: %w", ref, uid, errors.Join(err, context.Cause(ctx)))
		}
		if found {
			req.Claims = append(req.Claims, &drapb.Claim{Namespace: rec.Namespace, Name: rec.Name, Uid: string(uid)})
		}
	}
	failed := 0
	if len(req.Claims) > 0 {
		conn, err := dialUnix(d.draSocket)
		if err != nil {
			return err
		}
		defer conn.Close()
		resp, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, req)
		if err != nil {
			return fmt.Errorf("preparing the checkpoint's claims again after the reboot through %s: %w", d.draSocket, err)
		}
		for _, c := range req.Claims {
			ref := klog.KRef(c.Namespace, c.Name)
			if r := resp.Claims[c.Uid]; r == nil || r.Error != "" {
				failed++
				why := "no answer for the claim"
				if r != nil {
					why = r.Error
				}
				logger.Error(errors.New(why), "Preparing a claim again after the reboot failed; the next start retries", "claim", ref, "claimUID", c.Uid)
				continue
			}
			logger.Info("Prepared a claim again after the reboot", "claim", ref, "claimUID", c.Uid)
		}
	}
	if failed > 0 {
		return nil // the boot id stays the old one
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return err
	}
	d.prepared.BootID = d.rebootID
	if err := d.store.Save(d.prepared); err != nil {
		return fmt.Errorf("recording the boot id after preparing the claims again: %w", err)
	}
	return nil
}

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
// of kubernetes/kubernetes#141433). But the partitions are gone, and on
// the default /var/run/cdi (tmpfs) so are our CDI specs and the helper's
// device metadata specs. So after a reboot the driver prepares every
// claim of its checkpoint again through the helper's own
// NodePrepareResources, as the kubelet would: partitions re-made, CDI
// specs rewritten under the same CDI device IDs, and the helper rewrites
// its metadata specs.
//
// The order matters. Start-up reconciliation first removes the CDI spec
// of every claim whose partition is gone (reconcileChips): on a CDI
// directory that survives the reboot (cdiDir: /etc/cdi) the old spec
// names the old partition's device node, and the tool hands the same id
// to the next partition it makes, another claim's. Then one round of
// re-prepare runs on the DRA socket before the driver registers, so the
// checkpoint's claims get their partitions before the kubelet sends new
// claims. The claims that round could not prepare are retried in the
// background with backoff; until they are back /readyz names them, and
// the new boot id is recorded only once every claim is back.

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
// d.rebootID and every prepared claim in d.missing for reprepare, which
// records the boot id once all are prepared again (a crash before that
// re-prepares at the next start); otherwise it records it now. A
// checkpoint without a boot id (an older format) is taken as this boot.
// Callers hold the start-up lock; it runs before reconcilePartitions,
// which says why a recorded partition is gone.
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
		missing := make(map[types.UID]missingClaim, len(d.prepared.Claims))
		for uid, c := range d.prepared.Claims {
			missing[uid] = missingClaim{ref: klog.KRef(c.Namespace, c.Name), why: "not prepared again yet"}
		}
		d.setMissing(missing)
		return nil
	}
	d.prepared.BootID = boot
	if err := d.store.Save(d.prepared); err != nil {
		return fmt.Errorf("starting driver %s: recording the boot id: %w", d.name, err)
	}
	return nil
}

// missingClaim is a claim of the checkpoint not prepared again since the
// reboot, and why.
type missingClaim struct {
	ref klog.ObjectRef
	why string
}

// setMissing replaces the claims not prepared again since the reboot.
func (d *Driver) setMissing(m map[types.UID]missingClaim) {
	d.rebootMu.Lock()
	defer d.rebootMu.Unlock()
	d.missing = m
}

// missingClaims is a copy of the claims not prepared again since the reboot.
func (d *Driver) missingClaims() map[types.UID]missingClaim {
	d.rebootMu.Lock()
	defer d.rebootMu.Unlock()
	out := make(map[types.UID]missingClaim, len(d.missing))
	for uid, m := range d.missing {
		out[uid] = m
	}
	return out
}

// Ready fails while claims prepared before the node rebooted are not
// prepared again, naming them: their pods' containers cannot start
// until they are (/readyz).
func (d *Driver) Ready() error {
	missing := d.missingClaims()
	if len(missing) == 0 {
		return nil
	}
	out := make([]string, 0, len(missing))
	for _, uid := range sortedUIDs(missing) {
		m := missing[uid]
		out = append(out, fmt.Sprintf("%s (%s): %s", m.ref, uid, m.why))
	}
	return fmt.Errorf("%s: %d claims prepared before the node rebooted are not prepared again (retrying): %s",
		d.name, len(out), strings.Join(out, "; "))
}

// sortedUIDs are the keys of m, sorted.
func sortedUIDs[V any](m map[types.UID]V) []types.UID {
	uids := make([]types.UID, 0, len(m))
	for uid := range m {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return uids
}

// reprepareRoundTimeout bounds one round of re-prepare: a round before
// registration must not hold the driver's start forever on an API server
// that does not answer.
const reprepareRoundTimeout = 2 * time.Minute

// reprepareBackoff spaces the rounds of re-prepare after the first.
var reprepareBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// retryReprepare runs rounds of re-prepare with backoff until every claim
// of the checkpoint is back or ctx ends; it closes done when it returns.
func (d *Driver) retryReprepare(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	// DelayFunc keeps the capped delay (ExponentialBackoffWithContext
	// would stop at the cap).
	_ = reprepareBackoff.DelayFunc().Until(ctx, false, true, func(ctx context.Context) (bool, error) {
		return d.reprepare(ctx), nil
	})
}

// reprepare, after a reboot, prepares the claims in d.missing again
// through the helper's DRA socket, which must serve, and reports whether
// all are back. A claim the kubelet unprepared meanwhile, or that is
// gone from the API (or another one by now), is no longer missing: it is
// left for the kubelet's unprepare. Once none is missing it records the
// boot id.
func (d *Driver) reprepare(ctx context.Context) bool {
	missing := d.missingClaims()
	if len(missing) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, reprepareRoundTimeout)
	defer cancel()
	still, req := d.claimsToReprepare(ctx, missing)
	for uid, why := range d.prepareAgain(ctx, req) {
		still[uid] = missingClaim{ref: missing[uid].ref, why: why}
	}
	if len(still) > 0 {
		d.setMissing(still)
		klog.FromContext(ctx).Info("Claims prepared before the reboot are not prepared again yet; retrying with backoff", "claims", len(still))
		return false
	}
	// Ready only once the boot id is recorded: a restart before that
	// would prepare the claims again.
	boot, err := d.recordBoot()
	if err != nil {
		for uid, m := range missing {
			missing[uid] = missingClaim{ref: m.ref, why: "prepared again, but " + err.Error()}
		}
		d.setMissing(missing)
		klog.FromContext(ctx).Error(err, "Recording the boot id after preparing the claims again; retrying")
		return false
	}
	d.setMissing(nil)
	klog.FromContext(ctx).Info("Every claim prepared before the reboot is prepared again (or gone)", "bootID", boot)
	return true
}

// claimsToReprepare reads the missing claims that the checkpoint still
// lists from the API: those still there are the request for the helper;
// those that cannot be read stay missing (still).
func (d *Driver) claimsToReprepare(ctx context.Context, missing map[types.UID]missingClaim) (still map[types.UID]missingClaim, req *drapb.NodePrepareResourcesRequest) {
	logger := klog.FromContext(ctx)
	d.mu.Lock()
	err := d.reload()
	prepared := make(map[types.UID]bool, len(d.prepared.Claims))
	for uid := range d.prepared.Claims {
		prepared[uid] = true
	}
	d.mu.Unlock()
	still, req = map[types.UID]missingClaim{}, &drapb.NodePrepareResourcesRequest{}
	for _, uid := range sortedUIDs(missing) {
		m := missing[uid]
		if err != nil {
			still[uid] = missingClaim{ref: m.ref, why: err.Error()}
			continue
		}
		if !prepared[uid] {
			logger.Info("A claim prepared before the reboot was unprepared meanwhile", "claim", m.ref, "claimUID", uid)
			continue
		}
		claim, err := d.kube.ResourceV1().ResourceClaims(m.ref.Namespace).Get(ctx, m.ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			logger.Info("A prepared claim is gone; left for the kubelet's unprepare", "claim", m.ref, "claimUID", uid)
		case err != nil:
			logger.Error(err, "Reading a prepared claim to prepare it again after the reboot; retrying", "claim", m.ref, "claimUID", uid)
			still[uid] = missingClaim{ref: m.ref, why: fmt.Sprintf("reading the claim: %v", err)}
		case claim.UID != uid:
			logger.Info("A prepared claim was replaced by another of the same name; left for the kubelet's unprepare", "claim", m.ref, "claimUID", uid, "newUID", claim.UID)
		default:
			req.Claims = append(req.Claims, &drapb.Claim{Namespace: m.ref.Namespace, Name: m.ref.Name, Uid: string(uid)})
		}
	}
	return still, req
}

// prepareAgain sends req to the helper's DRA socket, as the kubelet
// would, and returns why each claim that failed did.
func (d *Driver) prepareAgain(ctx context.Context, req *drapb.NodePrepareResourcesRequest) map[types.UID]string {
	failed := map[types.UID]string{}
	if len(req.Claims) == 0 {
		return failed
	}
	logger := klog.FromContext(ctx)
	resp, err := d.callPrepare(ctx, req)
	for _, c := range req.Claims {
		ref, uid := klog.KRef(c.Namespace, c.Name), types.UID(c.Uid)
		why := ""
		switch r := resp[c.Uid]; {
		case err != nil:
			why = err.Error()
		case r == nil:
			why = "no answer for the claim"
		case r.Error != "":
			why = r.Error
		}
		if why != "" {
			failed[uid] = why
			logger.Error(errors.New(why), "Preparing a claim again after the reboot failed; retrying", "claim", ref, "claimUID", uid)
			continue
		}
		logger.Info("Prepared a claim again after the reboot", "claim", ref, "claimUID", uid)
	}
	return failed
}

// callPrepare is NodePrepareResources on the helper's DRA socket.
func (d *Driver) callPrepare(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (map[string]*drapb.NodePrepareResourceResponse, error) {
	conn, err := dialUnix(d.draSocket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, err := drapb.NewDRAPluginClient(conn).NodePrepareResources(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("preparing the checkpoint's claims again after the reboot through %s: %w", d.draSocket, err)
	}
	return resp.Claims, nil
}

// recordBoot records the boot id once every claim is back: from now on a
// recorded partition that is gone was not lost to this reboot.
func (d *Driver) recordBoot() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return "", err
	}
	boot := d.rebootID
	d.prepared.BootID = boot
	if err := d.store.Save(d.prepared); err != nil {
		return "", fmt.Errorf("recording the boot id after preparing the claims again: %w", err)
	}
	d.rebootID = ""
	return boot, nil
}

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

package ranktable

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/claimstatus"
)

// CompletionIndexLabel orders an indexed Job's pods: its pods' ranks
// follow their completion index; other pods go by name.
const CompletionIndexLabel = "batch.kubernetes.io/job-completion-index"

// DefaultInterval is how often Collect looks again while the job is not
// ready.
const DefaultInterval = 2 * time.Second

// Job says which pods make up the job and which drivers' chips they hold.
type Job struct {
	Client    kubernetes.Interface
	Namespace string
	// Selector is a label selector of the job's pods.
	Selector string
	// Pods is how many pods the job has: the table waits for all of them.
	Pods int
	// Drivers are the DRA drivers whose chips are ranks.
	Drivers []string
	// Interval between looks (zero: DefaultInterval).
	Interval time.Duration
}

// Collect waits until every pod of the job is on a node and has its
// claims prepared, then returns the pods in rank order. It returns an
// error at once for a job that can never be ranked (a pod without chips
// of Drivers), and when ctx ends, saying what was still missing.
func Collect(ctx context.Context, j Job) ([]Member, error) {
	interval := j.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	logger := klog.FromContext(ctx)
	for {
		members, waiting, err := j.look(ctx)
		if err != nil {
			return nil, err
		}
		if len(waiting) == 0 {
			return members, nil
		}
		logger.V(2).Info("Waiting for the job's pods", "waiting", waiting)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("timed out waiting for the pods of %s in namespace %s: %s", j.Selector, j.Namespace, strings.Join(waiting, "; "))
		case <-time.After(interval):
		}
	}
}

// look reads the job once: its members if all are ready, else why not.
func (j Job) look(ctx context.Context) ([]Member, []string, error) {
	pods, err := j.Client.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: j.Selector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %s in namespace %s: %w", j.Selector, j.Namespace, err)
	}
	items := rankOrder(pods.Items)
	var waiting []string
	if len(items) < j.Pods {
		waiting = append(waiting, fmt.Sprintf("%d of %d pods exist", len(items), j.Pods))
	}
	if len(items) > j.Pods {
		return nil, nil, fmt.Errorf("%d pods match %s in namespace %s, the job has %d: narrow the selector", len(items), j.Selector, j.Namespace, j.Pods)
	}
	var members []Member
	for i := range items {
		m, why, err := j.member(ctx, &items[i])
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			waiting = append(waiting, why)
			continue
		}
		members = append(members, m)
	}
	return members, waiting, nil
}

// rankOrder sorts pods by completion index where all have one, else by
// name.
func rankOrder(pods []corev1.Pod) []corev1.Pod {
	out := slices.Clone(pods)
	indexed := true
	for _, p := range out {
		if _, err := strconv.Atoi(p.Labels[CompletionIndexLabel]); err != nil {
			indexed = false
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if indexed {
			ia, _ := strconv.Atoi(out[a].Labels[CompletionIndexLabel])
			ib, _ := strconv.Atoi(out[b].Labels[CompletionIndexLabel])
			return ia < ib
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// member is pod with its prepared chips, or why it is not ready yet, or
// an error if it never can be.
func (j Job) member(ctx context.Context, pod *corev1.Pod) (Member, string, error) {
	name := pod.Namespace + "/" + pod.Name
	if len(pod.Spec.ResourceClaims) == 0 {
		return Member{}, "", fmt.Errorf("pod %s has no resource claims: every pod of the job must hold chips of %s", name, strings.Join(j.Drivers, " or "))
	}
	if pod.Status.HostIP == "" || pod.Status.PodIP == "" {
		return Member{}, fmt.Sprintf("pod %s has no host or pod IP yet", name), nil
	}
	m := Member{Pod: name, HostIP: pod.Status.HostIP, PodIP: pod.Status.PodIP}
	for _, pc := range pod.Spec.ResourceClaims {
		claimName := claimOf(pod, pc)
		if claimName == "" {
			return Member{}, fmt.Sprintf("pod %s: claim %s is not created yet", name, pc.Name), nil
		}
		claim, err := j.Client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, claimName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Member{}, fmt.Sprintf("pod %s: claim %s is not created yet", name, claimName), nil
		}
		if err != nil {
			return Member{}, "", fmt.Errorf("reading claim %s/%s of pod %s: %w", pod.Namespace, claimName, name, err)
		}
		chips, why, err := j.chipsOf(claim)
		if err != nil {
			return Member{}, "", err
		}
		if why != "" {
			return Member{}, fmt.Sprintf("pod %s: %s", name, why), nil
		}
		m.Chips = append(m.Chips, chips...)
	}
	// Every claim is allocated here (chipsOf waits for that).
	if len(m.Chips) == 0 {
		return Member{}, "", fmt.Errorf("pod %s has no chips of %s in its claims: every pod of the job must hold chips", name, strings.Join(j.Drivers, " or "))
	}
	return m, "", nil
}

// claimOf is the name of the claim behind a pod's claim entry; "" while
// the claim of a template is not made yet.
func claimOf(pod *corev1.Pod, pc corev1.PodResourceClaim) string {
	if pc.ResourceClaimName != nil {
		return *pc.ResourceClaimName
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == pc.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// chipsOf are the prepared devices of the job's drivers in claim, or why
// the claim is not ready.
func (j Job) chipsOf(claim *resourceapi.ResourceClaim) ([]Chip, string, error) {
	name := claim.Namespace + "/" + claim.Name
	if claim.Status.Allocation == nil {
		return nil, fmt.Sprintf("claim %s is not allocated yet", name), nil
	}
	var chips []Chip
	for _, r := range claim.Status.Allocation.Devices.Results {
		if !slices.Contains(j.Drivers, r.Driver) {
			continue
		}
		st := statusOf(claim, r)
		if st == nil || !meta.IsStatusConditionTrue(st.Conditions, claimstatus.ConditionReady) || st.Data == nil {
			return nil, fmt.Sprintf("claim %s: device %s is not prepared yet", name, r.Device), nil
		}
		var data v1alpha1.DeviceStatusData
		if err := json.Unmarshal(st.Data.Raw, &data); err != nil {
			return nil, "", fmt.Errorf("claim %s: device %s: reading status.devices[].data: %w", name, r.Device, err)
		}
		chips = append(chips, Chip{Claim: name, Device: r.Device, Data: data})
	}
	return chips, "", nil
}

func statusOf(claim *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) *resourceapi.AllocatedDeviceStatus {
	for i, s := range claim.Status.Devices {
		if s.Driver == r.Driver && s.Pool == r.Pool && s.Device == r.Device && equalShare(s.ShareID, r.ShareID) {
			return &claim.Status.Devices[i]
		}
	}
	return nil
}

func equalShare(a *string, b *types.UID) bool {
	switch {
	case a == nil && b == nil:
		return true
	case a == nil || b == nil:
		return false
	}
	return *a == string(*b)
}

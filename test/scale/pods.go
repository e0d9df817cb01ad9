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

package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Apply creates the workload's DeviceClasses (kept if they exist) and,
// in namespace ns (created), its claim templates.
func (w Workload) Apply(ctx context.Context, client kubernetes.Interface, ns string) error {
	for _, c := range w.Classes {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DeviceClass %s: %w", c.Name, err)
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	for _, t := range w.Templates {
		if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, t, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ns, t.Name, err)
		}
	}
	return nil
}

// Pod is templates/pod-with-claim-template.yaml of scheduler_perf: one
// pause container using one claim from template, on nodes matching
// nodeSelector (nil: any).
func Pod(ns, name, template string, nodeSelector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "pause", Image: "registry.k8s.io/pause:3.10.1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "resource"}}},
			}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "resource", ResourceClaimTemplateName: &template}},
			NodeSelector:   nodeSelector,
		},
	}
}

// Scheduled is what Schedule observed.
type Scheduled struct {
	// Pods created and pods bound to a node.
	Pods, Bound int
	// Wall is from the first pod's creation to the last binding seen.
	Wall time.Duration
}

// PodsPerSecond is the throughput over Wall.
func (s Scheduled) PodsPerSecond() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Bound) / s.Wall.Seconds()
}

// Schedule creates pods pods in ns, using the workload's templates in
// turn, and waits until all are bound to a node (watched through an
// informer) or timeout passes; then it returns what it saw, an error
// only when it could not create the pods.
func (w Workload) Schedule(ctx context.Context, client kubernetes.Interface, ns string, pods int, timeout time.Duration) (Scheduled, error) {
	var mu sync.Mutex
	bound := map[string]bool{}
	var last time.Time
	all := make(chan struct{})
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !bound[p.Name] {
			bound[p.Name] = true
			last = time.Now()
			if len(bound) == pods {
				close(all)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		return Scheduled{}, fmt.Errorf("watching the pods of %s: %w", ns, err)
	}
	ictx, stop := context.WithCancel(ctx)
	defer func() { stop(); factory.Shutdown() }()
	factory.Start(ictx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return Scheduled{}, fmt.Errorf("watching the pods of %s: %w", ns, ctx.Err())
	}
	names := make([]int, pods)
	for i := range names {
		names[i] = i
	}
	start := time.Now()
	err := parallel(ctx, names, func(ctx context.Context, i int) error {
		t := w.Templates[i%len(w.Templates)].Name
		if _, err := client.CoreV1().Pods(ns).Create(ctx, Pod(ns, fmt.Sprintf("pod-%05d", i), t, w.NodeSelectors[t]), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %d in %s: %w", i, ns, err)
		}
		return nil
	})
	if err != nil {
		return Scheduled{}, err
	}
	// Say how far it got every 10 s: pods that cannot fit (a shape the
	// nodes do not have) would otherwise look like a hang until timeout.
	logger := klog.FromContext(ctx)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	deadlineAt := time.Now().Add(timeout)
	deadline := time.After(timeout)
waiting:
	for {
		select {
		case <-all:
			break waiting
		case <-deadline:
			break waiting
		case <-ctx.Done():
			break waiting
		case <-tick.C:
			mu.Lock()
			n, lastBound := len(bound), last
			mu.Unlock()
			idle := time.Since(start)
			if !lastBound.IsZero() {
				idle = time.Since(lastBound)
			}
			logger.Info("Waiting for pods to be bound", "namespace", ns, "bound", n, "pods", pods, "noneBoundFor", idle.Round(time.Second), "giveUpIn", time.Until(deadlineAt).Round(time.Second))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	s := Scheduled{Pods: pods, Bound: len(bound)}
	if !last.IsZero() {
		s.Wall = last.Sub(start)
	}
	return s, nil
}

// DeletePods deletes every pod of ns (grace 0: kwok's pods have
// no kubelet to wait for) and waits until the pods and the claims made
// for them are gone, so the next side starts on free devices.
func DeletePods(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration) error {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	err = parallel(ctx, list.Items, func(ctx context.Context, p corev1.Pod) error {
		err := client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s/%s: %w", ns, p.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var left string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing the pods of %s: %w", ns, err)
		}
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing the claims of %s: %w", ns, err)
		}
		left = fmt.Sprintf("%d pods, %d claims", len(pods.Items), len(claims.Items))
		return len(pods.Items) == 0 && len(claims.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods and claims of %s to go (%s left): %w", ns, left, err)
	}
	return nil
}

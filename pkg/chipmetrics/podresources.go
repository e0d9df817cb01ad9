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

package chipmetrics

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultPodResourcesSocket is the kubelet's PodResources socket.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResourcesMaxMessage bounds a List answer, as the kubelet's own
// client does (pkg/kubelet/apis/podresources: 16 MiB).
const podResourcesMaxMessage = 16 << 20

// KubeletPodResources lists the pods' DRA devices through the kubelet's
// PodResources v1 List API on a unix socket.
type KubeletPodResources struct {
	conn   *grpc.ClientConn
	client podresourcesv1.PodResourcesListerClient
}

// NewKubeletPodResources connects (lazily, at the first List) to the
// kubelet's socket.
func NewKubeletPodResources(socket string) (*KubeletPodResources, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(podResourcesMaxMessage)))
	if err != nil {
		return nil, fmt.Errorf("connecting to the kubelet's pod resources at %s: %w", socket, err)
	}
	return &KubeletPodResources{conn: conn, client: podresourcesv1.NewPodResourcesListerClient(conn)}, nil
}

// Close closes the connection.
func (k *KubeletPodResources) Close() error { return k.conn.Close() }

// List implements PodResources.
func (k *KubeletPodResources) List(ctx context.Context) ([]Container, error) {
	resp, err := k.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the kubelet's pod resources: %w", err)
	}
	return Containers(resp), nil
}

// Containers flattens a List answer to one Container per container and
// DRA device.
func Containers(resp *podresourcesv1.ListPodResourcesResponse) []Container {
	var out []Container
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, dr := range c.GetDynamicResources() {
				for _, r := range dr.GetClaimResources() {
					out = append(out, Container{Namespace: p.GetNamespace(), Pod: p.GetName(), Container: c.GetName(),
						ClaimNamespace: dr.GetClaimNamespace(), ClaimName: dr.GetClaimName(),
						Driver: r.GetDriverName(), Pool: r.GetPoolName(), Device: r.GetDeviceName()})
				}
			}
		}
	}
	return out
}

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
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Live checks the path the kubelet's calls take, as NVIDIA's GPU DRA
// driver's liveness check does (k8s-dra-driver-gpu
// cmd/gpu-kubelet-plugin/health.go: GetInfo on the registration socket,
// an empty NodePrepareResources on the DRA socket): both sockets answer,
// and a prepare gets through the helper's serialization, the driver's
// lock and the checkpoint's re-read within ctx. A driver whose calls are
// stuck fails it, so the kubelet restarts the agent. The two connections
// are made once and reused (gRPC reconnects them as needed).
func (d *Driver) Live(ctx context.Context) error {
	if d.helper == nil {
		return errors.New("not started")
	}
	reg, dra, err := d.liveConns()
	if err != nil {
		return err
	}
	if _, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		return fmt.Errorf("%s: GetInfo on %s: %w", d.name, d.regSocket, err)
	}
	if _, err := drapb.NewDRAPluginClient(dra).NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{}); err != nil {
		return fmt.Errorf("%s: an empty NodePrepareResources on %s: %w", d.name, d.draSocket, err)
	}
	return nil
}

// liveConns are the connections of Live to the registration and the DRA
// socket, made at the first call.
func (d *Driver) liveConns() (reg, dra *grpc.ClientConn, err error) {
	d.live.mu.Lock()
	defer d.live.mu.Unlock()
	if d.live.reg == nil {
		if d.live.reg, err = dialUnix(d.regSocket); err != nil {
			return nil, nil, err
		}
	}
	if d.live.dra == nil {
		if d.live.dra, err = dialUnix(d.draSocket); err != nil {
			return nil, nil, err
		}
	}
	return d.live.reg, d.live.dra, nil
}

// liveClients holds Live's connections.
type liveClients struct {
	mu       sync.Mutex
	reg, dra *grpc.ClientConn
}

// close closes Live's connections.
func (l *liveClients) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range []*grpc.ClientConn{l.reg, l.dra} {
		if c != nil {
			_ = c.Close()
		}
	}
	l.reg, l.dra = nil, nil
}

func dialUnix(path string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	return conn, nil
}

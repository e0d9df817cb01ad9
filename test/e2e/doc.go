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

// Package e2e is tier 4 of docs/architecture.md: the driver in a real Kubernetes 1.37
// cluster on this machine (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, one real containerd + kubelet node, kwok nodes, the real
// node agents and the Helm chart), started by test/e2e/framework.
//
// The tests carry the build tag e2e, so `go test ./...` skips them. They
// need root and the binaries of hack/e2e/build.sh:
//
//	hack/e2e/run.sh                     # build + go test -tags e2e ./test/e2e/
//	hack/e2e/demo-cluster.sh up|down    # the same cluster with the demo, left running
//
// See hack/e2e/README.md.
package e2e

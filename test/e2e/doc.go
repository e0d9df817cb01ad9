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

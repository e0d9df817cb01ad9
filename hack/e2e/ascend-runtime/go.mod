// A stand-in for Huawei's ascend-docker-runtime on the e2e node; its own
// module so the driver's `go test ./...` never builds it.
module github.com/accel-dra/accel-dra/hack/e2e/ascend-runtime

go 1.26.0

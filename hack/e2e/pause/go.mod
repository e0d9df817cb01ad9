// The sandbox ("pause") binary of the e2e node's local image; its own
// module so the driver's `go test ./...` never builds it.
module github.com/accel-dra/accel-dra/hack/e2e/pause

go 1.26.0

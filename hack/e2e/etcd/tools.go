//go:build tools

// Package tools pins the etcd server this module builds
// (`go build go.etcd.io/etcd/server/v3`), so that `go mod tidy` keeps its
// dependencies.
package tools

import _ "go.etcd.io/etcd/server/v3"

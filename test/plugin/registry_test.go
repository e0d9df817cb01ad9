package plugin_test

import "github.com/accel-dra/accel-dra/pkg/vendors/all"

// registry is the vendors the binaries serve, built as their main builds
// it.
var registry = all.Registry()

// Package profiles embeds the bundled hardware profiles so the binaries can
// simulate a node by profile name without any files on disk.
package profiles

import "embed"

// FS holds every <name>.yaml profile of this directory.
//
//go:embed *.yaml
var FS embed.FS

// Package all registers every vendor accel-dra supports with
// pkg/vendors. The binaries and the tests that need real vendors import it
// for its side effect; adding a vendor adds its line here.
package all

import (
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

func init() {
	vendors.Register(ascend.Ascend{})
	vendors.Register(cambricon.Cambricon{})
}

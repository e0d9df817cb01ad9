// Package all lists every vendor accel-dra supports. The binaries' main
// and the tests that need the real vendors build their registry from it;
// adding a vendor adds its line here.
package all

import (
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// Vendors returns every vendor accel-dra supports.
func Vendors() []vendors.Vendor {
	return []vendors.Vendor{ascend.Ascend{}, cambricon.Cambricon{}}
}

// Registry returns the registry of Vendors.
func Registry() vendors.Registry { return vendors.MustRegistry(Vendors()...) }

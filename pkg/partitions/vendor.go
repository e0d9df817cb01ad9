package partitions

import (
	"github.com/accel-dra/accel-dra/pkg/discovery"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Vendor is the partition knowledge of a vendor whose chips can be cut
// into partitions. A registered vendors.Vendor implements it to offer
// partitions; one that does not publishes whole chips and shares only.
// It lives here, not in pkg/vendors, because it speaks this package's
// types, which build on pkg/vendors.
type Vendor interface {
	// PartitionModel returns the partition facts of chip c (cores and
	// memory known), or false when its model has no partitions.
	PartitionModel(c inventory.Chip) (Model, bool)
	// NewPartitionTool returns the tool that makes, lists and removes
	// partitions by running the vendor's tool through runner.
	NewPartitionTool(runner discovery.CommandRunner) Tool
	// PartitionEdits returns what a container of partition inst of chip c
	// gets, as the vendor's device plugin gives it.
	PartitionEdits(c inventory.Chip, inst Instance) (Edits, error)
}

// vendorOf returns the partition knowledge of a registered vendor.
func vendorOf(v inventory.Vendor) (Vendor, bool) {
	x, ok := vendors.Lookup(v)
	if !ok {
		return nil, false
	}
	pv, ok := x.(Vendor)
	return pv, ok
}

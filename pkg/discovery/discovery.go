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

// Package discovery finds the accelerator chips of a node. Each vendor has
// a backend in its own package (pkg/vendors/ascend, pkg/vendors/cambricon)
// reading device files and sysfs under a root directory plus vendor tool
// output; the simulated backend builds the same inventory from a hardware
// profile. This package holds what they share: the backend interface, the
// tool runners, device files, link groups and version parsing.
package discovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Backend discovers the chips of one source (a vendor, or a profile).
type Backend interface {
	// Name says which backend this is, for logs and errors.
	Name() string
	// Discover returns what the backend found. A backend whose vendor has no
	// device files on the node returns an empty inventory and no error.
	Discover(ctx context.Context) (inventory.Inventory, error)
}

// DiscoverAll runs the backends in order and merges their inventories.
// One backend's failure does not hide the others' chips: it returns the
// merged inventory of the backends that succeeded together with the
// failed ones' errors (joined, each naming its backend), so a caller can
// serve one vendor while another's tool or library fails. A caller that
// needs every backend treats any error as failure.
func DiscoverAll(ctx context.Context, backends ...Backend) (inventory.Inventory, error) {
	var inv inventory.Inventory
	var errs []error
	for _, b := range backends {
		part, err := b.Discover(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("discovering %s chips: %w", b.Name(), err))
			continue
		}
		inv.Merge(part)
	}
	if err := inv.Validate(); err != nil {
		return inventory.Inventory{}, fmt.Errorf("checking discovered inventory: %w", err)
	}
	return inv, errors.Join(errs...)
}

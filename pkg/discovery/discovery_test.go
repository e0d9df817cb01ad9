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

package discovery

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// fixedBackend returns its inventory or its error.
type fixedBackend struct {
	name string
	inv  inventory.Inventory
	err  error
}

func (b fixedBackend) Name() string { return b.name }

func (b fixedBackend) Discover(context.Context) (inventory.Inventory, error) { return b.inv, b.err }

func chipOf(vendor inventory.Vendor, index int) inventory.Chip {
	return inventory.Chip{Vendor: vendor, Model: "M", Index: index, UUID: string(vendor) + "-uuid", LinkType: inventory.LinkPCIe,
		LinkGroup: "pcie-0", Healthy: true, DeviceNodes: []string{"/dev/x"}}
}

// One backend's failure (a tool that errors out, a library call that
// fails) leaves the other backends' chips in the inventory, next to an
// error naming the failed backend; only the failed ones are in the error.
func TestDiscoverAllKeepsTheChipsOfTheBackendsThatSucceed(t *testing.T) {
	toolFailed := errors.New("npu-smi info: exit status 1")
	ok := fixedBackend{name: "cambricon", inv: inventory.Inventory{Chips: []inventory.Chip{chipOf("cambricon", 0)}}}
	failed := fixedBackend{name: "ascend", err: toolFailed}

	inv, err := DiscoverAll(t.Context(), failed, ok)
	require.ErrorIs(t, err, toolFailed)
	require.EqualError(t, err, "discovering ascend chips: npu-smi info: exit status 1")
	require.Equal(t, []inventory.Vendor{"cambricon"}, inv.Vendors())

	other := errors.New("cnmon: timed out")
	inv, err = DiscoverAll(t.Context(), failed, fixedBackend{name: "cambricon", err: other})
	require.ErrorIs(t, err, toolFailed)
	require.ErrorIs(t, err, other)
	require.Empty(t, inv.Chips)

	inv, err = DiscoverAll(t.Context(), ok)
	require.NoError(t, err)
	require.Len(t, inv.Chips, 1)
}

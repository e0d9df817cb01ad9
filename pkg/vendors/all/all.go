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

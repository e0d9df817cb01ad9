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

package vendors

// Model is one chip model of a vendor's catalogue (Vendor.Models): what
// is generated per model, the chart's per-model and per-partition-shape
// DeviceClasses (hack/gen-deviceclasses), comes from it rather than from
// a hand list.
type Model struct {
	// Name is the accel-dra.dev/model value: "Ascend910B3", "MLU370-X8".
	Name string
	// Shapes are the partition shapes of the model, smallest first; none
	// when it has no partitions.
	Shapes []Shape
}

// Shape is one partition template of a model, as a selector matches its
// partitions.
type Shape struct {
	// Type is the accel-dra.dev/type of its partitions: "vnpu", "smlu".
	Type string
	// Slug is the template's slug in device names (Template.Slug):
	// "vir05-1c-16g", "smlu-25p".
	Slug string
	// Template is the partitionTemplate attribute of every partition of
	// the shape ("vir05_1c_16g") or, with Prefix, the start of it: an sMLU
	// profile's name ends with the chip's memory ("25p." of
	// "25p.5827mb"), which differs between chips of one model.
	Template string
	Prefix   bool
}

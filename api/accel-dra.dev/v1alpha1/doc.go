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

// Package v1alpha1 holds the accel-dra.dev/v1alpha1 file formats users
// write: the SimulatedCluster file of `accel-dra simulate`, the hardware
// profiles of the simulated discovery backend, the opaque device config
// of our drivers (DeviceConfig, one type under each driver's kind), and
// the data the node agent writes into a ResourceClaim's status.devices
// (DeviceStatusData).
//
// The package is the bottom of the module: it imports nothing of pkg/ and
// names no vendor or driver (test/imports checks it). What it must know of
// the vendors, each binary's main hands it from its vendor registry: the
// drivers and their config kinds (NewConfigDecoder, through
// vendors.Registry.ConfigDecoder) and the vendors a hardware profile may
// name (vendors.Registry.ProfileVendors).
//
// Deep copies are generated (zz_generated.deepcopy.go, `make generate`).
//
// +k8s:deepcopy-gen=package
package v1alpha1

// GroupVersion is the apiVersion of every accel-dra file.
const GroupVersion = "accel-dra.dev/v1alpha1"

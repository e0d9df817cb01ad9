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

// Package vendors is the one seam between accel-dra and the chip vendors.
// Everything that differs between Huawei Ascend and Cambricon — names,
// discovery, container edits, partitions, profile nodes, the model
// catalogue — sits behind the Vendor interface, one package per vendor
// (pkg/vendors/ascend, pkg/vendors/cambricon). The types a vendor speaks
// (partition templates, instances, container edits, the partition tool)
// live here too, so a vendor package imports this package and the
// discovery core only, never a package that uses vendors.
//
// The node agent hands its driver of each vendor the Vendor value
// (driver.Config.Vendor), which passes it on to the CDI writer
// (cdi.Claim.Vendor): preparing a claim asks the vendor object, not a
// registry. Code that serves several vendors at once (slices, discovery,
// the chip modes, the CLI, simulate) is given a Registry, which each
// binary's main builds from pkg/vendors/all (there is no package-level
// one), and looks a vendor up in it by its inventory value
// (accel-dra.dev/vendor, Lookup), driver name (ByDriver), --vendors
// option (ByOption) or CDI kind (ByCDIKind), or ranges over All. The file
// formats of api/accel-dra.dev/v1alpha1 get the vendors the same way:
// the opaque config decoder is built from a registry (ConfigDecoder, each
// vendor's Names.ConfigKind or ConfigKindNone), and profiles are checked
// against its vendors (ProfileVendors).
//
// A vendor package has one file per concern, the same names in each:
//
//	vendor.go       the vendor object, its Names, NewBackend, ProfileNode
//	                and HostMounts
//	discovery.go    the discovery backend (device files, sysfs, vendor tool)
//	info.go, topo.go, models.go, healthcodes.go
//	                the vendor tool's output parsers and model tables
//	catalogue.go    Models: the chip models it knows without a node
//	cdi.go          CDI: what the vendor's runtime puts into a container
//	partitions.go   the partition tool and partition container edits
//	templates.go    the partition templates per chip model (Partitions)
//	profilenode.go  the vendor tool's partition commands on a profile node
//	telemetry.go    NewTelemetry: utilization, memory, temperature, power
//	testdata/       recorded tool output and host trees
//
// Partitions are optional: Partitions returns nil for a vendor whose
// chips have none. docs/architecture.md ("How to add a vendor") lists the
// steps to add a vendor; pkg/vendors/vendortest is a third vendor that
// shows the generic packages need no change for one.
package vendors

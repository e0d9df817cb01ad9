// Package vendors is the one seam between accel-dra and the chip vendors.
// Everything that differs between Huawei Ascend and Cambricon — names,
// discovery, container edits, partitions, simulation — sits behind the
// Vendor interface, one package per vendor (pkg/vendors/ascend,
// pkg/vendors/cambricon), registered once in pkg/vendors/all. The generic
// packages (cdi, partitions, discovery/source, discovery/simulated,
// devicefaker, resourceslices, driver, nodeagent, cli, webhook) never
// name a vendor: they look one up here by its inventory value
// (accel-dra.dev/vendor, Lookup), driver name (ByDriver), --vendors
// option (ByOption) or CDI kind (ByCDIKind), or range over All.
//
// A vendor package has one file per concern, the same names in each:
//
//	vendor.go       the vendor object, its Names, NewBackend and Simulation
//	discovery.go    the discovery backend (device files, sysfs, vendor tool)
//	info.go, topo.go, models.go, healthcodes.go
//	                the vendor tool's output parsers and model tables
//	cdi.go          CDI: what the vendor's runtime puts into a container
//	partitions.go   the partition tool and partition container edits
//	templates.go    the partition templates per chip model
//	simulated.go    the vendor tool's partition commands on a simulated node
//	testdata/       recorded tool output and host trees
//
// Partitions are optional: a vendor implements partitions.Vendor to have
// them and partitionsim.Simulator to have them on simulated nodes. Those
// interfaces live beside the types they use (pkg/partitions builds on
// this package, so this one cannot name its types).
//
// Adding a vendor:
//
//  1. Create pkg/vendors/<vendor> with a type implementing Vendor (and
//     partitions.Vendor, partitionsim.Simulator if its chips have
//     partitions), following the file layout above; its names must be new
//     (Register panics on a clash) and are user-facing, so they go into
//     the design contract first.
//  2. Register it: one line in pkg/vendors/all.
//  3. Add its DeviceClass to the chart (deployments/helm/accel-dra) and
//     its opaque config type (Names.ConfigKind) to
//     api/accel-dra.dev/v1alpha1, and a hardware profile if it should be
//     simulated.
//
// No generic package changes; pkg/vendors/vendortest is a third vendor
// that shows it in the tests.
package vendors

// Package v1alpha1 holds the accel-dra.dev/v1alpha1 file formats users
// write: the SimulatedCluster file of `accel-dra simulate`, the hardware
// profiles of the simulated discovery backend, the opaque device configs
// of both drivers, and the data the node agent writes into a ResourceClaim's
// status.devices (DeviceStatusData).
//
// Deep copies are generated (zz_generated.deepcopy.go, `make generate`).
//
// +k8s:deepcopy-gen=package
package v1alpha1

// GroupVersion is the apiVersion of every accel-dra file.
const GroupVersion = "accel-dra.dev/v1alpha1"

package cdi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Values of Config.VisibleDevicesEnv, the node agent's
// --visible-devices-env flag.
const (
	// VisibleDevicesAuto leaves ASCEND_VISIBLE_DEVICES out of the specs
	// where ascend-docker-runtime is found on the node (see
	// AscendRuntimeFound) and sets it otherwise; CAMBRICON_VISIBLE_DEVICES
	// is set, since Cambricon's runtime cannot be detected (its source and
	// install layout are not public).
	VisibleDevicesAuto = "auto"
	// VisibleDevicesSet sets both vendors' variables in every claim's spec.
	VisibleDevicesSet = "set"
	// VisibleDevicesOmit sets neither: the vendor runtimes then leave the
	// containers alone, and the facts stay in the DRA_DEVICE_* variables
	// and the device metadata file.
	VisibleDevicesOmit = "omit"
)

// VisibleDevicesEnvValues lists the valid values, for flag help.
var VisibleDevicesEnvValues = []string{VisibleDevicesAuto, VisibleDevicesSet, VisibleDevicesOmit}

// ascendRuntimeMarkers are files whose presence on the node means
// ascend-docker-runtime is installed, so a container that carries
// ASCEND_VISIBLE_DEVICES may be handed to it (as containerd's or docker's
// runtime it edits every container's spec, runtime/process/process.go
// DoProcess → modifySpecFile).
//   - the binary at the installer's default path: INSTALL_PATH in
//     component/ascend-docker-runtime/build/scripts/run_main.sh
//     (Ascend/mind-cluster) is /usr/local/Ascend/Ascend-Docker-Runtime;
//   - containerd's or docker's configuration naming it: the installer
//     adds a runtime "ascend" whose BinaryName (containerd) or path
//     (docker) is <install path>/ascend-docker-runtime and makes it the
//     default, for a custom --install-path too
//     (install/process/containerd_process.go editContainerdConfig,
//     constant.go runtimeName, default_runtime_name; run_main.sh).
var ascendRuntimeMarkers = []struct {
	path string
	// contains, if set, must occur in the file.
	contains string
}{
	{path: "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"},
	{path: "/etc/containerd/config.toml", contains: "ascend-docker-runtime"},
	{path: "/etc/docker/daemon.json", contains: "ascend-docker-runtime"},
}

// AscendRuntimeFound reports whether ascend-docker-runtime is installed
// or configured on the node whose root the process sees at root, and the
// file that shows it.
func AscendRuntimeFound(root string) (bool, string) {
	for _, m := range ascendRuntimeMarkers {
		p := filepath.Join(root, m.path)
		if m.contains == "" {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return true, m.path
			}
			continue
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(m.contains)) {
			return true, m.path
		}
	}
	return false, ""
}

// omittedVisibleEnv resolves mode into the vendors whose visible-devices
// variable the specs leave out, and for auto the file that decided it.
func omittedVisibleEnv(mode, root string) (map[inventory.Vendor]bool, string, error) {
	switch mode {
	case "", VisibleDevicesAuto:
		found, marker := AscendRuntimeFound(root)
		return map[inventory.Vendor]bool{inventory.VendorHuawei: found}, marker, nil
	case VisibleDevicesSet:
		return map[inventory.Vendor]bool{}, "", nil
	case VisibleDevicesOmit:
		return map[inventory.Vendor]bool{inventory.VendorHuawei: true, inventory.VendorCambricon: true}, "", nil
	}
	return nil, "", ValidateVisibleDevicesEnv(mode)
}

// ValidateVisibleDevicesEnv checks a Config.VisibleDevicesEnv value, so
// the agent can refuse a bad flag before it discovers anything.
func ValidateVisibleDevicesEnv(mode string) error {
	switch mode {
	case "", VisibleDevicesAuto, VisibleDevicesSet, VisibleDevicesOmit:
		return nil
	}
	return fmt.Errorf("visible-devices env mode %q is not one of %v", mode, VisibleDevicesEnvValues)
}

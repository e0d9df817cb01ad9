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

package cdi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// Values of Config.VisibleDevicesEnv, the node agent's
// --visible-devices-env flag.
const (
	// VisibleDevicesAuto does not list the chips in a vendor's
	// visible-devices variable (ASCEND_VISIBLE_DEVICES) where the vendor's
	// container runtime (ascend-docker-runtime) is found on the node (see
	// RuntimeFound), and lists them otherwise; a vendor without a
	// detectable runtime (Cambricon) always gets the list. Not listed, the
	// variable is set to the runtime's neutral value
	// (vendors.Runtime.Neutral), so a value the pod sets itself is
	// replaced.
	VisibleDevicesAuto = "auto"
	// VisibleDevicesSet sets every vendor's variable in every claim's spec.
	VisibleDevicesSet = "set"
	// VisibleDevicesOmit lists the chips for no vendor: a vendor with a
	// known runtime gets its neutral value, another vendor's variable is
	// left out. The facts stay in the DRA_DEVICE_* variables and the
	// device metadata file.
	VisibleDevicesOmit = "omit"
)

// VisibleDevicesEnvValues lists the valid values, for flag help.
var VisibleDevicesEnvValues = []string{VisibleDevicesAuto, VisibleDevicesSet, VisibleDevicesOmit}

// VisibleDevicesEnvHelp is the usage of the --visible-devices-env flag for
// the vendors of reg: their visible-devices variables and container
// runtimes.
func VisibleDevicesEnvHelp(reg vendors.Registry) string {
	var vars, auto []string
	for _, v := range reg.All() {
		e := v.CDI()
		vars = append(vars, e.VisibleEnv)
		if e.Runtime != nil {
			auto = append(auto, fmt.Sprintf("%s=%q where %s", e.VisibleEnv, e.Runtime.Neutral, e.Runtime.Name))
		}
	}
	help := "whether CDI specs set " + strings.Join(vars, " and ") +
		", which the vendors' container runtimes react to by injecting the chips again: auto "
	if len(auto) > 0 {
		help += "sets " + strings.Join(auto, " and ") + " is installed or configured on the node (it injects nothing for that value) and lists the chips otherwise"
	} else {
		help += "sets them"
	}
	return help + "; set; omit (lists no chips; the chips' facts stay in the DRA_DEVICE_* variables and the device metadata file)"
}

// RuntimeFound reports whether vendor v's container runtime
// (vendors.CDIEdits.Runtime) is installed or configured on the node whose
// root the process sees at root, and the file that shows it.
func RuntimeFound(v vendors.Vendor, root string) (bool, string) {
	rt := v.CDI().Runtime
	if rt == nil {
		return false, ""
	}
	for _, m := range rt.Markers {
		p := filepath.Join(root, m.Path)
		if m.Contains == "" {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return true, m.Path
			}
			continue
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(m.Contains)) {
			return true, m.Path
		}
	}
	return false, ""
}

// omittedVisibleEnv resolves mode into the vendors of reg whose
// visible-devices variable the specs leave out, and logs a vendor runtime
// that decided it.
func omittedVisibleEnv(ctx context.Context, reg vendors.Registry, mode, root string) (map[inventory.Vendor]bool, error) {
	if err := ValidateVisibleDevicesEnv(mode); err != nil {
		return nil, err
	}
	omit := map[inventory.Vendor]bool{}
	for _, x := range reg.All() {
		n, edits := x.Names(), x.CDI()
		found, marker := RuntimeFound(x, root)
		if found {
			// A warning, in every mode: the runtime injects whatever chips
			// a container's variable names, so it stays a way around DRA
			// for any container our specs do not reach (a pod without a
			// claim of ours). Removing its device injection is a
			// prerequisite of the driver (docs/install.md).
			klog.FromContext(ctx).Info("Warning: "+edits.Runtime.Name+" is installed on this node and injects every chip a container's "+
				edits.VisibleEnv+" names, claimed or not; remove its device injection from the node (docs/install.md). "+
				"Claimed containers get "+edits.VisibleEnv+"=\""+edits.Runtime.Neutral+"\" unless the mode is set, so their own value is replaced",
				"found", marker, "mode", mode)
		}
		switch mode {
		case "", VisibleDevicesAuto:
			if found {
				omit[n.Vendor] = true
			}
		case VisibleDevicesOmit:
			omit[n.Vendor] = true
		}
	}
	return omit, nil
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

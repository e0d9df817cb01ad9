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

import (
	"fmt"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// Helpers for Simulation.DriverFiles, shared by the vendors.

// OneDriverVersion is the one driver version the vendor's chips report; a
// node has one driver per vendor, so differing versions are an error.
func OneDriverVersion(v inventory.Vendor, chips []inventory.Chip) (string, error) {
	version := ""
	for _, c := range chips {
		switch {
		case c.DriverVersion == "":
		case version == "":
			version = c.DriverVersion
		case version != c.DriverVersion:
			return "", fmt.Errorf("creating fake %s driver files: chips report driver versions %s and %s, a node has one driver", v, version, c.DriverVersion)
		}
	}
	if version == "" {
		return "", fmt.Errorf("creating fake %s driver files: no chip reports a driver version", v)
	}
	return version, nil
}

// Placeholder is the content of a fake driver library.
func Placeholder(what string) string {
	return "placeholder " + what + " created by accel-dra devicefaker; not a real shared object\n"
}

// ToolNotice is a vendor tool stand-in: it says what it is instead of
// failing with "not found", so a workload's diagnostics point at the fake
// node.
func ToolNotice(tool, chip string) string {
	return "#!/bin/sh\n" +
		"echo \"" + tool + ": placeholder created by accel-dra devicefaker; this node has fake " + chip + " device files and no real chips\"\n" +
		"exit 0\n"
}

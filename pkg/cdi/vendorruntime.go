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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

// visibleEnv decides whether the specs list a vendor's chips in its
// visible-devices variable or set the runtime's neutral value instead.
//
// On a node that two node groups serve (one agent for Ascend, one for
// Cambricon), only the Ascend agent sees /usr/local/Ascend, where
// ascend-docker-runtime's marker is: the chart mounts a vendor's paths
// only into the groups serving it (a hostPath cannot be optional). The
// Cambricon agent would then leave ASCEND_VISIBLE_DEVICES out of its
// claims' specs, and a Cambricon pod could name Ascend chips for the
// runtime to inject. So the agent serving a vendor records its finding in
// the directory the node's agents share, and the others read it at every
// spec they write: an Ascend agent that starts later still counts.
type visibleEnv struct {
	mode   string
	logger klog.Logger
	// all are the registry's vendors, for VisibleDevicesOmit.
	all []inventory.Vendor
	// own are the vendors whose runtime this agent found itself.
	own map[inventory.Vendor]bool
	// shared maps the runtimes' vendors this agent does not serve to
	// their finding files.
	shared map[inventory.Vendor]string
}

// runtimeFinding is the file an agent records its finding in.
type runtimeFinding struct {
	Runtime string `json:"runtime"`
	Found   bool   `json:"found"`
	Marker  string `json:"marker,omitempty"`
}

// RuntimeFindingFile is where an agent whose state directory is dir
// records the finding of vendor v's runtime.
func RuntimeFindingFile(dir string, v vendors.Vendor) string {
	return filepath.Join(dir, "vendor-runtimes", v.Names().Option+".json")
}

// newVisibleEnv looks for the runtimes of cfg's vendors under
// cfg.VisibleRoot once, records the findings of the served vendors in
// cfg.FindingsDir and logs what it decided.
func newVisibleEnv(ctx context.Context, cfg Config) (*visibleEnv, error) {
	if err := ValidateVisibleDevicesEnv(cfg.VisibleDevicesEnv); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	ve := &visibleEnv{mode: cfg.VisibleDevicesEnv, logger: logger, own: map[inventory.Vendor]bool{}, shared: map[inventory.Vendor]string{}}
	served := map[inventory.Vendor]bool{}
	for _, v := range cfg.Served {
		served[v] = true
	}
	for _, x := range cfg.Registry.All() {
		ve.all = append(ve.all, x.Names().Vendor)
		rt := x.CDI().Runtime
		if rt == nil {
			continue
		}
		found, marker := RuntimeFound(x, cfg.VisibleRoot)
		if found {
			ve.own[x.Names().Vendor] = true
			warnRuntime(ctx, x, marker, cfg.VisibleDevicesEnv)
		}
		if cfg.FindingsDir == "" {
			continue
		}
		if len(served) > 0 && !served[x.Names().Vendor] {
			ve.shared[x.Names().Vendor] = RuntimeFindingFile(cfg.FindingsDir, x)
			continue
		}
		// Not fatal: the finding only informs the node's other agents,
		// and a full or read-only state directory must not stop this one
		// from serving the claims it has prepared.
		if err := writeFinding(RuntimeFindingFile(cfg.FindingsDir, x), runtimeFinding{Runtime: rt.Name, Found: found, Marker: marker}); err != nil {
			logger.Error(err, "Cannot tell the node's other agents whether a vendor runtime is installed; their claims' specs may leave its variable alone", "runtime", rt.Name)
		}
	}
	logger.V(2).Info("Visible-devices variables in CDI specs", "mode", cfg.VisibleDevicesEnv, "omittedFor", ve.omitted())
	return ve, nil
}

// warnRuntime says that x's runtime is installed: a warning in every
// mode, since the runtime injects whatever chips a container's variable
// names, so it stays a way around DRA for any container our specs do not
// reach (a pod without a claim of ours). Removing its device injection is
// a prerequisite of the driver (docs/install.md).
func warnRuntime(ctx context.Context, x vendors.Vendor, marker, mode string) {
	edits := x.CDI()
	klog.FromContext(ctx).Info("Warning: "+edits.Runtime.Name+" is installed on this node and injects every chip a container's "+
		edits.VisibleEnv+" names, claimed or not; remove its device injection from the node (docs/install.md). "+
		"Claimed containers get "+edits.VisibleEnv+"=\""+edits.Runtime.Neutral+"\" unless the mode is set, so their own value is replaced",
		"found", marker, "mode", mode)
}

// writeFinding records f at path atomically, so a reader never sees half
// a file. The temporary file is unique: during a rolling upgrade the old
// and the new agent pod of a node write the same finding at once.
func writeFinding(path string, f runtimeFinding) error {
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding the finding of %s: %w", f.Runtime, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("recording whether %s is installed: %w", f.Runtime, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("recording whether %s is installed: %w", f.Runtime, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("recording whether %s is installed: %w", f.Runtime, err)
	}
	return nil
}

// omitted returns the vendors whose visible-devices variable the specs
// leave out now: in auto mode those whose runtime this agent found or
// another agent of the node recorded as found.
func (ve *visibleEnv) omitted() map[inventory.Vendor]bool {
	omit := map[inventory.Vendor]bool{}
	switch ve.mode {
	case VisibleDevicesSet:
		return omit
	case VisibleDevicesOmit:
		for _, v := range ve.all {
			omit[v] = true
		}
		return omit
	}
	for v := range ve.own {
		omit[v] = true
	}
	for v, path := range ve.shared {
		if ve.sharedFound(path) {
			omit[v] = true
		}
	}
	return omit
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

// sharedFound reads the finding another agent of the node recorded at
// path. No file yet (the agent serving the vendor has never started on
// this node) is "not found". A file that cannot be read or decoded counts
// as found: the neutral value then only keeps the runtime from injecting
// chips, which is the safe side.
func (ve *visibleEnv) sharedFound(path string) bool {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var f runtimeFinding
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		ve.logger.Error(err, "Cannot read another agent's finding of a vendor runtime: treating the runtime as installed", "path", path)
		return true
	}
	return f.Found
}

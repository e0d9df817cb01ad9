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

// Command ascend-runtime stands in for Huawei's ascend-docker-runtime on
// the e2e node: an OCI runtime that containerd runs instead of runc for
// the RuntimeClass "ascend", and that edits the container's config.json
// before handing over to runc, as the real one does
// (Ascend/mind-cluster component/ascend-docker-runtime, runtime/process/
// process.go DoProcess → modifySpecFile → processDevicesAndHooks):
//   - always: ASCEND_DOCKER_RUNTIME=True is set (addAscendDockerEnv),
//     whatever the container carries (the real one also prepends the
//     driver's library directories to LD_LIBRARY_PATH,
//     addAscendLibraryPath: not reproduced);
//   - if ASCEND_VISIBLE_DEVICES (the last one in the env) is set and not
//     "void" (checkVisibleDevice): /dev/davinciN for each id, and the
//     manager devices /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc,
//     are appended to linux.devices without looking at what is there
//     (processDevicesLegacy: addDevice, addDeviceToSpec,
//     addManagerDevice), and the prestart hook that bind-mounts the driver
//     files is added (addHook; not reproduced: it mounts what our CDI spec
//     mounts already).
//
// The device files are those of the node agent's fake root
// (ACCEL_DRA_E2E_DEV_ROOT); runc is ACCEL_DRA_E2E_RUNC. Both come from
// containerd's environment, which the shim passes on.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	runc := os.Getenv("ACCEL_DRA_E2E_RUNC")
	if runc == "" {
		fmt.Fprintln(os.Stderr, "ascend-runtime: ACCEL_DRA_E2E_RUNC is not set")
		os.Exit(1)
	}
	if bundle, ok := createBundle(os.Args[1:]); ok {
		if err := modify(filepath.Join(bundle, "config.json"), os.Getenv("ACCEL_DRA_E2E_DEV_ROOT")); err != nil {
			fmt.Fprintln(os.Stderr, "ascend-runtime:", err)
			os.Exit(1)
		}
	}
	args := append([]string{runc}, os.Args[1:]...)
	if err := syscall.Exec(runc, args, os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "ascend-runtime: exec runc:", err)
		os.Exit(1)
	}
}

// createBundle finds the bundle of a "create" (or "run") command.
func createBundle(args []string) (string, bool) {
	create := false
	bundle := ""
	for i, a := range args {
		switch {
		case a == "create" || a == "run":
			create = true
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			bundle = args[i+1]
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		}
	}
	if bundle == "" {
		bundle, _ = os.Getwd()
	}
	return bundle, create
}

func modify(path, devRoot string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	process, _ := spec["process"].(map[string]any)
	if process == nil {
		return nil
	}
	var env []string
	for _, e := range asList(process["env"]) {
		env = append(env, e.(string))
	}
	visible := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "ASCEND_VISIBLE_DEVICES="); ok {
			visible = v
		}
	}
	env = append(env, "ASCEND_DOCKER_RUNTIME=True")
	process["env"] = toAny(env)
	if visible != "" && visible != "void" {
		linux, _ := spec["linux"].(map[string]any)
		if linux == nil {
			linux = map[string]any{}
			spec["linux"] = linux
		}
		devices := asList(linux["devices"])
		add := func(p string) error {
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(devRoot, p), &st); err != nil {
				return fmt.Errorf("device %s: %w", p, err)
			}
			// Linux's dev_t encoding (major 12 bits, minor 20 bits).
			major := (st.Rdev >> 8) & 0xfff
			minor := (st.Rdev & 0xff) | ((st.Rdev >> 12) & 0xfff00)
			devices = append(devices, map[string]any{"path": p, "type": "c",
				"major": major, "minor": minor, "fileMode": 0o666, "uid": 0, "gid": 0})
			return nil
		}
		for _, id := range strings.Split(visible, ",") {
			if err := add("/dev/davinci" + strings.TrimSpace(id)); err != nil {
				return err
			}
		}
		for _, p := range []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"} {
			if err := add(p); err != nil {
				return err
			}
		}
		linux["devices"] = devices
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

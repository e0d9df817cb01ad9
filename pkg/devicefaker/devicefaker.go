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

// Package devicefaker makes a directory look like the root of a node with
// Ascend and Cambricon chips, so that discovery, CDI specs and real
// container runtimes can be exercised on machines without the hardware.
//
// Like the device-faker of Intel's intel-resource-drivers-for-kubernetes,
// it creates the chips' device files as real character devices with the
// major:minor of /dev/null (1:3): a container runtime can stat them when it
// injects a CDI device (the CDI library fills in a device node's type and
// numbers from the host file) and a workload can open them. The vendor
// driver files that pkg/cdi bind-mounts are created as small placeholders.
package devicefaker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// NullMajor and NullMinor are the device numbers of /dev/null, which every
// fake device node gets: opening it works and reads nothing.
const (
	NullMajor = 1
	NullMinor = 3
)

// nodeMode is the permission of /dev/null, so any container user can open
// the fake nodes.
const nodeMode = 0o666

// file is one regular file or directory of a fake driver installation.
type file struct {
	path    string
	mode    fs.FileMode // fs.ModeDir for a directory
	content string
}

// Create makes root look like a node holding inv's chips. Under root it
// creates every chip's DeviceNodes and every vendor's SharedDeviceNodes as
// character devices 1:3 (mode 0666), and, for each vendor that has chips,
// the driver files its container runtime mounts into containers:
//
//   - Ascend: /usr/local/Ascend/driver/lib64/driver/libascend_hal.so (placeholder), lib64/common,
//     /usr/local/Ascend/driver/include/, /usr/local/Ascend/driver/version.info
//     ("Version=" the chips' DriverVersion), /etc/ascend_install.info,
//     /usr/local/dcmi/libdcmi.so (placeholder) and a /usr/local/bin/npu-smi
//     script that prints a notice;
//   - Cambricon: a /usr/bin/cnmon script that prints a notice.
//
// Create is idempotent: what already exists with the right type and content
// is left alone, so a second call changes nothing. A path that exists with
// the wrong kind of file (e.g. a regular file where a device node belongs,
// or a device with other numbers) is an error rather than replaced, so a
// mistaken root never overwrites real device files. Creating device nodes
// needs root (CAP_MKNOD); without it Create fails with an error saying so.
func Create(ctx context.Context, reg vendors.Registry, root string, inv inventory.Inventory) error {
	logger := klog.FromContext(ctx)
	root = filepath.Clean(root)
	if root == "" || root == "." || root == string(filepath.Separator) {
		return fmt.Errorf("creating fake devices: refusing root %q, give a directory that is not the real root", root)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("creating fake device root: %w", err)
	}

	nodes, err := deviceNodes(inv)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := createNullNode(root, n); err != nil {
			return err
		}
	}

	var files []file
	for _, v := range inv.Vendors() {
		vf, err := driverFiles(reg, v, inv.ChipsOf(v))
		if err != nil {
			return err
		}
		files = append(files, vf...)
	}
	for _, f := range files {
		if err := writeFile(root, f); err != nil {
			return err
		}
	}
	logger.V(2).Info("Fake device tree is in place", "root", root, "deviceNodes", len(nodes), "driverFiles", len(files))
	return nil
}

// deviceNodes returns every device file of inv once, sorted.
func deviceNodes(inv inventory.Inventory) ([]string, error) {
	seen := map[string]bool{}
	for _, c := range inv.Chips {
		if len(c.DeviceNodes) == 0 {
			return nil, fmt.Errorf("creating fake devices: %s chip %d has no device nodes", c.Vendor, c.Index)
		}
		for _, n := range c.DeviceNodes {
			seen[n] = true
		}
	}
	for _, shared := range inv.SharedDeviceNodes {
		for _, n := range shared {
			seen[n] = true
		}
	}
	nodes := make([]string, 0, len(seen))
	for n := range seen {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	return nodes, nil
}

// driverFiles lists the fake driver installation of vendor v of reg: the
// paths pkg/cdi mounts (see the vendor's CDI edits for their sources).
func driverFiles(reg vendors.Registry, v inventory.Vendor, chips []inventory.Chip) ([]file, error) {
	x, ok := reg.Lookup(v)
	if !ok {
		return nil, fmt.Errorf("creating fake driver files: unknown vendor %q", v)
	}
	vf, err := x.ProfileNode().DriverFiles(chips)
	if err != nil {
		return nil, err
	}
	out := make([]file, 0, len(vf))
	for _, f := range vf {
		out = append(out, file{path: f.Path, mode: f.Mode, content: f.Content})
	}
	return out, nil
}

// under joins p (an absolute path as seen on the node) to root and rejects
// paths that would leave root.
func under(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("creating fake devices: path %q is not absolute", p)
	}
	joined := filepath.Join(root, p)
	rel, err := filepath.Rel(root, joined)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("creating fake devices: path %q leaves the root %s", p, root)
	}
	return joined, nil
}

// createNullNode makes root+p a character device 1:3 unless it is one.
func createNullNode(root, p string) error {
	path, err := under(root, p)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	switch err := unix.Lstat(path, &st); {
	case err == nil:
		dev := uint64(st.Rdev) //nolint:unconvert // Rdev is uint32 on some platforms.
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(dev) == NullMajor && unix.Minor(dev) == NullMinor {
			return nil
		}
		return fmt.Errorf("creating fake device node %s: it exists and is not a character device %d:%d; remove it or use another root", path, NullMajor, NullMinor)
	case !errors.Is(err, unix.ENOENT):
		return fmt.Errorf("checking fake device node %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating directory of fake device node %s: %w", path, err)
	}
	if err := unix.Mknod(path, unix.S_IFCHR|nodeMode, int(unix.Mkdev(NullMajor, NullMinor))); err != nil {
		return mknodError(path, err)
	}
	// mknod applies the umask; make the node as open as /dev/null.
	if err := os.Chmod(path, nodeMode); err != nil {
		return fmt.Errorf("setting mode of fake device node %s: %w", path, err)
	}
	return nil
}

// mknodError explains the common failure: not being root.
func mknodError(path string, err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("creating fake device node %s: %w: making character devices needs root (CAP_MKNOD); run as root or in a container with CAP_MKNOD", path, err)
	}
	return fmt.Errorf("creating fake device node %s: %w", path, err)
}

// writeFile creates f under root unless it already exists with the same
// content and mode. Files are written to a temporary name and renamed, so a
// reader never sees half a file.
func writeFile(root string, f file) error {
	path, err := under(root, f.path)
	if err != nil {
		return err
	}
	if f.mode.IsDir() {
		if err := os.MkdirAll(path, f.mode.Perm()); err != nil {
			return fmt.Errorf("creating fake driver directory %s: %w", path, err)
		}
		return nil
	}
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("creating fake driver file %s: it exists and is not a regular file; remove it or use another root", path)
		}
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, []byte(f.content)) && fi.Mode().Perm() == f.mode.Perm() {
			return nil
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating directory of fake driver file %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creating fake driver file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.WriteString(f.content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), f.mode.Perm())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing fake driver file %s: %w", path, err)
	}
	return nil
}

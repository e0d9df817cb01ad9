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

package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DeviceIndices returns, sorted, the N of every device file /dev/<prefix>N
// under root (e.g. prefix "davinci" for /dev/davinci0), N being decimal
// digits. A root without /dev has none; an N too large for an int is
// skipped. Other errors listing /dev are returned as they are, for the
// caller to say which vendor's files it was looking for.
func DeviceIndices(root, prefix string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Join(root, "dev"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			continue // too many digits to be a device index
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// DeviceFileExists reports whether the device file p (an absolute path such
// as /dev/davinci_manager) exists under root: a regular file in fixtures, a
// character device on hosts; only existence counts.
func DeviceFileExists(root, p string) bool {
	_, err := os.Stat(filepath.Join(root, p))
	return err == nil
}

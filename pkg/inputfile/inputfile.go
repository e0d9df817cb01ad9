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

// Package inputfile reads the files a user hands the CLI (cluster files,
// claims, DeviceClasses, hardware profiles) with a size limit, so a wrong
// path (a disk image, /dev/zero) is a clear error instead of the process
// reading until it runs out of memory.
package inputfile

import (
	"fmt"
	"io"
	"os"
)

// MaxBytes is the largest input file read: far above any real cluster
// file, profile or manifest directory entry (the chart's largest
// DeviceClass file is a few KiB).
const MaxBytes = 8 << 20

// Read reads the file at path, what naming it in errors ("cluster file").
func Read(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxBytes {
		return nil, tooLarge(what, path)
	}
	// Not regular (a pipe, a device) or grown since: read one byte more
	// than allowed to tell.
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	if len(data) > MaxBytes {
		return nil, tooLarge(what, path)
	}
	return data, nil
}

func tooLarge(what, path string) error {
	return fmt.Errorf("reading %s %s: larger than %d MiB, the limit of an input file: is it the right file?", what, path, MaxBytes>>20)
}

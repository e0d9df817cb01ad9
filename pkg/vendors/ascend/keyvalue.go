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

package ascend

import (
	"iter"
	"strings"
)

// keyValueLine is one non-blank line of a "key<sep>value" output
// (version.info, `npu-smi info -t health`).
type keyValueLine struct {
	// No is the 1-based line number; Text the line, trimmed.
	No   int
	Text string
	// Key and Value are trimmed; HasSep is false for a line without the
	// separator, whose Key is then the whole line.
	Key, Value string
	HasSep     bool
}

// keyValueLines yields the non-blank lines of data split at the first sep.
func keyValueLines(data []byte, sep string) iter.Seq[keyValueLine] {
	return func(yield func(keyValueLine) bool) {
		for i, raw := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(raw)
			if trimmed == "" {
				continue
			}
			key, value, ok := strings.Cut(trimmed, sep)
			l := keyValueLine{No: i + 1, Text: trimmed, Key: strings.TrimSpace(key), Value: strings.TrimSpace(value), HasSep: ok}
			if !yield(l) {
				return
			}
		}
	}
}

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

import "fmt"

// ParseError reports output of a vendor tool or a file that could not be
// understood, naming where it came from and the line, so an operator can
// look at the exact input.
type ParseError struct {
	// Source is the command line or file path the text came from.
	Source string
	// Line is 1-based; 0 when the problem is not tied to one line.
	Line int
	// Text is the offending line, trimmed.
	Text string
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("parsing %s: line %d: %s: %q", e.Source, e.Line, e.Msg, e.Text)
	}
	return fmt.Sprintf("parsing %s: %s", e.Source, e.Msg)
}

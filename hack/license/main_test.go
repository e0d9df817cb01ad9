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

package main

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheHeaderGoesBeforeTheCodeAndAfterWhatMustStayFirst(t *testing.T) {
	tmpl, err := os.ReadFile("boilerplate.go.txt")
	require.NoError(t, err)
	header := string(tmpl)
	tests := []struct {
		name, file, in, wantPrefix string
	}{
		{"Go", "a.go", "// Package a does.\npackage a\n", "// Copyright The accel-dra Authors.\n"},
		{"Go with build constraints", "b.go", "//go:build failpoint\n\npackage a\n", "//go:build failpoint\n\n// Copyright The"},
		{"a shell script", "c.sh", "#!/usr/bin/env bash\nset -e\n", "#!/usr/bin/env bash\n# Copyright The accel-dra Authors.\n#\n# Licensed"},
		{"C", "d.c", "#include <stdio.h>\n", "/*\nCopyright The accel-dra Authors.\n\nLicensed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.False(t, hasHeader(tt.file, []byte(tt.in)))
			out := withHeader(tt.file, []byte(tt.in), header)
			require.True(t, strings.HasPrefix(string(out), tt.wantPrefix), "got:\n%s", out)
			require.True(t, strings.HasSuffix(string(out), strings.TrimPrefix(tt.in, strings.SplitAfter(tt.in, "\n")[0])), "the file's own text stays")
			require.True(t, hasHeader(tt.file, out), "the header is recognized")
			require.Contains(t, string(out), "http://www.apache.org/licenses/LICENSE-2.0")
			if strings.HasSuffix(tt.file, ".go") {
				f, err := parser.ParseFile(token.NewFileSet(), tt.file, out, parser.ParseComments)
				require.NoError(t, err)
				require.Equal(t, "a", f.Name.Name)
			}
		})
	}
	require.False(t, hasHeader("e.go", []byte("package a\n// "+marker+"\n")), "a header after the code does not count")
}

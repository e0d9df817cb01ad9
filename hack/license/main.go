// Copyright 2026 The accel-dra Authors.
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

// Command license checks that every source file of the repository starts
// with the Apache-2.0 header of boilerplate.go.txt (make lint) and, with
// -fix, adds it where it is missing (make license). Source files are the
// tracked *.go, *.sh, *.c and *.h files; Go files keep their build
// constraints first, shell scripts their #! line.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// marker is the line that shows a file has the header, whatever its year.
const marker = `Licensed under the Apache License, Version 2.0 (the "License");`

func main() {
	fix := flag.Bool("fix", false, "add the header to the files that lack it")
	flag.Parse()
	files, err := sourceFiles()
	if err != nil {
		fail(err)
	}
	tmpl, err := os.ReadFile(filepath.Join("hack", "license", "boilerplate.go.txt"))
	if err != nil {
		fail(fmt.Errorf("reading the header: %w", err))
	}
	header := string(tmpl)
	var missing []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		if hasHeader(f, data) {
			continue
		}
		if !*fix {
			missing = append(missing, f)
			continue
		}
		info, err := os.Stat(f)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(f, withHeader(f, data, header), info.Mode().Perm()); err != nil {
			fail(err)
		}
	}
	if len(missing) > 0 {
		fail(fmt.Errorf("%d source files lack the license header (make license adds it):\n  %s", len(missing), strings.Join(missing, "\n  ")))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "license:", err)
	os.Exit(1)
}

// sourceFiles are the tracked and new, not ignored, source files.
func sourceFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.go", "*.sh", "*.c", "*.h").Output()
	if err != nil {
		return nil, fmt.Errorf("listing source files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Stat(f); f != "" && err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

// hasHeader says whether the header is in the comments before the first
// line of code: the // or # lines, or in C the leading /* */ block.
func hasHeader(name string, data []byte) bool {
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		return false
	}
	if ext := filepath.Ext(name); ext == ".c" || ext == ".h" {
		end := bytes.Index(data, []byte("*/"))
		return bytes.HasPrefix(data, []byte("/*")) && i < end
	}
	return !codeBefore.Match(data[:i])
}

// codeBefore matches a line that is neither blank nor a comment.
var codeBefore = regexp.MustCompile(`(?m)^[ \t]*[^ \t/#*\n]`)

// withHeader is data with header added: in Go after the build
// constraints, in a shell script after the #! line, as /* */ in C.
func withHeader(name string, data []byte, header string) []byte {
	switch filepath.Ext(name) {
	case ".sh":
		lines := strings.SplitAfter(string(data), "\n")
		rest, first := string(data), ""
		if strings.HasPrefix(lines[0], "#!") {
			first, rest = lines[0], strings.Join(lines[1:], "")
		}
		return []byte(first + recomment(header, "#") + "\n" + rest)
	case ".c", ".h":
		return []byte("/*\n" + recomment(header, "") + "*/\n\n" + string(data))
	}
	lines := strings.SplitAfter(string(data), "\n")
	n := 0
	for n < len(lines) && (strings.HasPrefix(lines[n], "//go:build") || strings.HasPrefix(lines[n], "// +build")) {
		n++
	}
	if n > 0 {
		// Constraints stay first, a blank line after them.
		return []byte(strings.Join(lines[:n], "") + "\n" + header + "\n" + strings.TrimLeft(strings.Join(lines[n:], ""), "\n"))
	}
	return []byte(header + "\n" + string(data))
}

// recomment is the // comment lines of header with prefix instead of //.
func recomment(header, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(header, "\n") {
		if l == "" {
			continue
		}
		text := strings.TrimPrefix(strings.TrimPrefix(l, "//"), " ")
		if prefix != "" && text != "\n" {
			text = " " + text
		}
		b.WriteString(prefix + text)
	}
	return b.String()
}

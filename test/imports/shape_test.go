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

package imports_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFunctionLines is the longest a product function may be, from its
// func line to its closing brace, unless its doc comment says why.
const maxFunctionLines = 80

// longMarker starts the doc comment line that says why a function is
// longer than maxFunctionLines, e.g. "// long: one table of the tool's
// columns, read in order".
const longMarker = "// long:"

// generated marks a generated file (go help generate), whose functions
// nobody writes.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestNoLongProductFunctions: a long orchestrator hides its steps; named
// short steps say what happens in what order (issue 42 item 4). A
// function of the product code (pkg/, cmd/, api/ without tests) longer
// than maxFunctionLines needs a doc comment line starting with
// longMarker and a reason.
func TestNoLongProductFunctions(t *testing.T) {
	var long []string
	for _, dir := range []string{"pkg", "cmd", "api"} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if e.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			found, err := longFunctions(path)
			long = append(long, found...)
			return err
		})
		require.NoError(t, err)
	}
	sort.Strings(long)
	if len(long) > 0 {
		t.Errorf("product functions longer than %d lines without a %q line in their doc comment: split them into named steps, or say why not:\n%s",
			maxFunctionLines, longMarker, strings.Join(long, "\n"))
	}
}

// longFunctions are the functions of a Go file longer than
// maxFunctionLines whose doc comment gives no reason.
func longFunctions(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	for _, c := range f.Comments {
		if generated.MatchString(commentLines(c)) {
			return nil, nil
		}
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Type.Func), fset.Position(fn.Body.Rbrace)
		lines := end.Line - start.Line + 1
		if lines <= maxFunctionLines || hasReason(fn.Doc) {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
		out = append(out, fmt.Sprintf("%s:%d %s: %d lines", rel, start.Line, funcName(fn), lines))
	}
	return out, nil
}

// hasReason says whether a doc comment has a longMarker line with a
// reason after it.
func hasReason(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if reason, ok := strings.CutPrefix(c.Text, longMarker); ok && strings.TrimSpace(reason) != "" {
			return true
		}
	}
	return false
}

func commentLines(c *ast.CommentGroup) string {
	var b strings.Builder
	for _, l := range c.List {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

// funcName is fn's name with its receiver's type, as in a stack trace.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if g, ok := t.(*ast.IndexListExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestALongFunctionNeedsAReason checks the check: a long function is
// reported until its doc comment says why it is long.
func TestALongFunctionNeedsAReason(t *testing.T) {
	body := strings.Repeat("\t_ = 1\n", maxFunctionLines)
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte("package p\n\n"+doc+"func f() {\n"+body+"}\n\nfunc g() {}\n"), 0o600))
		return path
	}
	found, err := longFunctions(write("bare.go", "// f does nothing.\n"))
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Contains(t, found[0], "f: 82 lines")
	found, err = longFunctions(write("reason.go", "// f does nothing.\n"+longMarker+" a table, one line per entry.\n"))
	require.NoError(t, err)
	require.Empty(t, found)
	found, err = longFunctions(write("empty.go", longMarker+"\n"))
	require.NoError(t, err)
	require.Len(t, found, 1, "a marker without a reason is none")
}

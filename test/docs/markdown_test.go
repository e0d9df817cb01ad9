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

package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// repoRoot is where the pages and the files they name live; go test runs
// in this package's directory.
const repoRoot = "../.."

// block is one fenced code block of a page.
type block struct {
	page  string // path relative to the repository root
	line  int    // 1-based line of the opening fence
	lang  string // info string's first word: yaml, sh, console, mermaid, ...
	lines []string
	// directive holds the key=value pairs of a `<!-- doc: ... -->` comment
	// on the last non-blank line before the fence: file= (the block is that
	// file), from= (an excerpt of it), exit= (the exit code its commands show).
	directive map[string]string
}

func (b block) String() string { return fmt.Sprintf("%s:%d (```%s)", b.page, b.line, b.lang) }

// page is one markdown file, split into its fenced blocks and the text
// outside them (where links and headings are).
type page struct {
	path    string
	prose   []proseLine
	blocks  []block
	anchors map[string]bool
}

type proseLine struct {
	line int
	text string
}

var (
	fenceRE     = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)")
	directiveRE = regexp.MustCompile(`^<!--\s*doc:(.*?)-->$`)
)

// pages are the documents a reader meets: the README, the demo directory's
// README and every page under docs/.
func pages(t *testing.T) []*page {
	t.Helper()
	paths := []string{"README.md", "demo/README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs, "no pages under docs/")
	for _, d := range docs {
		rel, err := filepath.Rel(repoRoot, d)
		require.NoError(t, err)
		paths = append(paths, filepath.ToSlash(rel))
	}
	var out []*page
	for _, p := range paths {
		pg, err := parsePage(p)
		require.NoError(t, err)
		out = append(out, pg)
	}
	return out
}

func parsePage(rel string) (*page, error) {
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		return nil, fmt.Errorf("reading page: %w", err)
	}
	pg := &page{path: rel, anchors: map[string]bool{}}
	lines := strings.Split(string(data), "\n")
	slugCount := map[string]int{}
	lastNonBlank := ""
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			pg.prose = append(pg.prose, proseLine{line: i + 1, text: lines[i]})
			if h, ok := heading(lines[i]); ok {
				slug := slugify(h)
				if n := slugCount[slug]; n > 0 {
					pg.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
				} else {
					pg.anchors[slug] = true
				}
				slugCount[slug]++
			}
			if strings.TrimSpace(lines[i]) != "" {
				lastNonBlank = strings.TrimSpace(lines[i])
			}
			continue
		}
		indent, fence := m[1], m[2]
		b := block{page: rel, line: i + 1, lang: m[3], directive: map[string]string{}}
		if dm := directiveRE.FindStringSubmatch(lastNonBlank); dm != nil {
			for _, kv := range strings.Fields(dm[1]) {
				k, v, _ := strings.Cut(kv, "=")
				b.directive[k] = v
			}
		}
		closed := false
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) && strings.TrimSpace(strings.Trim(strings.TrimSpace(lines[i]), "`")) == "" {
				closed = true
				break
			}
			// A block inside a list item is indented like its fence.
			b.lines = append(b.lines, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: code block is never closed", rel, b.line)
		}
		pg.blocks = append(pg.blocks, b)
		lastNonBlank = ""
	}
	return pg, nil
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, "#")
	level := len(line) - len(trimmed)
	if level == 0 || level > 6 || !strings.HasPrefix(trimmed, " ") {
		return "", false
	}
	return strings.TrimSpace(trimmed), true
}

// slugify makes a heading's anchor as GitHub does: lower case, letters,
// digits, spaces, hyphens and underscores kept, spaces turned into hyphens.
func slugify(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

func TestEveryRelativeLinkPointsAtAnExistingFileAndAnchor(t *testing.T) {
	all := pages(t)
	byPath := map[string]*page{}
	for _, pg := range all {
		byPath[pg.path] = pg
	}
	checked := 0
	for _, pg := range all {
		for _, pl := range pg.prose {
			for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(pl.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %q", pg.path, pl.line, target)
				path, anchor, _ := strings.Cut(target, "#")
				resolved := pg.path
				if path != "" {
					resolved = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(pg.path), path)))
					_, err := os.Stat(filepath.Join(repoRoot, resolved))
					require.NoError(t, err, "%s: the file it points at does not exist", where)
				}
				if anchor == "" {
					continue
				}
				require.True(t, strings.HasSuffix(resolved, ".md"), "%s: an anchor into a file that is not markdown", where)
				tp := byPath[resolved]
				if tp == nil {
					var err error
					tp, err = parsePage(resolved)
					require.NoError(t, err, where)
					byPath[resolved] = tp
				}
				require.True(t, tp.anchors[anchor], "%s: %s has no heading with anchor #%s", where, resolved, anchor)
			}
		}
	}
	require.Greater(t, checked, 20, "the pages link to each other; so few links means the link pattern is broken")
}

// The bar: from the README, a newcomer reaches the install page,
// a first claim and the architecture page in one click, and the README
// stays short enough to read through.
func TestTheReadmeIsShortAndLinksTheNewcomersPages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	readme := string(data)
	require.LessOrEqual(t, strings.Count(readme, "\n"), 160, "README.md grew past ~150 lines: move the details to a page under docs/")
	for _, target := range []string{"docs/install.md", "docs/claims.md", "docs/architecture.md", "docs/troubleshooting.md", "docs/cli.md", "docs/agent.md"} {
		require.Contains(t, readme, "("+target, "README.md does not link %s", target)
	}
}

var mermaidKinds = []string{"flowchart", "graph", "sequenceDiagram", "stateDiagram-v2", "classDiagram", "block-beta"}

func TestMermaidDiagramsNameAKnownDiagramType(t *testing.T) {
	n := 0
	for _, pg := range pages(t) {
		for _, b := range pg.blocks {
			if b.lang != "mermaid" {
				continue
			}
			n++
			require.NotEmpty(t, b.lines, "%s: empty diagram", b)
			kind := strings.Fields(b.lines[0] + " x")[0]
			require.Contains(t, mermaidKinds, kind, "%s: first line must name the diagram type", b)
			// A label with an unquoted parenthesis or slash breaks Mermaid's
			// parser; every node label here is quoted.
			for i, l := range b.lines[1:] {
				if strings.Count(l, `"`)%2 != 0 {
					t.Errorf("%s line %d: unbalanced quotes in %q", b, i+2, l)
				}
			}
		}
	}
	require.GreaterOrEqual(t, n, 3, "the flow, the test tiers and a node's files are drawn")
}

func exitCode(b block) (int, error) {
	v, ok := b.directive["exit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: exit=%q is not a number: %w", b, v, err)
	}
	return n, nil
}

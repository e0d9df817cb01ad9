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
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// tableRows returns the rows of the first table after the heading with
// this text on a page, as cells.
func tableRows(t *testing.T, pg *page, headingText string) [][]string {
	t.Helper()
	var rows [][]string
	found, inTable := false, false
	for _, pl := range pg.prose {
		if h, ok := heading(pl.text); ok {
			if found && inTable {
				break
			}
			found = h == headingText
			continue
		}
		if !found {
			continue
		}
		if strings.HasPrefix(pl.text, "|") {
			inTable = true
			cells := strings.Split(strings.Trim(pl.text, "|"), "|")
			if !strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
				rows = append(rows, cells)
			}
			continue
		}
		if inTable {
			break
		}
	}
	require.NotEmpty(t, rows, "%s has no table under %q", pg.path, headingText)
	return rows[1:] // the header
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// The contract's DeviceClasses on docs/architecture.md are the ones the
// chart installs, no more and no fewer: the named ones are the top-level
// files of deviceclasses/, and the rows with a placeholder
// (`<model>.accel-dra.dev`, `<model>-<template>.accel-dra.dev`) stand for
// the generated classes of deviceclasses/models/, whole chips and
// partition shapes, their examples among them. Names the table marks
// reserved are not installed yet.
func TestTheContractsDeviceClassesAreTheChartsClasses(t *testing.T) {
	pg, err := parsePage("docs/architecture.md")
	require.NoError(t, err)
	dir := filepath.Join(repoRoot, "deployments", "helm", "accel-dra", "deviceclasses")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	installed := classNames(t, files)
	generated, err := filepath.Glob(filepath.Join(dir, "models", "*", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, generated, "make generate")
	var wholeFiles, shapeFiles []string
	for _, f := range generated {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(data), "partitionTemplate") {
			shapeFiles = append(shapeFiles, f)
		} else {
			wholeFiles = append(wholeFiles, f)
		}
	}
	patterns := map[string][]string{
		"<model>.accel-dra.dev":            classNames(t, wholeFiles),
		"<model>-<template>.accel-dra.dev": classNames(t, shapeFiles),
	}
	var named []string
	seen := map[string]bool{}
	for _, row := range tableRows(t, pg, "DeviceClasses") {
		if strings.Contains(row[1], "reserved") {
			continue
		}
		var pattern string
		var spans []string
		for _, m := range codeSpanRE.FindAllStringSubmatch(row[0], -1) {
			if strings.Contains(m[1], "<") {
				pattern = m[1]
			} else {
				spans = append(spans, m[1])
			}
		}
		if pattern == "" {
			named = append(named, spans...)
			continue
		}
		classes, ok := patterns[pattern]
		require.True(t, ok, "the DeviceClasses table of docs/architecture.md names the pattern %s, which the chart has no classes of", pattern)
		require.NotEmpty(t, spans, "the row of %s has examples", pattern)
		for _, example := range spans {
			require.Contains(t, classes, example, "the example %s of %s is a class of deviceclasses/models/", example, pattern)
		}
		seen[pattern] = true
	}
	for pattern := range patterns {
		require.True(t, seen[pattern], "the chart installs classes %s that the DeviceClasses table of docs/architecture.md does not name", pattern)
	}
	sort.Strings(named)
	require.Equal(t, installed, named, "the DeviceClasses table of docs/architecture.md and deployments/helm/accel-dra/deviceclasses/ differ")
}

// classNames reads the names of DeviceClass files, sorted.
func classNames(t *testing.T, files []string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(data, &obj), f)
		require.Equal(t, "DeviceClass", obj.Kind, f)
		out = append(out, obj.Metadata.Name)
	}
	sort.Strings(out)
	return out
}

// Every shared attribute key of the contract is on the devices the node
// agent publishes (the golden slices of every bundled profile).
func TestTheContractsAttributeKeysArePublished(t *testing.T) {
	pg, err := parsePage("docs/architecture.md")
	require.NoError(t, err)
	goldens, err := filepath.Glob(filepath.Join(repoRoot, "pkg", "resourceslices", "testdata", "golden", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, goldens)
	var all strings.Builder
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		require.NoError(t, err)
		all.Write(data)
	}
	rows := tableRows(t, pg, "Device attributes")
	require.Len(t, rows, 11, "the contract has 11 shared keys")
	for _, row := range rows {
		key := strings.Trim(strings.TrimSpace(row[0]), "`")
		require.Contains(t, all.String(), "accel-dra.dev/"+key+":", "no golden slice publishes accel-dra.dev/%s", key)
	}
}

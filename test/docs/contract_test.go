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
// chart installs, no more and no fewer; names the table marks reserved
// are not installed yet.
func TestTheContractsDeviceClassesAreTheChartsClasses(t *testing.T) {
	pg, err := parsePage("docs/architecture.md")
	require.NoError(t, err)
	var named []string
	for _, row := range tableRows(t, pg, "DeviceClasses") {
		if strings.Contains(row[1], "reserved") {
			continue
		}
		for _, m := range codeSpanRE.FindAllStringSubmatch(row[0], -1) {
			named = append(named, m[1])
		}
	}
	dir := filepath.Join(repoRoot, "deployments", "helm", "accel-dra", "deviceclasses")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var installed []string
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
		installed = append(installed, obj.Metadata.Name)
	}
	sort.Strings(named)
	sort.Strings(installed)
	require.Equal(t, installed, named, "the DeviceClasses table of docs/architecture.md and deployments/helm/accel-dra/deviceclasses/ differ")
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

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/cli"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

// run executes the accel-dra command line as main does.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestDiscoverAProfilePrintsOneChipPerLine(t *testing.T) {
	out, err := run(t, "discover", "--profile", "atlas-800-910a", "--node-name", "train-0")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 9, out)
	require.Regexp(t, `^DEVICE\s+VENDOR\s+MODEL\s+MEMORY`, lines[0])
	require.Regexp(t, `^npu-0\s+huawei\s+Ascend910A\s+32768Mi\s+30\s+hccs-0\s`, lines[1])
	require.Regexp(t, `^npu-7\s+huawei\s+Ascend910A\s+32768Mi\s+30\s+hccs-1\s`, lines[8])
}

func TestDiscoverYAMLPrintsTheSlicesOfTheNode(t *testing.T) {
	out, err := run(t, "discover", "--profile", "mixed-910b-mlu370", "--node-name", "mixed", "-o", "yaml")
	require.NoError(t, err)
	// Whole chips per driver; the slices also hold the chips' partitions
	// and, in slices of their own, the chips' counter sets.
	chips := map[string]int{}
	for _, doc := range strings.Split(out, "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var s resourceapi.ResourceSlice
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s))
		require.Equal(t, "mixed", *s.Spec.NodeName)
		require.Equal(t, "mixed", s.Spec.Pool.Name)
		for _, d := range s.Spec.Devices {
			if *d.Attributes["accel-dra.dev/type"].StringValue == "chip" {
				chips[s.Spec.Driver]++
			}
		}
	}
	require.Equal(t, map[string]int{"ascend.accel-dra.dev": 4, "cambricon.accel-dra.dev": 4}, chips)

	out, err = run(t, "discover", "--profile", "mlu270", "--node-name", "n", "-o", "json")
	require.NoError(t, err)
	var list struct {
		Items []resourceapi.ResourceSlice `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list.Items, 1)
	require.Equal(t, "cambricon.accel-dra.dev", list.Items[0].Spec.Driver)
}

func TestDiscoverReadsAFixtureRootWithRecordedToolOutput(t *testing.T) {
	out, err := run(t, "discover", "--root", "../discovery/cambricon/testdata/mlu370-x8/root",
		"--tool-output", "../discovery/cambricon/testdata/mlu370-x8/cnmon", "--node-name", "infer-0")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 9, out)
	require.Regexp(t, `^mlu-0\s+cambricon\s+MLU370-X8\s`, lines[1])
}

func TestDiscoverFindsAscendChipsUnderARoot(t *testing.T) {
	out, err := run(t, "discover", "--root", "../discovery/ascend/testdata/atlas-800-910a/root",
		"--tool-output", "../discovery/ascend/testdata/atlas-800-910a/npu-smi", "--node-name", "train-0")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 9, out)
	require.Regexp(t, `^npu-3\s+huawei\s+Ascend910A\s+32768Mi\s+30\s+hccs-0\s`, lines[4])
	require.Regexp(t, `^npu-4\s+huawei\s+Ascend910A\s+32768Mi\s+30\s+hccs-1\s`, lines[5])
}

func TestSimulateTheDemoAllocatesEveryClaim(t *testing.T) {
	out, err := run(t, "simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses", "-f", "../../demo/workloads", "-o", "json")
	require.NoError(t, err)
	var res simulate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.NotEmpty(t, res.Claims)
	for _, c := range res.Claims {
		require.True(t, c.Allocated, "%s: %s", c.Name, c.Reason)
		require.Empty(t, c.Explanation)
	}

	out, err = run(t, "simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses", "-f", "../../demo/workloads/03-same-ring-4.yaml", "--explain")
	require.NoError(t, err)
	require.Contains(t, out, `candidates: request "npus" needs 4: class ascend.accel-dra.dev matches`)
}

func TestInvalidInputFailsNamingTheFileAndObject(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown profile in the cluster file",
			[]string{"simulate", "--cluster", "testdata/unknown-profile-cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses"},
			`unknown-profile-cluster.yaml: nodes[0].profile: unknown hardware profile "atlas-900"`},
		{"bad YAML in a claim file",
			[]string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", "testdata/not-yaml.yaml: document 1: yaml: line 6"},
			"testdata/not-yaml.yaml: document 1: yaml: line 6"},
		{"missing cluster file",
			[]string{"simulate", "--cluster", "testdata/nope.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses"},
			"reading cluster file"},
		{"unknown output format",
			[]string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses", "-o", "xml"},
			`--output "xml": must be table, json or yaml`},
		{"unknown profile for discover",
			[]string{"discover", "--profile", "atlas-900"},
			`unknown hardware profile "atlas-900": bundled profiles are`},
		{"root and profile together",
			[]string{"discover", "--profile", "mlu270", "--root", "/"},
			"none of the others can be"},
		{"discover output format",
			[]string{"discover", "--profile", "mlu270", "-o", "xml"},
			`--output "xml": must be table, yaml or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

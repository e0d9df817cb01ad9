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

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/accel-dra/accel-dra/pkg/cli"
	"github.com/accel-dra/accel-dra/pkg/inputfile"
	"github.com/accel-dra/accel-dra/pkg/simulate"
)

// run executes the accel-dra command line as main does.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := cli.NewRootCommand(registry)
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
	// Whole chips per driver (the default chip modes publish nothing else).
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

func TestDiscoverPrintsPartitionsOnlyWhenAsked(t *testing.T) {
	// An Atlas 300I Duo server: 4 × 310P3, each with 20 vNPU slots
	// (7 × vir01, 3 × vir02, 4 × vir02_1c, 1 × vir04, 2 × vir04_3c,
	// 2 × vir04_3c_ndvpp, 1 × vir04_4c_dvpp) when Partitioned.
	tests := []struct {
		name       string
		chipModes  []string
		partitions map[string]int // chip -> partition rows after it
	}{
		{"by default chips are whole", nil, nil},
		{"Whole", []string{"--chip-modes", "Whole"}, nil},
		{"Shared chips have no partitions", []string{"--chip-modes", "Shared"}, nil},
		{"Partitioned", []string{"--chip-modes", "Partitioned"}, map[string]int{"npu-0": 20, "npu-1": 20, "npu-2": 20, "npu-3": 20}},
		{"one chip Partitioned", []string{"--chip-modes=npu-1=Partitioned"}, map[string]int{"npu-1": 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, append([]string{"discover", "--profile", "atlas-300i-duo", "--node-name", "duo"}, tt.chipModes...)...)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			got := map[string]int{}
			chip := ""
			for _, l := range lines[1:] {
				device := strings.Fields(l)[0]
				if !strings.Contains(strings.TrimPrefix(device, "npu-"), "-") {
					chip = device
					continue
				}
				require.True(t, strings.HasPrefix(device, chip+"-vir"), "partition %s follows its chip %s", device, chip)
				got[chip]++
			}
			require.Len(t, lines, 1+4+len(got)*20, out)
			if tt.partitions == nil {
				tt.partitions = map[string]int{}
			}
			require.Equal(t, tt.partitions, got)
			if len(got) > 0 {
				require.Regexp(t, `(?m)^npu-1-vir04-0\s+huawei\s+Ascend310P3\s+12288Mi\s+4\s+pcie-1\s`, out, "a partition row has its own memory and cores")
			}

			out, err = run(t, append([]string{"discover", "--profile", "atlas-300i-duo", "--node-name", "duo", "-o", "yaml"}, tt.chipModes...)...)
			require.NoError(t, err)
			types, counterSets := map[string]int{}, 0
			for _, doc := range strings.Split(out, "---\n") {
				if strings.TrimSpace(doc) == "" {
					continue
				}
				var s resourceapi.ResourceSlice
				require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &s))
				counterSets += len(s.Spec.SharedCounters)
				for _, d := range s.Spec.Devices {
					types[*d.Attributes["accel-dra.dev/type"].StringValue]++
				}
			}
			want := map[string]int{"chip": 4}
			if n := 20 * len(tt.partitions); n > 0 {
				want["vnpu"] = n
			}
			require.Equal(t, want, types, "the slices hold what the table shows")
			require.Equal(t, len(tt.partitions), counterSets, "one counter set per Partitioned chip")
		})
	}
}

func TestDiscoverReadsAFixtureRootWithRecordedToolOutput(t *testing.T) {
	out, err := run(t, "discover", "--root", "../vendors/cambricon/testdata/mlu370-x8/root",
		"--tool-output", "../vendors/cambricon/testdata/mlu370-x8/cnmon", "--node-name", "infer-0")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 9, out)
	require.Regexp(t, `^mlu-0\s+cambricon\s+MLU370-X8\s`, lines[1])

	// Like the node agent, a node read from recorded output cannot make
	// partitions, so it publishes none even where they are asked for.
	out, err = run(t, "discover", "--root", "../vendors/cambricon/testdata/mlu370-x8/root",
		"--tool-output", "../vendors/cambricon/testdata/mlu370-x8/cnmon", "--node-name", "infer-0", "--chip-modes", "Partitioned")
	require.NoError(t, err)
	require.Contains(t, out, "note: with --tool-output no partitions are published")
	require.NotContains(t, out, "smlu")
}

func TestDiscoverFindsAscendChipsUnderARoot(t *testing.T) {
	out, err := run(t, "discover", "--root", "../vendors/ascend/testdata/atlas-800-910a/root",
		"--tool-output", "../vendors/ascend/testdata/atlas-800-910a/npu-smi", "--node-name", "train-0")
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
	require.Contains(t, out, `candidates: request "npus" needs 4: class ascend910a.accel-dra.dev matches`)
}

func TestSimulatePartitionClaimsNeedPartitionedChips(t *testing.T) {
	tests := []struct {
		name      string
		chipModes []string
		want      map[string]string // claim -> node, "" if not allocated
	}{
		{"the demo cluster publishes whole chips", nil, map[string]string{"one-vnpu": "", "one-smlu": ""}},
		{"--chip-modes Partitioned for every node", []string{"--chip-modes", "Partitioned"}, map[string]string{"one-vnpu": "train-0", "one-smlu": "infer-0"}},
		{"--chip-modes for one vendor", []string{"--chip-modes", "mlu-*=Partitioned"}, map[string]string{"one-vnpu": "", "one-smlu": "infer-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses",
				"-f", "../simulate/testdata/partition-claims.yaml", "-o", "json"}, tt.chipModes...)
			out, err := run(t, args...)
			require.NoError(t, err)
			var res simulate.Result
			require.NoError(t, json.Unmarshal([]byte(out), &res))
			got := map[string]string{}
			for _, c := range res.Claims {
				got[c.Name] = c.Node
				if !c.Allocated {
					require.Contains(t, c.Reason, "would pass if their chips were Partitioned (chipModes in the cluster file, the node agent's --chip-modes)")
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
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
		{"an opaque config the webhook refuses",
			[]string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses", "-f", "testdata/bad-opaque-config.yaml"},
			`testdata/bad-opaque-config.yaml: document 1: ResourceClaimTemplate.resource.k8s.io "hccl-tuned" is invalid: [spec.spec.devices.config[0].requests[0]: Invalid value: "npu": must be the name of a request in the claim`},
		{"malformed chipModes in the cluster file",
			[]string{"simulate", "--cluster", "testdata/bad-chip-modes-cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses"},
			`testdata/bad-chip-modes-cluster.yaml: nodes[1].chipModes (node "infer"): chip modes entry 1 "mlu-0=Sliced": mode "Sliced" is not one of Partitioned, Shared, Whole`},
		{"malformed simulate --chip-modes",
			[]string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", "../../deployments/helm/accel-dra/deviceclasses", "--chip-modes", "npu-x=Shared"},
			`--chip-modes: chip modes entry 1 "npu-x=Shared": "npu-x" is not a chip device name (npu-N, mlu-N, npu-* or mlu-*)`},
		{"malformed discover --chip-modes",
			[]string{"discover", "--profile", "mlu270", "--chip-modes", "Whole,mlu-0=Sliced"},
			`--chip-modes: chip modes entry 2 "mlu-0=Sliced": mode "Sliced" is not one of Partitioned, Shared, Whole`},
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
		{"why without a target",
			[]string{"why"},
			"want one argument, pod/NAME or claim/NAME; got 0"},
		{"why of another kind",
			[]string{"why", "node/n", "--kubeconfig", "testdata/unreachable-kubeconfig.yaml"},
			`"node/n": kind "node" is not pod or claim`},
		{"why without a cluster",
			[]string{"why", "pod/p", "--kubeconfig", "testdata/unreachable-kubeconfig.yaml"},
			"cannot reach the cluster at https://127.0.0.1:1 (to get pod team-a/p): check --kubeconfig and --context"},
		{"why with -n",
			[]string{"why", "pod/p", "--kubeconfig", "testdata/unreachable-kubeconfig.yaml", "-n", "team-b"},
			"(to get pod team-b/p)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Input the CLI cannot sensibly read is a clear error naming the flag or
// the file, not a node without chips or a process that runs out of memory.
func TestTheCLIRefusesMissingRootsHugeFilesAndAbsurdCounts(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(huge, make([]byte, inputfile.MaxBytes+1), 0o644))
	absurd := filepath.Join(dir, "absurd.yaml")
	require.NoError(t, os.WriteFile(absurd, []byte("apiVersion: accel-dra.dev/v1alpha1\nkind: SimulatedCluster\nnodes:\n- name: n\n  profile: mlu370-x8\n  count: 1000000000\n"), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "discover --root that does not exist", args: []string{"discover", "--root", filepath.Join(dir, "nope")},
			want: "--root " + filepath.Join(dir, "nope") + ": stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{name: "discover --root that is a file", args: []string{"discover", "--root", huge}, want: "--root " + huge + ": not a directory"},
		{name: "a huge cluster file", args: []string{"simulate", "--cluster", huge, "-f", "../../deployments/helm/accel-dra/deviceclasses"},
			want: "reading cluster file " + huge + ": larger than 8 MiB, the limit of an input file: is it the right file?"},
		{name: "a huge claims file", args: []string{"simulate", "--cluster", "../../demo/cluster.yaml", "-f", huge},
			want: "reading input " + huge + ": larger than 8 MiB"},
		{name: "a huge profile file", args: []string{"discover", "--profile", huge},
			want: "reading hardware profile " + huge + ": larger than 8 MiB"},
		{name: "an absurd node count", args: []string{"simulate", "--cluster", absurd, "-f", "../../deployments/helm/accel-dra/deviceclasses"},
			want: "nodes[0].count: 1000000000 is more than the 10000 nodes a simulated cluster may have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.args...)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

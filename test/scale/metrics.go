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

package scale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Metrics are the samples of a Prometheus text exposition: metric name →
// samples, each its labels and value.
type Metrics map[string][]Sample

// Sample is one line of an exposition.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the text format the components serve on /metrics
// (comments skipped; timestamps, which they do not write, would be
// ignored).
func ParseMetrics(text []byte) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, rest := line, map[string]string{}, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("parsing metrics line %d %q: unterminated labels", n, line)
			}
			name, rest = line[:i], line[j+1:]
			if err := parseLabels(line[i+1:j], labels); err != nil {
				return nil, fmt.Errorf("parsing metrics line %d %q: %w", n, line, err)
			}
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("parsing metrics line %d %q: no value", n, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing metrics line %d %q: %w", n, line, err)
		}
		m[name] = append(m[name], Sample{Labels: labels, Value: v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return m, nil
}

// parseLabels reads `a="x",b="y"` (values with \" \\ \n escapes).
func parseLabels(s string, into map[string]string) error {
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimLeft(strings.TrimSpace(s), ",") {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return fmt.Errorf("bad label at %q", s)
		}
		key := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return fmt.Errorf("unterminated value of label %s", key)
		}
		into[key] = val.String()
		s = s[i+1:]
	}
	return nil
}

// Sum adds the samples of name whose labels match: for every key of
// match the sample's label has one of the listed values (a nil match
// takes every sample).
func (m Metrics) Sum(name string, match map[string][]string) float64 {
	var sum float64
next:
	for _, s := range m[name] {
		for k, vals := range match {
			ok := false
			for _, v := range vals {
				if s.Labels[k] == v {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		sum += s.Value
	}
	return sum
}

// ProcCPU is the user plus system CPU time process pid has used
// (/proc/<pid>/stat, fields utime and stime, in clock ticks of 1/100 s,
// the USER_HZ of Linux on every architecture Go supports).
func ProcCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields count after it.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("reading the CPU time of process %d: short /proc stat %q", pid, s)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// EvaluatedNodes averages the evaluatedNodes and feasibleNodes that
// kube-scheduler logs (at --v=2) for each pod of namespace ns it bound:
// the nodes it ran the filters on before it had enough feasible ones
// (percentageOfNodesToScore), and those feasible ones.
func EvaluatedNodes(log []byte, ns string) (evaluated, feasible float64, pods int) {
	prefix := []byte(`pod="` + ns + `/`)
	for _, line := range bytes.Split(log, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"Successfully bound pod to node"`)) || !bytes.Contains(line, prefix) {
			continue
		}
		e, eok := intField(line, "evaluatedNodes=")
		f, fok := intField(line, "feasibleNodes=")
		if eok && fok {
			evaluated, feasible, pods = evaluated+float64(e), feasible+float64(f), pods+1
		}
	}
	if pods > 0 {
		evaluated, feasible = evaluated/float64(pods), feasible/float64(pods)
	}
	return evaluated, feasible, pods
}

func intField(line []byte, key string) (int, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(key):]
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	v, err := strconv.Atoi(string(rest[:end]))
	return v, err == nil
}

// ProcStatusMiB reads a kB field of /proc/<pid>/status (VmRSS, RssAnon,
// RssFile, VmHWM) in MiB.
func ProcStatusMiB(pid int, field string) (float64, error) {
	return procFileMiB(pid, "status", field)
}

// ProcSmapsRollupMiB reads a kB field of /proc/<pid>/smaps_rollup (Rss,
// Pss, Pss_Anon, Pss_File, Anonymous) in MiB: PSS divides each page
// shared with other processes among them, so the pages of a binary two
// processes map count half for each.
func ProcSmapsRollupMiB(pid int, field string) (float64, error) {
	return procFileMiB(pid, "smaps_rollup", field)
}

func procFileMiB(pid int, file, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("reading the memory of process %d: %s: %w", pid, field, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("reading the memory of process %d: no %s in /proc/%d/%s", pid, field, pid, file)
}

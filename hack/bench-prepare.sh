#!/usr/bin/env bash
# Copyright The accel-dra Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs BenchmarkPrepare and BenchmarkAgentMemory (test/plugin) and prints,
# per case, the prepare's and its floor's p50 / p99 / p99.9 and their
# ratios, with the load average before, at each case's start and after,
# then the agent's memory against the minimal plugin's: the numbers
# docs/benchmarks.md reports. The prepare is the node agent binary's, as
# the kubelet sees it: the binary (built as the image builds it) in its own
# process, the fake API server in another, the floor's writes in a third.
# Needs root (fake device nodes), like make test.
#
#   hack/bench-prepare.sh                       # 1000 rounds per case
#   BENCHTIME=300x hack/bench-prepare.sh        # quicker, p99.9 meaningless
#   BENCH='Prepare$/huawei/16-chips' hack/bench-prepare.sh
#   GC='GOGC=100;GOGC=200;GOGC=100,GOMEMLIMIT=40MiB' hack/bench-prepare.sh
#   TRACE=/tmp/prepare-trace hack/bench-prepare.sh   # + where the time went
#
# GC runs every case once per Go runtime setting of the agent (";"
# between settings, "," between the variables of one) and prints the p99
# against the agent's RSS after the rounds, per setting, and the memory
# table once per setting (the minimal plugin keeps its defaults); any variable of
# the agent's environment works, its flags' too (ACCEL_DRA_DEVICE_METADATA
# =false). Rounds start every 100 ms, below the agent's API request rate
# (ACCEL_DRA_BENCH_ROUND_INTERVAL; test/plugin/kubelet_bench_test.go). TRACE=<dir> runs
# BenchmarkPrepareInProcess instead (driver, fake API and client in this
# process, which runtime/trace can split): each case writes a
# runtime/trace (<case>.trace, for go tool trace) and the report of its
# median and slowest prepares (<case>.txt), printed at the end. OUT
# (default a temporary file) keeps the raw go test output, for benchstat.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
if [ -n "${TRACE:-}" ]; then
	BENCH=${BENCH:-'PrepareInProcess$'}
else
	BENCH=${BENCH:-'Prepare$|AgentMemory$'}
fi
BENCHTIME=${BENCHTIME:-1000x}
COUNT=${COUNT:-1}
OUT=${OUT:-$(mktemp /tmp/bench-prepare.XXXXXX)}

echo "$(date -u +%FT%TZ) $(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
env ${TRACE:+ACCEL_DRA_PREPARE_TRACE="$TRACE"} ${GC:+ACCEL_DRA_BENCH_AGENT_GC="$GC"} "$GO" test -count="$COUNT" -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" \
	-benchmem -timeout 120m ./test/plugin/ >"$OUT" 2>&1 || { cat "$OUT"; exit 1; }
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw output: $OUT"
echo
awk '
function metrics(   i) { delete m; for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i }
function caseName(prefix,   n) { n = $1; sub(prefix, "", n); sub(/-[0-9]+$/, "", n); return n }
/^BenchmarkPrepare(InProcess)?\// {
	name = caseName("^BenchmarkPrepare(InProcess)?/"); metrics()
	row = sprintf("| %s | %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f |", name, m["load1"],
		m["prepare-p50-ms"], m["prepare-p99-ms"], m["prepare-p99.9-ms"],
		m["floor-p50-ms"], m["floor-p99-ms"], m["floor-p99.9-ms"],
		m["prepare/floor-p50"], m["prepare/floor-p99"], m["prepare/floor-p99.9"])
	row = row (("agent-RSS-MiB" in m) ? sprintf(" %.1f / %.1f |", m["agent-RSS-MiB"], m["agent-anon-MiB"]) : " — |")
	prep[++np] = row
}
/^BenchmarkAgentMemory\// {
	name = caseName("^BenchmarkAgentMemory/"); metrics()
	mem[++nm] = sprintf("| %s | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f / %.2f |", name,
		m["idle-RSS-MiB"], m["idle-anon-MiB"], m["idle-PSS-MiB"], m["claims-RSS-MiB"], m["claims-anon-MiB"], m["claims-PSS-MiB"],
		m["floor-idle-RSS-MiB"], m["floor-idle-anon-MiB"], m["floor-idle-PSS-MiB"], m["floor-claims-RSS-MiB"], m["floor-claims-anon-MiB"], m["floor-claims-PSS-MiB"],
		m["idle-anon/floor"], m["claims-anon/floor"])
}
END {
	if (np) {
		print "| case | load1 at start | prepare p50 / p99 / p99.9 ms | floor p50 / p99 / p99.9 ms | ratio p50 / p99 / p99.9 | agent RSS / anon MiB after |"
		print "|---|---|---|---|---|---|"
		for (i = 1; i <= np; i++) print prep[i]
	}
	if (nm) {
		if (np) print ""
		print "| vendor / chip mode, 16 chips | agent idle RSS / anon / PSS MiB | agent, 16 claims | minimal plugin idle | minimal plugin, 16 claims | anon / floor idle, 16 claims |"
		print "|---|---|---|---|---|---|"
		for (i = 1; i <= nm; i++) print mem[i]
	}
}' "$OUT"
if [ -n "${TRACE:-}" ]; then
	for f in "$TRACE"/*.txt; do
		echo
		cat "$f"
	done
fi
